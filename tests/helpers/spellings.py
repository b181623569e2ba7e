"""The spelling corpus (tests/specs/spellings/corpus.py) written out as a project: each snippet in three forms.

:func:`write_project` writes, under a folder of the test's, a ``pyproject.toml`` and two spec modules,
``bad/spec.py`` (each snippet's bad kernel in each form it can be written in) and ``good/spec.py`` (their correct
twins), with one file per kernel beside each:

- ``template``: a kernel template, ``<name>_template.cu.j2``: the snippet's scope in the preamble block, its body
  as the kernel's body;
- ``entry``: a hand-written ``SourceKernel`` file, ``<name>_entry.cu``: the scope at file scope, the body in the
  entry ``spelled``, which takes the views and makes the names the grid would (``row``, ``lane``, ...) itself;
- ``helper``: a kernel template, ``<name>_helper.cu.j2``, whose body calls the ``__device__`` helper ``spelled``
  of its preamble, which holds the snippet's body (the views, tile and the grid's names passed to it).

Each kernel is named ``<spelling>_<form>``; :class:`Written` says where its bad access landed.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from tests.specs.spellings.corpus import SPELLINGS, Spelling

FORMS = ("template", "entry", "helper")
#: Where each kernel's `x` is bound, by grid: a padded field for the warps' lane loop.
X_VIEW = {"rows": "Window.snap", "warps": "Padded.snap", "tiles": "Window.snap"}
#: The names each grid gives the body, as a helper's parameters.
GRID_ARGS = {"rows": "long long row, long long K", "warps": "long long row, int lane, int warp_rows",
             "tiles": "long long tile_row, int tile_rows, int tile_capacity"}
#: What a hand-written entry computes for itself of what the grid gives a template's body: the same values, and the
#: same early return (a tile's threads all run the body: barriers are safe); tiles of 32 rows, as GRIDS declares.
ENTRY_PROLOGUE = {
    "rows": ["const long long row = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;",
             "if (row >= x.rows()) return;"],
    "warps": ["const int lane = static_cast<int>(threadIdx.x % 32);",
              "const long long row = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;",
              "const int warp_rows = 1;",
              "if (row >= x.rows()) return;"],
    "tiles": ["const long long tile_row = static_cast<long long>(blockIdx.x) * 32;",
              "constexpr int tile_capacity = 32;",
              "const int tile_rows = x.rows() - tile_row < tile_capacity ? static_cast<int>(x.rows() - tile_row) "
              ": tile_capacity;"],
}

SPEC_HEAD = '''"""The spelling corpus's {kind} kernels (written by tests/helpers/spellings.py)."""

from layoutgen import Field, Grid, In, Kernel, Layout, Out, Pad, SourceKernel, Spec, Tile, dims, f32

B, K, F, C = dims("B K F C")

Window = Layout("Window", [B, K], f32, [Field("snap", 96), Field("ctx", 40)], doc="96 features, 40 of context")
Padded = Layout("Padded", [B, K], f32, [Field("snap", 96), Pad(40)], doc="96 features, 40 columns of padding")
Packed = Layout("Packed", [B, K], f32, width=96, doc="the features, packed")
Narrow = Layout("Narrow", [B, K], f32, width=40, doc="a narrower field")

GRIDS = {{"rows": Grid.rows("x", block=128), "warps": Grid.warps("x", block=128),
         "tiles": Grid.tiles("x", rows=32, block=128)}}


def params(vector16, narrow):
    return [In("x", [B, K, F], vector=16 if vector16 else None), *([In("n", [B, K, C])] if narrow else []),
            Out("y", [B, K, F])]


kernels = []
'''


@dataclass(frozen=True)
class Written:
    """One kernel of the corpus as written: its name, spelling and form, its file, and its bad access's line."""

    kernel: str
    spelling: Spelling
    form: str
    path: str  # relative to the project's root
    line: int  # of the bad access in that file (the bad kernel's)
    binding: int  # the line of the kernel's binding in its spec module
    gpu_line: int = 0  # where the GPU's debug build names it: Spelling.taken in that file


def kernels() -> list[tuple[Spelling, str]]:
    """Every (spelling, form) the corpus writes, in order."""
    return [(s, form) for s in SPELLINGS for form in FORMS if form not in s.skip]


def _indent(text: str, by: int) -> list[str]:
    return [" " * by + line if line else line for line in text.splitlines()]


def _template(s: Spelling, scope: str, body: str) -> tuple[str, int]:
    """A kernel template: the scope in the preamble, then the body; where line 1 of the body lands."""
    alias = ["    using X = decltype(x);  // the view's type"] if "X::" in scope + body else []
    lines = ["{% block preamble %}", *scope.splitlines(), "{% endblock %}", *alias]
    return "\n".join([*lines, *_indent(body, 4)]) + "\n", len(lines) + 1


def _view_types(s: Spelling, spec: str) -> list[str]:
    """The aliases of the views' types a hand-written function names (`X`, `Y`, and `N` where bound)."""
    views = f"lg::views::{spec}"
    xview = X_VIEW[s.grid].replace(".", "_") + "_view"
    return [f"using X = {views}::{xview}<const float, {16 if s.vector16 or s.tile else 4}, "
            "lg::Packing::strided>;",
            f"using Y = {views}::Packed_view<float, 4, lg::Packing::strided>;",
            *([f"using N = {views}::Narrow_view<const float, 4, lg::Packing::strided>;"] if s.narrow else [])]


def _helper(s: Spelling, spec: str, scope: str, body: str) -> tuple[str, int]:
    """A kernel template whose body calls `spelled`, the preamble's helper holding the snippet's body: it takes the
    views by their types (and the shared tile, whose type layoutgen chooses, as a template's)."""
    args = ["X x", "Y y", *(["N n"] if s.narrow else []), *(["const XS& xs"] if s.tile else [])]
    names = [a.split()[-1] for a in args] + [a.split()[-1] for a in GRID_ARGS[s.grid].split(", ")]
    lines = ["{% block preamble %}", *scope.splitlines(), *_view_types(s, spec),
             *(["template <typename XS>"] if s.tile else []),
             f"__device__ void spelled({', '.join(args)}, {GRID_ARGS[s.grid]}) {{",
             "    constexpr int F = X::width;"]
    first = len(lines) + 1
    lines += [*_indent(body, 4), "}", "{% endblock %}", f"    spelled({', '.join(names)});"]
    return "\n".join(lines) + "\n", first


def _entry(s: Spelling, spec: str, scope: str, body: str) -> tuple[str, int]:
    """A hand-written entry `spelled(X x, [N n,] Y y)` of a SourceKernel (the views in the parameters' order),
    making the grid's names itself."""
    lines = [f"// Spelling `{s.name}` as a hand-written entry (tests/helpers/spellings.py).", f'#include "{spec}.cuh"',
             *scope.splitlines(), *_view_types(s, spec),
             f"__device__ void spelled(X x, {'N n, ' if s.narrow else ''}Y y) {{",
             *_indent("\n".join(ENTRY_PROLOGUE[s.grid]), 4),
             "    constexpr int F = X::width;"]
    first = len(lines) + 1
    return "\n".join([*lines, *_indent(body, 4), "}"]) + "\n", first


def _written(s: Spelling, form: str, spec: str, good: bool) -> tuple[str, str, int, int]:
    """(file name, text, the bad access's line, the GPU's line for it) of spelling ``s`` in ``form``."""
    scope, body = (s.good_scope, s.good) if good else (s.scope, s.body)
    name = f"{s.name}_{form}"
    if form == "entry":
        text, first = _entry(s, spec, scope, body)
        file = f"{name}.cu"
    else:
        text, first = _template(s, scope, body) if form == "template" else _helper(s, spec, scope, body)
        file = f"{name}.cu.j2"
    return file, text, _in_file(s, form, first, s.line), _in_file(s, form, first, s.taken)


def _in_file(s: Spelling, form: str, first: int, line: int) -> int:
    """Line ``line`` of ``s`` (counted over its scope, then its body) in its file of ``form``, whose body starts at
    line ``first``: the scope's lines follow a first line (the preamble block's, or the entry's comment and include)."""
    scoped = len(s.scope.splitlines())
    scope_first = 3 if form == "entry" else 2
    return scope_first + line - 1 if line <= scoped else first + line - scoped - 1


def write_project(root: Path) -> dict[str, list[Written]]:
    """The corpus's bad and good kernels written under ``root`` (a project of two specs); each kernel, by kind."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text('[tool.layoutgen]\nspecs = ["bad/spec.py", "good/spec.py"]\nout = "generated"\n',
                                         encoding="utf-8")
    out: dict[str, list[Written]] = {}
    for kind in ("bad", "good"):
        folder = root / kind
        folder.mkdir(exist_ok=True)
        spec = f"spellings_{kind}"
        lines = [SPEC_HEAD.format(kind=kind)]
        out[kind] = []
        for s, form in kernels():
            file, text, line, gpu_line = _written(s, form, spec, kind == "good")
            (folder / file).write_text(text, encoding="utf-8")
            name = f"{s.name}_{form}"
            shared = ', shared=[Tile("xs", "x")]' if s.tile else ""
            declared = (f'SourceKernel("{name}", "{file}", params({s.vector16}, {s.narrow}), entry="spelled", '
                        f'grid=GRIDS["{s.grid}"])' if form == "entry" else
                        f'Kernel("{name}", "{file}", params({s.vector16}, {s.narrow}), grid=GRIDS["{s.grid}"]{shared})')
            narrow = ", n=Narrow" if s.narrow else ""
            lines.append(f"kernels.append({declared}.bind(x={X_VIEW[s.grid]}{narrow}, y=Packed))")
            out[kind].append(Written(name, s, form, f"{kind}/{file}", line, 0, gpu_line))
        lines.append(f'\nspec = Spec("{spec}", kernels=kernels)\n')
        text = "\n".join(lines)
        (folder / "spec.py").write_text(text, encoding="utf-8")
        bound = {written.split('"')[1]: n for n, written in enumerate(text.splitlines(), start=1)
                 if written.startswith("kernels.append(")}
        out[kind] = [replace(w, binding=bound[w.kernel]) for w in out[kind]]
    return out


# -- what each correct twin computes, from Window.snap as float64 [B, K, 96] -----------------------------------

def _tiles(snap: np.ndarray[Any, Any], rows: int = 32) -> list[np.ndarray[Any, Any]]:
    flat = snap.reshape(-1, snap.shape[-1])
    return [flat[i:i + rows] for i in range(0, len(flat), rows)]


def _tile_sums(snap: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    return np.concatenate([np.broadcast_to(t.sum(axis=0), t.shape) for t in _tiles(snap)]).reshape(snap.shape)


def _tile_gram(snap: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    out = []
    for t in _tiles(snap):
        g = np.zeros_like(t)
        g[:, :len(t)] = t @ t.T
        out.append(g)
    return np.concatenate(out).reshape(snap.shape)


REFERENCES = {
    "copy": lambda snap: snap,
    "center": lambda snap: snap - snap.sum(axis=-1, keepdims=True) / snap.shape[-1],
    "tile_sums": _tile_sums,
    "tile_gram": _tile_gram,
}
