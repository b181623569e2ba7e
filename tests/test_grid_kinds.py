"""One record per grid kind (issue 32, item 3): no module tests a grid's kind by its name, and what each
record says is what a grid of that kind is refused, generated and launched as.

The scan reads every Python module and template of the package: a comparison of ``per`` (``grid.per ==
"warp"``, ``per in ("tile", ...)``, ``k.grid_per == ...``) or a lookup keyed by it (``TABLE[grid.per]``)
outside ``declare/grids.py``'s one lookup of the record is the parallel table the record replaced.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from layoutgen import Grid, KernelError
from layoutgen.codegen.grids import BlockRuleModel
from layoutgen.declare.grid_kinds import GRID_KINDS, GridKind

PACKAGE = Path(__file__).resolve().parent.parent / "layoutgen"
#: The one module that turns a grid's `per` into its record (`Grid.kind`, and the checks of an unknown `per`).
LOOKUP_HOME = "declare/grids.py"

# `grid.per == "warp"`, `per != ...`, `per in (...)`, `per not in ...`, and the template's `k.grid_per == ...`
_COMPARED = re.compile(r"(?<!for )\b(?:per|grid_per)\s*(?:==|!=|\bnot\s+in\b|\bin\b)")
# `TABLE[grid.per]`, `TABLE.get(kernel.grid.per)`: a table keyed by kind names
_LOOKED_UP = re.compile(r"\[\s*[\w.]*\bper\s*\]|\.get\(\s*[\w.]*\bper\b")


def kind_tests(text: str, lookups_allowed: bool = False) -> list[tuple[int, str]]:
    """(line, text) of each test of a grid kind by its name in ``text``."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        code = line.split("#")[0] if not line.lstrip().startswith(("{#", "//")) else ""
        if _COMPARED.search(code) or (not lookups_allowed and _LOOKED_UP.search(code)):
            found.append((number, line.strip()))
    return found


def package_kind_tests(package: Path) -> list[str]:
    out = []
    for path in sorted([*package.rglob("*.py"), *package.rglob("*.j2")]):
        rel = path.relative_to(package).as_posix()
        for number, line in kind_tests(path.read_text(encoding="utf-8"), lookups_allowed=rel == LOOKUP_HOME):
            out.append(f"layoutgen/{rel}:{number}: {line}")
    return out


def test_no_module_tests_a_grid_kind_by_its_name() -> None:
    found = package_kind_tests(PACKAGE)
    assert found == [], "ask the grid's record (grid.kind, declare/grid_kinds.py) instead:\n" + "\n".join(found)


@pytest.mark.parametrize("spelling", [
    'if grid.per == "warp":', 'if kernel.grid.per != "vector" or x:', 'own = grid.capacity if grid.per in own else 0',
    'if grid.per not in ("element", "vector"):', "early = RETURNS_BEFORE_BODY.get(kernel.grid.per)",
    "helpers = [FILE_HELPERS[grid.per]]", '{% if k.grid_per == "tile" %}',
])
def test_the_scan_finds_each_spelling_the_record_replaced(spelling: str) -> None:
    assert kind_tests(f"x = 1\n    {spelling}\n") == [(2, spelling)]


def test_the_scan_leaves_what_names_no_kind() -> None:
    text = ('f"one thread per {grid.per} of x"\n"grid": {"per": grid.per}\n# grid.per == "warp" in a comment\n'
            "for per in PERS:\n    pass\n")
    assert kind_tests(text) == []


def test_every_record_names_skeletons_that_ship_and_a_constructor_that_makes_it() -> None:
    templates = PACKAGE / "templates"
    for per, kind in GRID_KINDS.items():
        assert kind.per == per
        assert (templates / kind.prologue).is_file(), kind.prologue
        assert kind.helper is None or (templates / kind.helper).is_file(), kind.helper
        assert set(kind.thread_names) <= set(kind.names), per
        assert kind.constructor.startswith("Grid.")
        constructor = getattr(Grid, kind.constructor.removeprefix("Grid."))
        made = constructor(blocks=4) if not kind.follows_param else constructor("x")
        assert made.kind is kind and made.names == kind.names


_KINDS = sorted(GRID_KINDS)


def _made(kind: GridKind, block: int, rows: int, blocks_per_sm: int | None) -> Grid:
    """A grid of ``kind`` from its constructor, with the arguments its record says it takes."""
    make = getattr(Grid, kind.constructor.removeprefix("Grid."))
    if not kind.follows_param:
        return make(blocks=[4], block=block)  # type: ignore[no-any-return]
    args: dict[str, object] = {"block": block}
    if kind.rows_argument is not None:
        args[kind.rows_argument] = rows
    if kind.resident:
        args["blocks_per_sm"] = blocks_per_sm
    return make("x", **args)  # type: ignore[no-any-return]


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(_KINDS), st.integers(1, 1024), st.integers(1, 64), st.none() | st.integers(1, 8),
       st.integers(2, 9), st.integers(1, 8))
def test_what_a_record_says_is_what_its_grid_is_refused_and_counted_as(per: str, block: int, rows: int,
                                                                        blocks_per_sm: int | None, capacity: int,
                                                                        other_bps: int) -> None:
    from layoutgen.codegen.grids import block_rule

    kind = GRID_KINDS[per]
    # LG216 exactly where the record says its warps work alone and the block ends in a part warp
    if kind.whole_warps and block % 32:
        with pytest.raises(KernelError) as refused:
            _made(kind, block, rows, blocks_per_sm)
        assert refused.value.code == "LG216"
        return
    grid = _made(kind, block, rows, blocks_per_sm)
    assert grid.kind is kind and grid.capacity == (rows if kind.owns_rows else 1)
    # `capacity` beyond 1 is refused exactly where the kind owns no rows; `blocks_per_sm` where it is not resident
    for extra in ({"capacity": capacity}, {"blocks_per_sm": other_bps}):
        fits = kind.owns_rows if "capacity" in extra else kind.resident
        try:
            Grid(grid.param, per, grid.block, **{"capacity": grid.capacity, "blocks": grid.blocks,
                                                 "blocks_per_sm": grid.blocks_per_sm, **extra})  # type: ignore[arg-type]
        except KernelError as error:
            assert not fits and error.code == "LG218", (per, extra, error)
        else:
            assert fits, (per, extra)

    class _Kernel:  # what block_rule reads of a binding
        pass

    class _Binding:
        kernel = _Kernel()

    _Binding.kernel.grid = grid  # type: ignore[attr-defined]
    rule = block_rule(_Binding(), {})  # type: ignore[arg-type]
    if kind.block_rule is None:
        assert rule is None
        return
    assert rule is not None and rule.kind == kind.block_rule
    if kind.follows_param:
        warps = block // 32 if kind.whole_warps else 1
        assert rule == BlockRuleModel(kind.block_rule, rows * warps,
                                      blocks_per_sm=(blocks_per_sm or 0) if kind.resident else 0)
