"""What a generated module tells the runtime about each kernel: plain, frozen data.

A generated module builds one :class:`KernelSpec` per kernel binding, with a
:class:`ParamSpec` (and its :class:`LayoutSpec`) per array parameter and a
:class:`ScalarSpec` per parameter passed by value; the launcher
(:mod:`.launch`), the checks (:mod:`.validate`), program runners and the
debug build read them. Nothing here touches CuPy or a device.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..schema.dims import shape_text
from ..schema.dtypes import DTYPES
from ..schema.scalars import SCALAR_DTYPES, scalar_type_text
from .arrays import packed_strides

#: layoutgen dtype -> the dtype names (numpy's, as :func:`.arrays.array_info` reads them) of the arrays
#: it accepts. bf16: "bfloat16" is torch.bfloat16, ml_dtypes' bfloat16 (CuPy, NumPy) and a ``<V2``
#: typestr (JAX); "uint16" is bf16 bits held as raw 16-bit words (``<u2``), which is also what
#: ``Layout.empty`` allocates, CuPy having no bf16 type. Every other 2-byte type (f16, i16) is refused.
ACCEPTED_DTYPES: dict[str, frozenset[str]] = {
    **{d.name: frozenset({d.numpy_name or d.storage}) for d in DTYPES.values()},
    "bf16": frozenset({"bfloat16", "uint16"}),
}


@dataclass(frozen=True)
class LayoutSpec:
    """A layout as the runtime checks it: leading dims (names or sizes), width, dtype."""

    name: str
    dims: tuple[str | int, ...]
    width: int
    dtype: str  # layoutgen's name: "f32", "bf16"
    itemsize: int
    unit: str | None = None  # the symbol one column counts (rows of `q: [32, D]` fields: "D"); None: 1

    def __post_init__(self) -> None:
        if self.dtype not in ACCEPTED_DTYPES:
            raise ValueError(f"`dtype` must be one of {', '.join(ACCEPTED_DTYPES)}, got {self.dtype!r}")

    @property
    def shape_text(self) -> str:
        width = self.width if self.unit is None else f"{self.unit}*{self.width}" if self.width > 1 else self.unit
        return shape_text((*self.dims, width))

    @property
    def symbols(self) -> tuple[str, ...]:
        """The symbols an array of this layout binds: its symbolic dims, then the row's unit."""
        named = tuple(d for d in self.dims if isinstance(d, str))
        return named if self.unit is None else (*named, self.unit)

    def shape_of(self, bound: dict[str, int]) -> tuple[int, ...]:
        """The shape in elements of an array of this layout, given the sizes of its symbols."""
        width = self.width * (1 if self.unit is None else bound[self.unit])
        return (*(d if isinstance(d, int) else bound[d] for d in self.dims), width)

    def bind_width(self, last: int, bound: dict[str, int]) -> int:
        """The row width in elements; binds ``unit`` from the last axis (``last``) unless bound already."""
        if self.unit is None:
            return self.width
        return self.width * bound.setdefault(self.unit, max(last // self.width, 1))

    @property
    def numpy(self) -> str:
        """The numpy dtype new arrays of this layout are allocated with (bf16: "uint16" words)."""
        d = DTYPES[self.dtype]
        return d.numpy_name or d.storage

    def strides(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """The packed element strides of an array of this layout with ``shape``."""
        return packed_strides(shape)


@dataclass(frozen=True)
class ParamSpec:
    """One kernel parameter: its name, access, layout, the view it reads and the alignment it needs."""

    name: str
    access: str  # "in" / "out" / "inout"
    layout: LayoutSpec
    view: str  # "Window.snap"
    align: int  # bytes the base pointer must be aligned to
    # Where the view lies in its layout's array: the field's columns (in the layout's unit) and the (axis,
    # start, stop) of a named range it covers. Two parameters given one array may share it where these are
    # disjoint (the aliasing check, LG614); debug builds scan the written ones. cols=None: not given (modules
    # whose template emitted them for debug builds only); rows=None: every row.
    cols: tuple[int, int] | None = None
    rows: tuple[int, int, int] | None = None

    @property
    def writes(self) -> bool:
        return self.access != "in"


@dataclass(frozen=True)
class ScalarSpec:
    """A parameter passed by value: its name, dtype ("f32", "u64", "bool") and whether NaN and Inf are refused."""

    name: str
    dtype: str
    finite: bool = False

    def __post_init__(self) -> None:
        if self.dtype not in SCALAR_DTYPES:
            raise ValueError(f"`dtype` must be one of {', '.join(SCALAR_DTYPES)}, got {self.dtype!r}")

    @property
    def described(self) -> str:
        """``scalar f32, finite``: how messages name the declaration."""
        return scalar_type_text(SCALAR_DTYPES[self.dtype], self.finite)


#: Where each array of a kernel's dynamic shared memory starts: a multiple of this many bytes (the generated
#: prologue carves the buffer by the same rule: ``lg::shared_start``).
SHARED_ALIGN = 16


@dataclass(frozen=True)
class SharedArray:
    """An array of a kernel's dynamic shared memory: its name, its element size and its dims (sizes, or the
    names of layout symbols bound at launch)."""

    name: str
    itemsize: int
    dims: tuple[str | int, ...]

    def nbytes(self, bound: dict[str, int]) -> int:
        size = self.itemsize
        for d in self.dims:
            size *= d if isinstance(d, int) else bound[d]
        return size


def shared_offsets(arrays: tuple[SharedArray, ...], bound: dict[str, int]) -> tuple[tuple[int, ...], int]:
    """Where each array starts in the buffer (each at a 16-byte boundary, in order) and the buffer's bytes."""
    starts = []
    end = 0
    for a in arrays:
        start = -(-end // SHARED_ALIGN) * SHARED_ALIGN
        starts.append(start)
        end = start + a.nbytes(bound)
    return tuple(starts), -(-end // SHARED_ALIGN) * SHARED_ALIGN


@dataclass(frozen=True)
class BlockRule:
    """How a cooperative grid counts its blocks (a grid of threads has none: rows times ``per_row`` threads).

    ``"rows"``: a block per ``per_block`` rows of the grid's parameter (Grid.tiles: a tile; Grid.warps:
    its warps' rows). ``"persistent"``: a block per tile of ``per_block`` rows, at most as many as the
    device keeps resident (``blocks_per_sm`` a multiprocessor, or 0: the compiled kernel's occupancy).
    ``"general"``: the product of ``dims``, divided by ``per_block`` and rounded up.
    """

    kind: str
    per_block: int
    dims: tuple[str | int, ...] = ()
    blocks_per_sm: int = 0

    def __post_init__(self) -> None:
        if self.kind not in ("rows", "persistent", "general") or self.per_block < 1:
            raise ValueError(f"a BlockRule must be rows, persistent or general of a positive `per_block`, got {self!r}")

    def blocks(self, rows: int, bound: dict[str, int]) -> int:
        """The blocks for ``rows`` rows of the grid's parameter and the bound symbols (before any device cap)."""
        count = rows
        if self.kind == "general":
            count = 1
            for d in self.dims:
                count *= d if isinstance(d, int) else bound[d]
        return -(-count // self.per_block)


@dataclass(frozen=True)
class RawArg:
    """Where one parameter of an existing kernel's ``__global__`` gets its launch value (in its order).

    ``"pointer"``: the ``index``-th array; ``"scalar"``: the ``index``-th scalar; ``"value"``: an integer the
    launcher fills, ``coef`` times the sizes of ``symbols`` (layout symbols), which a C integer of ``bits``
    bits (``signed`` or not) must hold; ``label`` names it in messages (``int x_stride = RowStride("x")``).
    """

    kind: str
    index: int = 0
    coef: int = 1
    symbols: tuple[str, ...] = ()
    bits: int = 64
    signed: bool = True
    label: str = ""

    def __post_init__(self) -> None:
        if self.kind not in ("pointer", "scalar", "value") or self.index < 0 or not 1 <= self.bits <= 64:
            raise ValueError(f"a RawArg must be a pointer, scalar or value of 1 to 64 bits, got {self!r}")

    def value(self, bound: dict[str, int]) -> int:
        """A ``"value"``'s launch value, given the sizes of the symbols."""
        size = self.coef
        for s in self.symbols:
            size *= bound[s]
        return size

    @property
    def limit(self) -> int:
        """The largest value the parameter's C type holds."""
        return (1 << (self.bits - 1 if self.signed else self.bits)) - 1


@dataclass(frozen=True)
class KernelSpec:
    """A generated kernel: its file, function name, parameters and grid."""

    name: str
    source: str  # file name in the module folder
    params: tuple[ParamSpec, ...]
    symbols: tuple[str, ...]  # layout symbols passed after the pointers, in order
    grid_param: int  # index of the parameter the grid follows
    per_row: int  # threads per row of the grid's parameter (1, its width, or its vectors)
    block: int
    per_row_symbols: tuple[str, ...] = ()  # symbols per_row is multiplied by (Grid.elements over [H, D] fields)
    grid_dims: tuple[str | int, ...] | None = None  # the grid view's leading dims where it narrows a named axis
    debug: bool = False  # the debug build: check for an out-of-field access and scan outputs after each launch
    # Pairs of parameters (by name) the kernel allows to share memory although one of them is written: an
    # in-place kernel whose pointers are not `__restrict__`. The kernel model has no declaration for it yet,
    # so generated modules pass none: every overlap of a written parameter with another is refused (LG614).
    may_alias: tuple[tuple[str, str], ...] = ()
    # The parameters passed by value, in order: the launch passes them after the pointers, before the symbols.
    scalars: tuple[ScalarSpec, ...] = ()
    count: BlockRule | None = None  # how a cooperative grid counts its blocks; None: per_row threads a row
    shared: tuple[SharedArray, ...] = ()  # the arrays of the dynamic shared memory, in the order of the buffer
    # An existing kernel (ExistingKernel): the symbol of its `__global__` in the cubin ("": `name`), and where
    # each of its parameters gets its value, in the order of its signature (empty: pointers, scalars, symbols).
    function: str = ""
    raw: tuple[RawArg, ...] = ()
