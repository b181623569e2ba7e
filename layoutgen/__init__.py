"""layoutgen: declare packed tensor layouts once, generate CUDA from them.

The public API is re-exported here; see ``docs/api.md``.
"""

from .declare.autograd import Autograd
from .declare.copies import field_copies
from .declare.existing_kernels import ExistingKernel, Offset, Pitch, Rows, RowStride
from .declare.grids import ceil_div
from .declare.kernels import Binding, Grid, In, InOut, Kernel, KernelError, Out, Param, Scalar
from .declare.program import Buffer, BufferView, Launch, Program, ProgramError, Value
from .declare.shared import Shared, Tile
from .declare.source_kernels import SourceKernel
from .declare.spec import Spec
from .schema import (
    CODES,
    DTYPES,
    Axis,
    Diagnostic,
    Dim,
    DType,
    Field,
    Group,
    Layout,
    LayoutError,
    LayoutgenError,
    Pad,
    Severity,
    Site,
    Size,
    View,
    bf16,
    dims,
    f16,
    f32,
    f64,
    i8,
    i16,
    i32,
    i64,
    u8,
    u16,
    u32,
    u64,
)
from .schema.dtypes import bool_
from .version import __version__

__all__ = [
    "Axis", "CODES", "DTYPES", "Diagnostic", "Dim", "DType", "Field", "Group", "Layout", "LayoutError",
    "LayoutgenError", "Pad", "Severity", "Site", "Size", "View", "bf16", "dims", "f16", "f32",
    "f64", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "__version__",
    "Binding", "Grid", "In", "InOut", "Kernel", "KernelError", "Out", "Param", "Spec", "field_copies",
    "Buffer", "BufferView", "Launch", "Program", "ProgramError",
    "Scalar", "Value", "bool_",
    "Shared", "Tile", "ceil_div",
    "Autograd",
    "SourceKernel",
    "ExistingKernel", "Offset", "Pitch", "RowStride", "Rows",
]
