"""The layout schema: dims, dtypes, layouts, views and their diagnostics.

Pure Python (NumPy only for the numpy views, imported when used); nothing
here imports the rest of layoutgen, Jinja or CuPy.
"""

from .diagnostics import (
    CODES,
    Code,
    Diagnostic,
    LayoutError,
    LayoutgenError,
    Severity,
    Site,
    UnknownFieldError,
)
from .dims import Dim, Size, dims
from .dtypes import DTYPES, DType, bf16, f16, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64
from .fields import Axis, Field, Group, Pad
from .layout import Layout
from .record import Region
from .view import View

__all__ = [
    "CODES", "Code", "Diagnostic", "LayoutError", "LayoutgenError", "Severity", "Site",
    "UnknownFieldError", "Axis", "Dim", "Size", "dims", "DTYPES", "DType", "bf16", "f16", "f32", "f64",
    "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "Field", "Group", "Pad", "Layout",
    "Region", "View",
]
