"""Kernels from hand-written CUDA: a ``.cu`` file and the ``__device__`` function it defines, instead of a body.

``SourceKernel("vsn_fwd", "vsn_fwd.cu", [In("x", [B, K, F]), ..., Scalar("lr", f32)], entry="vsn_forward")``
declares a kernel whose whole code is the user's: ``vsn_fwd.cu`` includes the spec's views header and defines
``__device__ void vsn_forward(lg::views::<spec>::Window_snap_view<const float, 4, lg::Packing::strided> x, ...)``,
one parameter per declared parameter, in declaration order (views for arrays, C values for scalars).

Why a ``__device__`` entry and not a ``__global__`` one: layoutgen generates the ``extern "C" __global__``
kernel itself, exactly as for a template (its launch arguments are pointers and `long long` dims, the views
are built from them in the kernel, the grid's prologue runs), then calls the entry with the views. So the
launcher, program runners, CUDA graphs, the debug build and torch operators are the ones every kernel has,
and nothing packs a view struct's bytes on the host, whose members (the scale, the dims, the debug build's
own) are the compiler's and layoutgen's to lay out. A ``__global__`` cannot be called from a kernel, and one
launched directly would tie the launcher to those bytes. The generated kernel also checks, at compile time,
that the entry takes exactly the bound view and scalar types (LG225, LG226, ``layoutgen check --compile``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from ..schema.names import name_problem
from .errors import kernel_error
from .grids import Grid
from .kernels import Kernel, Param, Scalar


@dataclass(frozen=True, eq=False, init=False, repr=False)
class SourceKernel(Kernel):
    """A kernel whose code is a hand-written CUDA file: ``template`` is that file, ``entry`` its function.

    The file is relative to the declaring file (or to ``source_root``); it is copied into the generated
    kernel file as it is (no Jinja), after the spec's views header, with ``#line`` directives so that
    compile errors name its own lines. The entry is a ``__device__`` function, not a template and not
    overloaded, taking one parameter per declared parameter in declaration order. ``shared=`` is not
    offered: a hand-written kernel declares its own ``__shared__`` arrays.
    """

    entry: str

    def __init__(self, name: str, source: str, params: Sequence[Param | Scalar], *, entry: str,
                 grid: Grid | None = None, doc: str = "", source_root: str | os.PathLike[str] | None = None) -> None:
        super().__init__(name, source, params, grid=grid, doc=doc, template_root=source_root)
        problem = name_problem(entry)
        if problem:
            raise kernel_error("LG208", f"the entry of kernel `{name}` {problem[1]}", self.site,
                               hint="name the `__device__` function of the source file that takes the views")
        # The generated kernel names the views, scalars, symbols and the grid's indices in the scope it calls
        # the entry from: an entry of one of those names would be hidden there.
        taken = {*(p.name for p in self.signature), *(str(d.name) for p in self.params for d in p.shape),
                 *self.grid.names}
        if entry in taken:
            raise kernel_error("LG208", f"the entry of kernel `{name}` must not be named like one of its parameters, "
                               f"shape symbols or the grid's names ({', '.join(sorted(taken))}), got `{entry}`",
                               self.site, hint="rename the `__device__` function")
        object.__setattr__(self, "entry", entry)

    def __repr__(self) -> str:
        return f"<SourceKernel {self.name}>"

    @property
    def source_path(self) -> os.PathLike[str]:
        """The hand-written file, resolved like a template path."""
        return self.template_path
