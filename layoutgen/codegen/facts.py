"""A plain C header of each layout's facts, for host code that does not include the CUDA views.

``generated/<spec>/<spec>_facts.h`` holds, as ``#define``s that C89 and every later C and C++ read, each
layout's row stride, element size and static dims, and each field's offset, width and row stride (in
elements, and in bytes where a column is one element). A C, C++, Rust (bindgen) or Zig host that packs or
reads the same arrays ``static_assert``s its own constants against these, so a layout changed in the spec
stops that build instead of shifting its reads.

Names: ``LG_<spec>__<Layout>__<field>__<part>__<FACT>``. Components are joined by ``__``, which no spec,
layout or field name starts with, and facts are upper case; a name that would still be made twice (a
component with ``__`` inside) is refused (LG212), never numbered, as a host's constant must not change
meaning when another field is added.
"""

from __future__ import annotations

from ..declare.spec import Spec
from ..schema import Layout
from ..schema.diagnostics import Diagnostic
from .stamp import stamp

_SEP = "__"


def _layout_facts(spec: str, layout: Layout) -> list[tuple[str, int, str]]:
    """(macro, value, what it is) of one layout: the row, the static dims, then every field depth first."""
    unit = "" if layout.column_unit.is_static else f" columns of `{layout.column_unit}` elements"
    base = f"LG_{spec}{_SEP}{layout.name}{_SEP}"
    out = [(f"{base}ELEMENT_BYTES", layout.dtype.size, f"bytes of one {layout.dtype} element"),
           (f"{base}ROW_STRIDE", layout.width, f"elements from one row to the next{unit and ' (in' + unit + ')'}"),
           (f"{base}RANK", len(layout.dims) + 1, "axes of an array of the layout, the row last")]
    if not unit:
        out.append((f"{base}ROW_BYTES", layout.width * layout.dtype.size, "bytes from one row to the next"))
    for axis, dim in enumerate(layout.dims):
        if dim.size is not None:
            out.append((f"{base}DIM{axis}", dim.size, f"axis {axis}, static"))
    for _, region in layout.record.walk():
        if region.kind == "pad":
            continue
        field = base + _SEP.join(region.path.split(".")) + _SEP
        out += [(f"{field}OFFSET", region.start, f"first column of `{region.path}` in a row"),
                (f"{field}WIDTH", region.width, f"columns of `{region.path}`"),
                (f"{field}ROW_STRIDE", layout.width, f"elements from a row of `{region.path}` to the next")]
        if not unit:
            out.append((f"{field}BYTE_OFFSET", region.start * layout.dtype.size, f"byte offset of `{region.path}` in a row"))
    return out


def facts_header(spec: Spec) -> str | Diagnostic:
    """The text of ``<spec>_facts.h`` (unstamped), or LG212 where two facts would have one name."""
    guard = f"LG_{spec.name}{_SEP}FACTS_H"
    lines = [f"/* The layouts of spec `{spec.name}` as C constants (elements unless a name says BYTES). */",
             f"#ifndef {guard}", f"#define {guard}", ""]
    seen: dict[str, str] = {}
    for layout in spec.layouts:
        lines.append(f"/* {layout.name}: {layout.dtype} rows of {layout.width} columns */")
        for macro, value, what in _layout_facts(spec.name, layout):
            if macro in seen:
                return Diagnostic("LG212", f"spec `{spec.name}` would define `{macro}` twice in `{spec.name}_facts.h` "
                                  f"(layouts `{seen[macro]}` and `{layout.name}`)", layout.site,
                                  hint="rename the layout or field whose name has `__` inside")
            seen[macro] = layout.name
            lines.append(f"#define {macro} {value} /* {what.replace('*/', '* /')} */")
        lines.append("")
    lines.append(f"#endif /* {guard} */")
    return "\n".join(lines) + "\n"


def c89_stamped(body: str, *, source: str, version: str) -> str:
    """``body`` after layoutgen's stamp as one C89 block comment (``//`` is no comment in C89).

    The stamp's two lines are those of :func:`layoutgen.codegen.stamp.stamp`, the header line ending in
    "Do not edit." and the hash line after it, so the file writer reads it as any generated file. A ``*/``
    in the source's path is written ``* /``, and hashed so, as the header shows it.
    """
    first, second, rest = stamp(body, comment="//", source=source.replace("*/", "* /"), version=version).split("\n", 2)
    return f"/*{first[2:]}\n  {second[2:]} */\n{rest}"
