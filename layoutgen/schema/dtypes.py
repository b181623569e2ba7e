"""Element types: facts in one table, not in chains of ``if``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .diagnostics import Site, layout_error


@dataclass(frozen=True)
class DType:
    """An element type as C++, NumPy and the runtime see it."""

    name: str  # layoutgen's short name: "f32"
    c_type: str  # the C++ type in generated code
    numpy_name: str | None  # numpy's name; None where numpy has no such type
    storage: str  # a numpy dtype of the same size, for raw copies and checks
    size: int  # bytes
    align: int  # bytes
    kind: str  # "float", "int" (signed), "uint" or "bool": which values a scalar of this type takes

    def __str__(self) -> str:
        return self.name


_TABLE = (
    # name   C type          numpy       storage    size align kind
    DType("f64", "double", "float64", "float64", 8, 8, "float"),
    DType("f32", "float", "float32", "float32", 4, 4, "float"),
    DType("f16", "__half", "float16", "float16", 2, 2, "float"),
    DType("bf16", "__nv_bfloat16", None, "uint16", 2, 2, "float"),
    DType("i64", "long long", "int64", "int64", 8, 8, "int"),
    DType("i32", "int", "int32", "int32", 4, 4, "int"),
    DType("i16", "short", "int16", "int16", 2, 2, "int"),
    DType("i8", "signed char", "int8", "int8", 1, 1, "int"),
    DType("u64", "unsigned long long", "uint64", "uint64", 8, 8, "uint"),
    DType("u32", "unsigned int", "uint32", "uint32", 4, 4, "uint"),
    DType("u16", "unsigned short", "uint16", "uint16", 2, 2, "uint"),
    DType("u8", "unsigned char", "uint8", "uint8", 1, 1, "uint"),
    DType("bool", "bool", "bool", "bool", 1, 1, "bool"),  # C++ and NumPy both hold it in one byte, 0 or 1
)

#: Every dtype layoutgen knows, by short name.
DTYPES: dict[str, DType] = {d.name: d for d in _TABLE}

f64, f32, f16, bf16 = DTYPES["f64"], DTYPES["f32"], DTYPES["f16"], DTYPES["bf16"]
i64, i32, i16, i8 = DTYPES["i64"], DTYPES["i32"], DTYPES["i16"], DTYPES["i8"]
u64, u32, u16, u8 = DTYPES["u64"], DTYPES["u32"], DTYPES["u16"], DTYPES["u8"]
#: ``bool`` is Python's; NumPy spells its type the same way.
bool_ = DTYPES["bool"]


def resolve_dtype(value: object, what: str, site: Site | None, allowed: Mapping[str, DType] | None = None) -> DType:
    """A DType from a DType or its short name; LG107 for a name layoutgen does not know, listing ``allowed``
    (every dtype by default; a scalar's take fewer, so that the list a message offers is the one the
    declaration accepts). A known dtype outside ``allowed`` is the caller's to refuse, with its reason."""
    if isinstance(value, DType):
        return value
    if isinstance(value, str) and value in DTYPES:
        return DTYPES[value]
    known = ", ".join(DTYPES if allowed is None else allowed)
    raise layout_error("LG107", f"{what} must be one of {known}, got {value!r}", site)
