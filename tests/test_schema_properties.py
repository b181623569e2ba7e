"""Property tests: random layouts against numpy, random invalid layouts against LayoutError.

A layout is drawn as a tree of :class:`Node` (the columns each entry is meant
to have, and how it is declared: by width, by ``cols``, by both, or a group
sized by its children), declared in a random order that stays valid, then
built into ``Field``/``Group``/``Pad``/``Layout``. The intended columns are
the ground truth the schema is checked against.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field, fields as dataclass_fields
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from layoutgen.schema import (
    DTYPES,
    Dim,
    DType,
    Field,
    Group,
    Layout,
    LayoutError,
    Pad,
    dims,
)

from tests.helpers.strategies import NAMES, all_views, shaped_layouts

B, K, T = dims("B K T")
SYMBOLS = ("B", "K", "T", "H")  # "H" is given as a string
SETTINGS = settings(deadline=None, max_examples=200, suppress_health_check=[HealthCheck.too_slow])


# -- drawing valid layouts ------------------------------------------------------------


@dataclass
class Node:
    """One entry as intended: its columns, and how the declaration states them."""

    kind: str  # "field", "pad", "group", or "raw" (an object that is no entry)
    name: Any = None
    start: int = 0
    stop: int = 0
    mode: str = "width"  # "width", "cols", "both", or "auto" (a group sized by its children)
    children: list[Node] = field(default_factory=list)  # in declaration order
    override: dict[str, Any] = field(default_factory=dict)  # keyword arguments forced by a mutation
    raw: Any = None

    def walk(self, parent: str = "") -> Iterator[tuple[str, Node]]:
        path = f"{parent}.{self.name}" if parent else str(self.name)
        yield path, self
        for child in sorted(self.children, key=lambda c: c.start):
            if child.kind != "pad":
                yield from child.walk(path)


@dataclass
class Spec:
    """A layout as intended, and the keyword arguments a mutation forces."""

    name: str
    dims: list[Any]
    dtype: DType
    entries: list[Node]  # in declaration order
    width: int
    declare_width: bool
    as_tuple: bool
    override: dict[str, Any] = field(default_factory=dict)


@st.composite
def tiling(draw: st.DrawFn, lo: int, depth: int) -> list[Node]:
    """Entries that tile columns ``lo..`` exactly, in a declaration order that keeps them valid."""
    count = draw(st.integers(1, 4))
    names = draw(st.lists(NAMES, min_size=count, max_size=count, unique=True))
    cursor, nodes = lo, []
    for name in names:
        kind = draw(st.sampled_from(["field", "field", "pad", "group"] if depth < 2 else ["field", "field", "pad"]))
        if kind == "group":
            children = draw(tiling(cursor, depth + 1))
            stop = max(c.stop for c in children)
            mode = draw(st.sampled_from(["auto", "width", "cols", "both"]))
        else:
            children, stop = [], cursor + draw(st.integers(1, 6))
            mode = draw(st.sampled_from(["width", "cols", "both"]))
        nodes.append(Node(kind, name if kind != "pad" else None, cursor, stop, mode, children))
        cursor = stop
    return draw(declaration_order(nodes))


@st.composite
def declaration_order(draw: st.DrawFn, nodes: list[Node]) -> list[Node]:
    """A permutation of ``nodes`` in which every entry placed by width still follows its left neighbour.

    Entries without ``cols`` start where the entry declared before them ended, so
    each run of them stays behind the entry on its left; runs that begin with
    ``cols`` may go anywhere, the first run only if it is placed too.
    """
    chains: list[list[Node]] = []
    for node in nodes:
        if node.mode in ("cols", "both") or not chains:
            chains.append([node])
        else:
            chains[-1].append(node)
    fixed = chains[:1] if chains[0][0].mode in ("width", "auto") else []
    movable = draw(st.permutations(chains[len(fixed):]))
    return [node for chain in fixed + list(movable) for node in chain]


DIMS = st.lists(
    st.one_of(st.sampled_from([B, K, T, "H"]), st.integers(1, 3), st.builds(Dim.of, st.integers(1, 3))),
    max_size=3,
)


@st.composite
def specs(draw: st.DrawFn, fieldless: bool = True) -> Spec:
    dtype = draw(st.sampled_from(sorted(DTYPES.values(), key=lambda d: d.name)))
    shape = draw(DIMS)
    if fieldless and draw(st.sampled_from([False] * 7 + [True])):  # no fields: a width alone
        return Spec("L", shape, dtype, [], draw(st.integers(1, 24)), True, False)
    entries = draw(tiling(0, 0))
    width = max(e.stop for e in entries)
    return Spec(draw(NAMES), shape, dtype, entries, width, draw(st.booleans()), draw(st.booleans()))


# -- building them -----------------------------------------------------------------------


def build_entry(node: Node) -> Any:
    if node.kind == "raw":
        return node.raw
    kw: dict[str, Any] = {}
    if node.mode in ("width", "both"):
        kw["width"] = node.stop - node.start
    if node.mode in ("cols", "both"):
        kw["cols"] = (node.start, node.stop)
    kw.update(node.override)
    if node.kind == "field":
        return Field(node.name, **kw)
    if node.kind == "pad":
        return Pad(**kw)
    children = kw.pop("fields", [build_entry(c) for c in node.children])
    return Group(node.name, children, **kw)


def build(spec: Spec) -> Layout:
    entries = [build_entry(n) for n in spec.entries]
    kw: dict[str, Any] = {
        "name": spec.name,
        "dims": spec.dims,
        "dtype": spec.dtype,
        "fields": tuple(entries) if spec.as_tuple else entries,
        "width": spec.width if spec.declare_width else None,
    }
    kw.update(spec.override)
    return Layout(kw.pop("name"), kw.pop("dims"), kw.pop("dtype"), kw.pop("fields"), **kw)


def intended(spec: Spec) -> dict[str, Node]:
    """Every named entry by its dotted path, depth first in column order."""
    out: dict[str, Node] = {}
    for node in sorted(spec.entries, key=lambda n: n.start):
        if node.kind != "pad":
            out.update(node.walk())
    return out


# -- (1) valid layouts agree with numpy ---------------------------------------------------


def c_value(expr: str, bound: dict[str, int]) -> int:
    """Evaluate the C++ a generator would emit for a size (``(long long)K * 56LL``)."""
    python = re.sub(r"(\d+)LL\b", r"\1", expr.replace("(long long)", ""))
    return int(eval(python, {"__builtins__": {}}, dict(bound)))


def max_align(*byte_counts: int, cap: int = 256) -> int:
    """The largest power of two up to ``cap`` dividing every count."""
    p = cap
    while any(n % p for n in byte_counts):
        p //= 2
    return p


@SETTINGS
@given(spec=specs(), sizes=st.tuples(*[st.integers(1, 3)] * len(SYMBOLS)))
def test_valid_layouts_agree_with_numpy_strided_views(spec: Spec, sizes: tuple[int, ...]) -> None:
    layout = build(spec)
    bound = dict(zip(SYMBOLS, sizes))
    dtype = spec.dtype
    itemsize = dtype.size
    assert layout.width == spec.width
    assert layout.dtype is dtype

    # the fields are the intended ones, depth first in column order
    paths = intended(spec)
    assert [v.path for v in layout.fields()] == list(paths)

    lead = [d.size if d.size is not None else bound[str(d.name)] for d in layout.dims]
    shape = (*lead, layout.width)
    storage = np.dtype(dtype.numpy_name or dtype.storage)
    ids = np.arange(math.prod(shape)).reshape(shape)  # every element holds its own flat index
    arr = ids.astype(storage)
    base = arr.__array_interface__["data"][0]

    for view in [layout.view, *layout.fields()]:
        node = paths.get(view.path)
        start, stop = (node.start, node.stop) if node else (0, spec.width)
        assert (view.offset, view.width) == (start, stop - start)
        assert view.row_stride == layout.width
        # rows follow each other when the field is the whole row, or when there is only ever one row
        assert view.contiguous == (view.width == layout.width or all(d.size == 1 for d in layout.dims))

        # the schema's element strides and offset are numpy's byte strides and data pointer
        sub = view.of(arr)
        strides = [s.evaluate(bound) for s in view.strides]
        assert sub.shape == (*lead, stop - start)
        assert tuple(s * itemsize for s in strides) == sub.strides
        assert view.offset * itemsize == view.byte_offset == sub.__array_interface__["data"][0] - base
        assert [c_value(s.c_expr(), bound) for s in view.strides] == strides

        # ... and address exactly the intended columns of every row
        index = np.full(sub.shape, view.offset)
        for axis, stride in enumerate(strides):
            index = index + np.arange(sub.shape[axis]).reshape([-1] + [1] * (sub.ndim - axis - 1)) * stride
        np.testing.assert_array_equal(index, ids[..., start:stop])

        # alignment holds on every row, and is the largest that does
        rows = math.prod(lead)
        row_starts = [r * layout.row_bytes + view.byte_offset for r in range(rows)]
        assert all(s % view.align == 0 for s in row_starts)
        if layout.dims:
            assert view.align == max_align(view.byte_offset, layout.row_bytes)
        else:
            assert view.align == max_align(view.byte_offset)
        fits = [v for v in (16, 8, 4, 2, 1) if v >= itemsize and view.align % v == 0 and view.width * itemsize % v == 0]
        assert view.vector_bytes == max(fits)

    # the structured dtype puts every field at the same byte offset
    dt = layout.numpy_dtype()
    if dtype.numpy_name is None:
        assert dt is None
        return
    assert dt is not None and dt.itemsize == layout.row_bytes
    if not spec.entries:  # a width alone: the row is one subarray
        assert dt == np.dtype((storage, (layout.width,)))
        return
    records = arr.view(dt)
    for view in layout.fields():
        sub_dt, offset, record = dt, 0, records
        for part in view.path.split("."):
            sub_dt, at = sub_dt.fields[part][:2]
            offset += at
            record = record[part]
        assert offset == view.byte_offset
        assert sub_dt.itemsize == view.width * itemsize
        if paths[view.path].kind == "field":
            np.testing.assert_array_equal(record.reshape(*lead, -1), arr[..., view.offset : view.offset + view.width])


@SETTINGS
@given(spec=specs())
def test_valid_layouts_render_a_row_per_entry(spec: Spec) -> None:
    layout = build(spec)
    text = str(layout).splitlines()
    regions = list(layout.record.walk())
    assert text[0].startswith(f"{spec.name} [")
    assert len(text) == 2 + max(len(regions), 1)
    for line, (depth, region) in zip(text[2:], regions):
        label = region.name if region.kind != "pad" else "(padding)"
        assert line.startswith("  " + "  " * depth + label)
        assert f" {region.cols} " in line


# -- (2) invalid layouts raise LayoutError, with a site ---------------------------------------


def sibling_lists(spec: Spec) -> list[tuple[list[Node], int, int | None, Node | None]]:
    """Every list of entries with its columns ``lo..hi`` (``hi`` None where unbounded) and its owner."""
    out: list[tuple[list[Node], int, int | None, Node | None]] = [
        (spec.entries, 0, spec.width if spec.declare_width else None, None)
    ]

    def visit(nodes: list[Node]) -> None:
        for n in nodes:
            if n.kind == "group":
                out.append((n.children, n.start, n.stop if n.mode != "auto" else None, n))
                visit(n.children)

    visit(spec.entries)
    return out


def all_nodes(spec: Spec) -> list[Node]:
    out: list[Node] = []

    def visit(nodes: list[Node]) -> None:
        for n in nodes:
            out.append(n)
            visit(n.children)

    visit(spec.entries)
    return out


# Names that are bad anywhere, with their code; strings only where a dim takes them too.
BAD_NAMES: dict[Any, str] = {
    "a b": "LG105", "x;y": "LG105", "1a": "LG105", "": "LG105", "caf\u00e9": "LG105", "a-b": "LG105",
    "int": "LG106", "__global__": "LG106", "threadIdx": "LG106", "class": "LG106", "lg_x": "LG106",
    "_Cap": "LG106",
}
NON_STRING_NAMES: dict[Any, str] = {5: "LG105", None: "LG105", b"ab": "LG105", 1.5: "LG105"}
# Bad only for a field: they would shadow an attribute of layouts and views.
SHADOWING = ["width", "offset", "shape", "of", "layout", "dims", "doc", "region", "record", "whole", "output", "role"]
BAD_WIDTHS = ["4", 4.0, 2.5, True, False, [4], (4,)]
BAD_DTYPES = ["f128", "float32", "F32", None, np.float32, 3, "bfloat16"]
NON_ENTRIES = ["x", 4, 4.5, None, ("a", 4), {"name": "a", "width": 4}, Dim("B"), [Field("a", 1)], True]
NOT_LISTS = ["abc", None, 5, {"a": 1}, (x for x in ()), Field("a", 1)]


MUTATIONS = [
    "overlap", "out_of_range", "nonpositive", "duplicate", "bad_name", "bad_dtype", "wrong_width",
    "gap", "bad_width_type", "bad_cols", "non_entry", "not_a_list", "bad_dims", "bad_read_only", "bad_shape",
]
#: A field's `shape=` that no row can hold, and the code of each: odd entries, and dims in symbols a row of
#: numbers cannot count its columns in (a symbolic row must be all fields of one symbol: LG112).
BAD_SHAPES: list[tuple[Any, str]] = [
    ([], "LG110"), ("ab", "LG110"), (5, "LG110"), ([0], "LG103"), ([2, -1], "LG103"), ([2.0], "LG110"),
    ([True], "LG110"), ([None], "LG110"), ([2, "a b"], "LG105"), ([2, "int"], "LG106"), ([2, "D"], "LG112"),
    (["D"], "LG112"), (["D", 2], "LG112"), ([2, "D", "H"], "LG112"), ([1, Dim("D")], "LG112"),
]


def mutate(draw: st.DrawFn, spec: Spec, kind: str) -> tuple[str, set[str]]:
    """Break ``spec`` in one way (``kind`` where it applies); the mutation made and the codes it may raise."""
    nodes = [n for n in all_nodes(spec) if n.kind != "raw"]
    named = [n for n in nodes if n.kind != "pad"]
    if not spec.entries and kind not in ("bad_dtype", "bad_dims", "bad_read_only", "not_a_list"):
        kind = "bad_dtype"  # a layout of a width alone has no entries to break

    if kind == "overlap":  # a new entry on columns that some entry already has, declared last
        sib, lo, _, _ = draw(st.sampled_from(sibling_lists(spec)))
        hi = max(n.stop for n in sib)
        s = draw(st.integers(lo, hi - 1))
        e = draw(st.integers(s + 1, hi))
        sib.append(Node(draw(st.sampled_from(["field", "pad"])), "zz_overlap", s, e, "cols"))
        return kind, {"LG101"}
    if kind == "out_of_range":
        bounded = [x for x in sibling_lists(spec) if x[2] is not None]
        sib, lo, hi, _ = draw(st.sampled_from(sibling_lists(spec)))
        if bounded and draw(st.booleans()):  # past the end of a row or group of fixed extent
            sib, lo, hi, _ = draw(st.sampled_from(bounded))
            assert hi is not None
            s = draw(st.integers(lo, hi))
            sib.append(Node("field", "zz_range", s, hi + draw(st.integers(1, 4)), "cols"))
        else:  # before the start of the row (a negative column) or of the group
            s = draw(st.integers(lo - 4, lo - 1))
            sib.append(Node("field", "zz_range", s, draw(st.integers(s + 1, lo)), "cols"))
        return kind, {"LG102"}
    if kind == "nonpositive":
        what = draw(st.sampled_from(["entry", "cols", "group", "dim"]))
        if what == "dim":
            spec.dims = [*spec.dims, draw(st.sampled_from([0, -1, -8]))]
            return kind, {"LG103"}
        if what == "group" and any(n.kind == "group" for n in nodes):
            group = draw(st.sampled_from([n for n in nodes if n.kind == "group"]))
            group.children.clear()
            if draw(st.booleans()):
                group.mode = "auto"  # no columns at all
            else:
                group.mode, group.override = "width", {"width": draw(st.integers(-3, 0))}
            return kind, {"LG103"}
        node = draw(st.sampled_from([n for n in nodes if n.kind != "group"] or nodes))
        if what == "cols":
            s = draw(st.integers(0, 8))
            node.mode, node.override = "cols", {"cols": (s, s - draw(st.integers(0, 3)))}
        else:
            node.mode, node.override = "width", {"width": draw(st.integers(-5, 0))}
        return kind, {"LG103"}
    if kind == "duplicate":
        choices = [sib for sib, *_ in sibling_lists(spec) if sum(n.kind != "pad" for n in sib) >= 2]
        if not choices:
            return mutate(draw, spec, "bad_name")  # nothing to apply it to
        sib = draw(st.sampled_from(choices))
        a, b = draw(st.lists(st.sampled_from([n for n in sib if n.kind != "pad"]), min_size=2, max_size=2, unique_by=id))
        b.name = a.name
        return kind, {"LG104"}
    if kind == "bad_name":
        where = draw(st.sampled_from(["entry", "layout", "dim"] if named else ["layout", "dim"]))
        if where == "dim":  # a symbolic dim given by its name, in the dims list
            bad = draw(st.sampled_from(list(BAD_NAMES)))
            spec.dims = [*spec.dims, bad]
            return kind, {BAD_NAMES[bad]}
        choices = {**BAD_NAMES, **NON_STRING_NAMES}
        if where == "entry":
            choices.update({name: "LG106" for name in SHADOWING})
        bad = draw(st.sampled_from(list(choices)))
        if where == "entry":
            draw(st.sampled_from(named)).name = bad
        else:
            spec.name = bad
        return kind, {choices[bad]}
    if kind == "bad_dtype":
        spec.dtype = draw(st.sampled_from(BAD_DTYPES))
        return kind, {"LG107"}
    if kind == "wrong_width":
        groups = [n for n in nodes if n.kind == "group" and n.mode != "auto"]
        fields_both = [n for n in nodes if n.kind != "group" and n.mode == "both"]
        where = draw(st.sampled_from(["record"] + (["group"] if groups else []) + (["both"] if fields_both else [])))
        delta = draw(st.integers(-3, 3).filter(bool))
        if where == "record":
            spec.declare_width, spec.width = True, spec.width + delta
        elif where == "group":
            group = draw(st.sampled_from(groups))
            if group.mode == "cols":
                group.override = {"cols": (group.start, group.stop + delta)}
            else:
                group.override = {"width": group.stop - group.start + delta}
        else:
            node = draw(st.sampled_from(fields_both))
            node.override = {"width": node.stop - node.start + delta}
        return kind, {"LG102", "LG103", "LG108"}
    if kind == "gap":  # every sibling placed by cols, then one removed that is not the last
        choices = [sib for sib, *_ in sibling_lists(spec) if len(sib) >= 2]
        if not choices:
            return mutate(draw, spec, "bad_name")  # nothing to apply it to
        sib = draw(st.sampled_from(choices))
        for n in sib:
            n.mode = "cols"
        last = max(sib, key=lambda n: n.stop)
        sib.remove(draw(st.sampled_from([n for n in sib if n is not last])))
        return kind, {"LG109"}
    if kind == "bad_width_type":
        if draw(st.booleans()):
            spec.declare_width, spec.width = True, draw(st.sampled_from(BAD_WIDTHS))
            return kind, {"LG110"}
        node = draw(st.sampled_from(nodes))
        if node.kind != "group" and draw(st.booleans()):
            node.mode = "width"
            node.override = {"width": None}  # neither a width nor cols
        else:
            node.override = {"width": draw(st.sampled_from(BAD_WIDTHS))}
        return kind, {"LG110"}
    if kind == "bad_cols":
        node = draw(st.sampled_from(nodes))
        s, e = node.start, node.stop
        node.override = {"cols": draw(st.sampled_from([[s, e], (s, e, e), (s,), (), (float(s), e), (s, float(e)),
                                                       f"{s}:{e}", (s, None), (None, e), (True, e), range(s, e)]))}
        return kind, {"LG110"}
    if kind == "non_entry":
        sib, *_ = draw(st.sampled_from(sibling_lists(spec)))
        sib.insert(draw(st.integers(0, len(sib))), Node("raw", raw=draw(st.sampled_from(NON_ENTRIES))))
        return kind, {"LG110"}
    if kind == "not_a_list":
        groups = [n for n in nodes if n.kind == "group"]
        if groups and draw(st.booleans()):
            draw(st.sampled_from(groups)).override["fields"] = draw(st.sampled_from(NOT_LISTS))
        else:
            spec.override["fields"] = draw(st.sampled_from(NOT_LISTS))
        return kind, {"LG110"}
    if kind == "bad_dims":
        bad, code = draw(st.sampled_from([
            ([0], "LG103"), ([-2], "LG103"), ([2.0], "LG110"), ([None], "LG110"), ([True], "LG110"),
            ([(2,)], "LG110"), ([object()], "LG110"), (["a b"], "LG105"), (["1a"], "LG105"),
            (["int"], "LG106"), (["__shared__"], "LG106"),
            (B, "LG110"), ("B K", "LG110"), (None, "LG110"), (5, "LG110"),
        ]))
        spec.dims = [*spec.dims, *bad] if isinstance(bad, list) else bad
        return kind, {code}
    if kind == "bad_shape":  # a field (or one more, among the others) with a shape of its own that cannot be
        shape, code = draw(st.sampled_from(BAD_SHAPES))
        fields_ = [n for n in nodes if n.kind == "field"]
        # A row of fields all counted in one symbol is a valid symbolic row (`q: [2, D]` alone): a symbolic shape
        # is a mistake only beside columns counted in numbers, so it replaces a field only where others remain.
        symbolic = isinstance(shape, list) and any(isinstance(s, (str, Dim)) for s in shape)
        if fields_ and (not symbolic or len(nodes) > 1) and draw(st.booleans()):
            node = draw(st.sampled_from(fields_))
            node.mode, node.override = "width", {"shape": shape, "width": None}
        else:
            sib, *_ = draw(st.sampled_from(sibling_lists(spec)))
            sib.append(Node("field", "zz_shaped", 0, 0, "width", override={"shape": shape, "width": None}))
        # A field counted in a symbol makes every other run of columns LG112 first; alone it may be LG102/LG108
        # against a declared width.
        return kind, {code, "LG112"} if code == "LG112" or shape in ([2, "D"], ["D"]) else {code}
    assert kind == "bad_read_only"
    spec.override["read_only"] = draw(st.sampled_from([1, 0, "yes", None, 1.0]))
    return kind, {"LG110"}


@st.composite
def invalid_specs(draw: st.DrawFn, kind: str) -> tuple[Spec, str, set[str]]:
    spec = draw(specs(fieldless=kind in ("bad_dtype", "bad_dims", "bad_read_only", "not_a_list")))
    made, codes = mutate(draw, spec, kind)
    return spec, made, codes


@pytest.mark.parametrize("kind", MUTATIONS)
@settings(deadline=None, max_examples=50, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_invalid_layouts_raise_layout_error_with_a_site(kind: str, data: st.DataObject) -> None:
    spec, made, codes = data.draw(invalid_specs(kind))
    event(made)
    with pytest.raises(LayoutError) as info:  # any other exception fails the test
        build(spec)
    err = info.value
    assert err.code.startswith("LG1")
    assert err.code in codes, f"{made}: expected {sorted(codes)}, got {err}"
    assert err.site is not None, f"{made}: {err}"
    assert err.site.path == __file__  # every declaration of these layouts is made in this file
    assert str(err).startswith(f"{err.site}: error[{err.code}]: ")


# -- sub-array fields and named ranges against numpy -----------------------------------
#
# A row of flat and sub-array fields (static shapes), on leading dims of which
# one may be a named axis split into ranges: every view (each field, each
# range, each range of each field) must address exactly the elements numpy's
# strided view of the same field does, at the offset and strides the view
# reports (those the generated accessors use).


def _evaluate(size: Any, bound: dict[str, int]) -> int:
    return int(size.evaluate(bound))


@SETTINGS
@given(drawn=shaped_layouts(), data=st.data())
def test_sub_array_and_range_views_address_what_numpy_addresses(drawn: tuple[Layout, dict[str, int]],
                                                                 data: st.DataObject) -> None:
    layout, bound = drawn
    shape = tuple(d.size if d.size is not None else bound[str(d.name)] for d in layout.dims) + (layout.width,)
    array = np.arange(math.prod(shape), dtype=np.float32).reshape(shape)
    for view in all_views(layout):
        got = view.of(array)
        assert np.shares_memory(got, array) or got.size == 0
        want_shape = tuple(d.size if d.size is not None else bound[str(d.name)] for d in view.shape)
        assert got.shape == want_shape, view.name
        strides = tuple(_evaluate(s, bound) for s in view.strides)
        assert tuple(s // 4 for s in got.strides) == tuple(
            st_ if n > 1 else got.strides[i] // 4 for i, (st_, n) in enumerate(zip(strides, got.shape))
        ), view.name
        offset = _evaluate(view.base_offset, bound)
        assert (got.ctypes.data - array.ctypes.data) // 4 == offset, view.name
        index = tuple(data.draw(st.integers(0, n - 1)) for n in got.shape)
        flat = offset + sum(i * s for i, s in zip(index, strides))
        assert got[index] == flat, view.name  # the element numbered by the view's own arithmetic
        box = view.box
        assert len(box) == len(layout.shape)
        mask = np.zeros(shape, dtype=bool)
        mask[tuple(slice(None) if b is None else slice(*b) for b in box)] = True
        covered = np.zeros(math.prod(shape), dtype=bool)
        covered[got.ravel().astype(np.int64)] = True
        assert np.array_equal(mask.ravel(), covered), f"{view.name}: box {box}"


@SETTINGS
@given(counts=st.lists(st.integers(1, 6), min_size=1, max_size=4), d=st.integers(1, 9), b=st.integers(1, 3))
def test_symbolic_sub_array_fields_against_numpy(counts: list[int], d: int, b: int) -> None:
    names = [f"f{i}" for i in range(len(counts))]
    layout = Layout("Sym", [B], "f32", [Field(n, shape=[c, "D"]) for n, c in zip(names, counts)])
    assert str(layout.shape[-1]) == (f"D*{sum(counts)}" if sum(counts) != 1 else "D")
    array = np.arange(b * sum(counts) * d, dtype=np.float32).reshape(b, sum(counts) * d)
    bound = {"B": b, "D": d}
    start = 0
    for name, c in zip(names, counts):
        view = layout[name]
        got = view.of(array)
        assert got.shape == (b, c, d)
        assert np.array_equal(got, array[:, start * d : (start + c) * d].reshape(b, c, d))
        assert _evaluate(view.base_offset, bound) == start * d
        assert [_evaluate(s, bound) for s in view.strides] == [sum(counts) * d, d, 1]
        assert view.box == (None, (start, start + c))
        start += c


@settings(deadline=None, max_examples=100)
@given(st.data())
def test_inexpressible_symbolic_rows_raise_layout_error_with_a_site(data: st.DataObject) -> None:
    good = Field("q", shape=[data.draw(st.integers(1, 4)), "D"])
    bad = data.draw(st.sampled_from([
        lambda: Field("x", data.draw(st.integers(1, 4))),
        lambda: Pad(data.draw(st.integers(1, 4))),
        lambda: Field("x", shape=[2, "H"]),
        lambda: Field("x", shape=["H", "D"]),
        lambda: Field("x", shape=[3, "D"], cols=(0, 3)),
    ]))()
    entries = data.draw(st.permutations([good, bad]))
    with pytest.raises(LayoutError) as info:
        Layout("Sym", [B], "f32", entries)
    assert info.value.code == "LG112" and info.value.site is not None
    assert info.value.site.path == __file__
