"""The seed bug spelled every way issue 30 lists, as data: each a bad snippet, the line of its bad access, and a
correct twin of the same shape.

The seed bug: rows of the 96-column field `Window.snap`, 136 elements apart, read at a stride of 96 (the
field's width) or another wrong number. Each :class:`Spelling` is a snippet of CUDA in two parts: ``scope``
(file-scope lines: macros, constants, helpers; a template's preamble block) and ``body`` (the kernel's body,
which sees the names its grid defines: ``row``; ``lane``, ``warp_rows``; ``tile_row``, ``tile_rows``,
``tile_capacity``), and ``line``, where the bad access is, counted over ``scope`` then ``body`` from 1.
``good`` is the correct twin, in the same two parts. Every snippet also sees ``F`` (the field's columns) and
``X`` (the type of the view `x`), and a spelling over ``rows`` sees ``K`` (but in an entry, which sees no symbol).

tests/helpers/spellings.py writes each snippet as three kernels: a kernel template (``template``), a
hand-written ``SourceKernel`` entry (``entry``) and a ``__device__`` helper holding the body, which the
template's body calls (``helper``); ``skip`` names the forms a snippet cannot be written in, and why.

The kernels' parameters, by ``grid``:

- ``rows``: ``x`` In [B, K, F] <- Window.snap (``vector=16`` where ``vector16``), ``y`` Out <- Packed; a thread
  per row (Grid.rows).
- ``warps``: ``x`` In <- Padded.snap (96 columns, then 40 of padding), ``y`` Out <- Packed; a warp per row.
- ``tiles``: ``x`` In <- Window.snap, ``n`` In <- Narrow (40 columns) where ``narrow``, ``y`` Out <- Packed; a
  block per tile of 32 rows (B, K = 3, 61: the last tile holds 23 rows), with the shared tile ``xs`` of ``x``
  where ``tile`` (a hand-written entry has none: its spellings of the tile classes stage the rows in a static
  ``__shared__`` array, in every form).

``finding`` names how `check --execute` refuses the bad kernel (tests/test_spellings_execute.py's ``FINDINGS``):
all at the bad access's line but ``unwritten``, which is reported at the kernel's binding.

``reference`` names what the correct twin computes from ``Window.snap`` (tests/helpers/spellings.py's
``REFERENCES``), for the GPU test.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Spelling:
    """One spelling of the seed bug and its correct twin."""

    name: str
    body: str  # the kernel's body with the bad access
    line: int  # the bad access's line, counted over scope then body, from 1
    good: str  # the correct twin's body
    scope: str = ""  # file-scope lines before the body (a template's preamble)
    good_scope: str = ""
    grid: str = "rows"  # "rows", "warps" or "tiles"
    vector16: bool = False  # `x` declared vector=16
    narrow: bool = False  # a parameter `n` bound to the narrower Narrow
    tile: bool = False  # the shared tile `xs` of `x` declared (grid "tiles" only)
    reference: str = "copy"  # what the correct twin computes
    finding: str = "pointer"  # which finding refuses it (tests/test_spellings_execute.py's FINDINGS)
    skip: dict[str, str] = field(default_factory=dict)  # form -> why it cannot be written in that form

    @property
    def taken(self) -> int:
        """Where the GPU's debug build names a bad access through a pointer: the line that took the pointer from
        its view (`&x.at(0, 0)`), counted as ``line`` is; ``line`` for every other finding. (On the GPU the access
        through a checked pointer has no line of its own to give; the CPU run reads it from the return address.)"""
        if self.finding != "pointer":
            return self.line
        lines = self.scope.splitlines() + self.body.splitlines()
        return next(n for n, text in enumerate(lines, start=1) if "&x.at(" in text)

    @property
    def bad_line(self) -> str:
        """The text of the bad access's line (what a reader of a finding looks for)."""
        return (self.scope.splitlines() + self.body.splitlines())[self.line - 1]


#: Why a hand-written entry cannot hold a snippet over a shared tile.
NO_ENTRY_TILE = ("a SourceKernel declares no shared tiles (`shared=` is not offered to it): `xs` and its "
                 "`load` do not exist there")

COPY = "for (int c = 0; c < F; ++c) y.at(row, c) = "


def lanes(bound: str, before: str = "") -> str:
    """A warp's row, centred: its lanes sum columns `lane`, `lane + 32`, ... while below ``bound``."""
    return (before + "for (int r = 0; r < warp_rows; ++r) {\n    float total = 0.0f;\n"
            f"    for (int c = lane; c < {bound}; c += 32) total += x.at(row + r, c);\n"
            "    for (int m = 16; m > 0; m /= 2) total += __shfl_xor_sync(0xffffffffu, total, m);\n"
            "    for (int c = lane; c < F; c += 32) y.at(row + r, c) = x.at(row + r, c) - total / F;\n}\n")


def column_sums(rows: str) -> str:
    """Each column of the tile `xs` summed over ``rows`` of its rows, written to every row the tile holds."""
    return ("xs.load(x, tile_row, tile_rows);\n__syncthreads();\n"
            "for (int c = threadIdx.x; c < F; c += blockDim.x) {\n    float total = 0.0f;\n"
            f"    for (int r = 0; r < {rows}; ++r) total += xs(r, c);\n"
            "    for (int r = 0; r < tile_rows; ++r) y.at(tile_row + r, c) = total;\n}\n")


def static_fill(source: str) -> str:
    """A block's rows staged through a static `__shared__` array filled from ``source``, then copied to y."""
    return ("__shared__ float part[32 * 96];\n"
            f"for (int q = threadIdx.x; q < tile_rows * F; q += blockDim.x) part[q] = {source}.at(tile_row + q / F, q % F);\n"
            "__syncthreads();\n"
            "for (int q = threadIdx.x; q < tile_rows * F; q += blockDim.x) y.at(tile_row + q / F, q % F) = part[q];\n")


def static_sums(rows: str) -> str:
    """Each column summed over ``rows`` rows of a block's rows staged in a static `__shared__` array."""
    return ("__shared__ float part[32 * 96];\n"
            "for (int q = threadIdx.x; q < tile_rows * F; q += blockDim.x) part[q] = x.at(tile_row + q / F, q % F);\n"
            "__syncthreads();\n"
            "for (int c = threadIdx.x; c < F; c += blockDim.x) {\n    float total = 0.0f;\n"
            f"    for (int r = 0; r < {rows}; ++r) total += part[r * F + c];\n"
            "    for (int r = 0; r < tile_rows; ++r) y.at(tile_row + r, c) = total;\n}\n")


def gram(ld: str) -> str:
    """The Gram matrix of the tile's rows (its first `tile_rows` columns; zero past them) through `gram`."""
    return ("xs.load(x, tile_row, tile_rows);\n__syncthreads();\nconst float* a = &xs(0, 0);\n"
            "for (int q = threadIdx.x; q < tile_rows * F; q += blockDim.x)\n"
            f"    y.at(tile_row + q / F, q % F) = q % F < tile_rows ? gram(a, {ld}, a, {ld}, q / F, q % F, F) : 0.0f;\n")


#: A product of two row-major matrices A B^T in memory, of leading dimensions lda and ldb: one element.
GRAM = ("__device__ float gram(const float* a, int lda, const float* b, int ldb, int r, int s, int k) {\n"
        "    float sum = 0.0f;\n    for (int i = 0; i < k; ++i) sum += a[r * lda + i] * b[s * ldb + i];\n"
        "    return sum;\n}\n")

SPELLINGS: tuple[Spelling, ...] = (
    Spelling("const_int",
             "const int stride = 96;\nconst float* base = &x.at(0, 0);\n" + COPY + "base[row * stride + c];\n", 3,
             "const int stride = x.row_stride;\nconst float* base = &x.at(0, 0);\n" + COPY + "base[row * stride + c];\n"),
    Spelling("int_local",
             "int stride = 96;\nconst float* base = &x.at(0, 0);\n" + COPY + "base[row * stride + c];\n", 3,
             "int stride = x.row_stride;\nconst float* base = &x.at(0, 0);\n" + COPY + "base[row * stride + c];\n"),
    Spelling("constexpr_int",
             "constexpr int stride = 96;\nconst float* base = &x.at(0, 0);\n" + COPY + "base[row * stride + c];\n", 3,
             "constexpr int stride = X::row_stride;\nconst float* base = &x.at(0, 0);\n" + COPY + "base[row * stride + c];\n"),
    Spelling("auto_width",
             "auto w = x.width;\nconst float* base = &x.at(0, 0);\n" + COPY + "base[row * w + c];\n", 3,
             "auto w = x.row_stride;\nconst float* base = &x.at(0, 0);\n" + COPY + "base[row * w + c];\n"),
    Spelling("define",
             "const float* base = &x.at(0, 0);\n" + COPY + "base[row * STRIDE + c];\n", 3,
             "const float* base = &x.at(0, 0);\n" + COPY + "base[row * STRIDE + c];\n",
             scope="#define STRIDE 96\n", good_scope="#define STRIDE (x.row_stride)\n"),
    Spelling("offset_line",
             "const float* base = &x.at(0, 0);\nconst long long off = row * 96;\n" + COPY + "base[off + c];\n", 3,
             "const float* base = &x.at(0, 0);\nconst long long off = row * x.row_stride;\n" + COPY + "base[off + c];\n"),
    Spelling("offset_split",
             "const float* base = &x.at(0, 0);\nlong long off = row;\noff *= 96;\n" + COPY + "base[off + c];\n", 4,
             "const float* base = &x.at(0, 0);\nlong long off = row;\noff *= x.row_stride;\n" + COPY + "base[off + c];\n"),
    # Flattened through row 0: the view's accessor takes row 0 and a column past the field's 96.
    Spelling("at_row0", COPY + "x.at(0, row * F + c);\n", 1, COPY + "x.at(row, c);\n", finding="field"),
    Spelling("call_row0", COPY + "x(0, 0, row * F + c);\n", 1, COPY + "x(row / K, row % K, c);\n", finding="field",
             skip={"entry": "the correct twin splits the row into (b, k) by the symbol `K`, which an entry does not "
                            "see (it gets the views only)"}),
    Spelling("shift_times",
             "const float* base = &x.at(0, 0);\n" + COPY + "base[(row << 5) * 3 + c];\n", 2,
             "const float* base = &x.at(0, 0);\n" + COPY + "base[(row << 3) * 17 + c];\n"),
    Spelling("off_by_one",
             "const float* base = &x.at(0, 0);\n" + COPY + "base[row * 95 + c];\n", 2,
             "const float* base = &x.at(0, 0);\n" + COPY + "base[row * x.row_stride + c];\n"),
    Spelling("vec16_row0",
             "for (int i = 0; i < F / 4; ++i) {\n"
             "    const auto v = x.vec<16>(0, row * 24 + i);\n"
             "    for (int k = 0; k < 4; ++k) y.at(row, 4 * i + k) = v.v[k];\n}\n", 2,
             "for (int i = 0; i < F / 4; ++i) {\n"
             "    const auto v = x.vec<16>(row, i);\n"
             "    for (int k = 0; k < 4; ++k) y.at(row, 4 * i + k) = v.v[k];\n}\n", vector16=True, finding="field"),
    Spelling("flat_loop",
             "const float* p = &x.at(0, 0);\n"
             "for (long long i = row * F; i < (row + 1) * F; ++i) y.at(row, i - row * F) = p[i];\n", 2,
             "const float* p = &x.at(0, 0);\n"
             "for (long long i = row * x.row_stride; i < row * x.row_stride + F; ++i) "
             "y.at(row, i - row * x.row_stride) = p[i];\n"),
    Spelling("float4_cast",
             "const float4* groups = reinterpret_cast<const float4*>(&x.at(0, 0));\n"
             "for (int i = 0; i < F / 4; ++i) {\n"
             "    const float4 v = groups[row * 24 + i];\n"
             "    y.at(row, 4 * i) = v.x; y.at(row, 4 * i + 1) = v.y; y.at(row, 4 * i + 2) = v.z; y.at(row, 4 * i + 3) = v.w;\n"
             "}\n", 3,
             "const float4* groups = reinterpret_cast<const float4*>(&x.at(0, 0));\n"
             "for (int i = 0; i < F / 4; ++i) {\n"
             "    const float4 v = groups[row * (x.row_stride / 4) + i];\n"
             "    y.at(row, 4 * i) = v.x; y.at(row, 4 * i + 1) = v.y; y.at(row, 4 * i + 2) = v.z; y.at(row, 4 * i + 3) = v.w;\n"
             "}\n", vector16=True),
    Spelling("helper_width",
             "copy_row(&x.at(0, 0), &y.at(row, 0), row, F);\n", 2,
             "copy_row(&x.at(0, 0), &y.at(row, 0), row, F, x.row_stride);\n",
             scope="__device__ void copy_row(const float* from, float* to, long long row, int width) {\n"
                   "    for (int c = 0; c < width; ++c) to[c] = from[row * width + c];\n}\n",
             good_scope="__device__ void copy_row(const float* from, float* to, long long row, int width, int stride) {\n"
                        "    for (int c = 0; c < width; ++c) to[c] = from[row * stride + c];\n}\n"),
    Spelling("static_const",
             "const float* base = &x.at(0, 0);\n" + COPY + "base[row * kStride + c];\n", 3,
             "const float* base = &x.at(0, 0);\n" + COPY + "base[row * kStride + c];\n",
             scope="static const int kStride = 96;\n", good_scope="static const int kStride = 136;\n"),
    Spelling("type_width",
             "constexpr int W = X::width;\nconst float* base = &x.at(0, 0);\n" + COPY + "base[row * W + c];\n", 3,
             "constexpr int W = X::row_stride;\nconst float* base = &x.at(0, 0);\n" + COPY + "base[row * W + c];\n"),
    Spelling("other_view_stride",
             "const float* base = &x.at(0, 0);\n" + COPY + "base[row * y.row_stride + c];\n", 2,
             "const float* base = &x.at(0, 0);\n" + COPY + "base[row * x.row_stride + c];\n"),
    Spelling("other_view_local",
             "const int s = y.row_stride;\nconst float* base = &x.at(0, 0);\n" + COPY + "base[row * s + c];\n", 3,
             "const int s = x.row_stride;\nconst float* base = &x.at(0, 0);\n" + COPY + "base[row * s + c];\n"),
    # A warp's lanes over the row stride of a padded field: past its 96 columns into the padding.
    Spelling("lane_loop", lanes("x.row_stride"), 3, lanes("F"), grid="warps", reference="center", finding="field"),
    Spelling("lane_loop_local", lanes("cols", "const int cols = x.row_stride;\n"), 4,
             lanes("cols", "const int cols = x.width;\n"), grid="warps", reference="center", finding="field"),
    # A column sum over the tile to its capacity: the last tile holds 23 of 32 rows.
    Spelling("tile_capacity", column_sums("tile_capacity"), 5, column_sums("tile_rows"), grid="tiles",
             reference="tile_sums", finding="tile_rows", tile=True, skip={"entry": NO_ENTRY_TILE}),
    Spelling("tile_capacity_member", column_sums("xs.capacity"), 5, column_sums("tile_rows"), grid="tiles",
             reference="tile_sums", finding="tile_rows", tile=True, skip={"entry": NO_ENTRY_TILE}),
    # A tile of x's 96 columns filled from n's 40: by the tile's copy, and by hand into a static __shared__ array.
    # The same sum over a block's rows staged by hand in a static __shared__ array (a hand-written entry has no
    # tile): rows past the block's were never written. The CPU run refuses it where the NaN they hold reaches
    # `y` (LG654), at the kernel's binding: it does not know which rows of a static array a block filled.
    Spelling("tile_capacity_static", static_sums("tile_capacity"), 6, static_sums("tile_rows"), grid="tiles",
             reference="tile_sums", finding="unwritten"),
    Spelling("narrow_fill",
             "xs.load(n, tile_row, tile_rows);\n__syncthreads();\n"
             "for (int q = threadIdx.x; q < tile_rows * F; q += blockDim.x) y.at(tile_row + q / F, q % F) = xs(q / F, q % F);\n",
             1,
             "xs.load(x, tile_row, tile_rows);\n__syncthreads();\n"
             "for (int q = threadIdx.x; q < tile_rows * F; q += blockDim.x) y.at(tile_row + q / F, q % F) = xs(q / F, q % F);\n",
             grid="tiles", narrow=True, finding="narrow", tile=True, skip={"entry": NO_ENTRY_TILE}),
    Spelling("narrow_fill_static", static_fill("n"), 2, static_fill("x"), grid="tiles", narrow=True, finding="narrow"),
    # The held-out class: a tile product (the Gram matrix of the tile's rows) whose operands are given the tile's
    # width as their leading dimension while its pitch is wider (100: rows 16-byte aligned, an odd number of groups
    # apart). The library has no tile product taking a leading dimension (lg/ has no mma, wmma or load_matrix; the
    # VSN kernels read fragments through the tile's accessor), so the product is the user's own, over a pointer.
    Spelling("tile_product_ld", gram("F"), 3, gram("xs.pitch"), scope=GRAM, good_scope=GRAM, grid="tiles",
             reference="tile_gram", finding="tile_pitch", tile=True, skip={"entry": NO_ENTRY_TILE}),
    Spelling("tile_product_width", gram("xs.width"), 3, gram("xs.pitch"), scope=GRAM, good_scope=GRAM, grid="tiles",
             reference="tile_gram", finding="tile_pitch", tile=True, skip={"entry": NO_ENTRY_TILE}),
)
