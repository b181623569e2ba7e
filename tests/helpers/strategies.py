"""Hypothesis strategies of layouts, shared by the schema's property tests and those of the code made from it."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from layoutgen import Axis
from layoutgen.schema import Dim, Field, Layout, Pad, View
from layoutgen.schema.names import name_problem
from layoutgen.schema.reserved import reserved_names

#: Names a field may not take: the attributes of layouts, views and a program's buffers (`window.whole`).
ATTRIBUTES = frozenset(reserved_names())


def valid_name(name: str) -> bool:
    return name_problem(name) is None and name not in ATTRIBUTES


NAMES = st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,5}", fullmatch=True).filter(valid_name)


@st.composite
def shaped_layouts(draw: st.DrawFn) -> tuple[Layout, dict[str, int]]:
    """A row of flat and sub-array fields (static shapes) and pads, on leading dims of which one may be a named
    axis split into ranges; with the sizes its symbols are bound to."""
    names = iter(draw(st.lists(NAMES, min_size=10, max_size=10, unique=True)))
    entries: list[Any] = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flat", "shaped", "pad"]))
        if kind == "flat":
            entries.append(Field(next(names), draw(st.integers(1, 5))))
        elif kind == "shaped":
            entries.append(Field(next(names), shape=draw(st.lists(st.integers(1, 4), min_size=1, max_size=3))))
        else:
            entries.append(Pad(draw(st.integers(1, 3))))
    if all(isinstance(e, Pad) for e in entries):
        entries.append(Field(next(names), shape=[2, 3]))
    leading: list[Any] = []
    bound: dict[str, int] = {}
    for symbol in draw(st.lists(st.sampled_from(["B", "K", 1, 2, 3]), min_size=0, max_size=3)):
        if isinstance(symbol, str):
            bound.setdefault(symbol, draw(st.integers(1, 3)))
        leading.append(Dim(symbol) if isinstance(symbol, str) else symbol)
    if draw(st.booleans()):  # a named axis, after which only static dims follow
        ranges = [Field(next(names), draw(st.integers(1, 3))) for _ in range(draw(st.integers(1, 3)))]
        at = draw(st.integers(0, len(leading)))
        tail = [d if not isinstance(d, Dim) else draw(st.integers(1, 3)) for d in leading[at:]]
        leading = [*leading[:at], Axis(ranges), *tail]
        bound = {s: n for s, n in bound.items() if any(isinstance(d, Dim) and d.name == s for d in leading)}
    return Layout("Shaped", leading, "f32", entries), bound


def all_views(layout: Layout) -> list[View]:
    """Every view of ``layout``: each field, each range of its named axis, each range of each field."""
    views = layout.fields()
    if layout.axis_ranges is not None:
        views += [v[r.name] for v in layout.view.fields() if v.axis_range is None for r in layout.axis_ranges.children
                  if r.kind != "pad"]
    return views
