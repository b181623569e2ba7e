"""Generated field copies: any field view to packed rows and back.

``field_copies(Window.snap)`` returns two bindings of layoutgen's own
templates: ``gather`` reads the field's columns into a packed ``[B, K, 40]``
array, ``scatter`` writes them back. Each thread moves the widest group of
bytes that stays aligned on every row of both sides (16 bytes where the
field's offset, width and row stride allow, down to one element).
"""

from __future__ import annotations

from ..schema import Dim, Field, Layout, View
from ..schema.diagnostics import Diagnostic, caller_site
from ..templates import DIRECTORY as PACKAGE_TEMPLATES
from .kernels import Binding, Grid, In, Kernel, KernelError, Out


def _kernel(name: str, template: str, view: View) -> Kernel:
    shape: list[Dim | int] = list(view.shape)  # every axis: a named range narrowed, a sub-array's own dims
    verb = "gather" if template.startswith("gather") else "scatter"
    return Kernel(name, template, [In("src", shape), Out("dst", shape)], grid=Grid.vectors("dst"),
                  doc=f"{verb} `{view.name}`", template_root=PACKAGE_TEMPLATES)


def packed_layout(view: View, name: str | None = None) -> Layout:
    """A layout with the view's leading dims and dtype whose rows are just the field.

    A sub-array field's packed rows are one field of its shape (``block``), so
    that both sides have the same axes; a named range's rows are its own.
    """
    lay = view.layout
    if not lay.column_unit.is_static:
        raise KernelError(Diagnostic(
            "LG208", f"field copies of `{view.name}` need a static row; its columns count `{lay.column_unit}`",
            caller_site(), hint="copy with a kernel of your own that indexes through the view's accessors",
        ))
    packed = name or f"{view.name.replace('.', '_')}_packed"
    if view.region.shape:
        return Layout(packed, list(view.leading_dims), lay.dtype, [Field("block", shape=list(view.region.shape))])
    return Layout(packed, list(view.leading_dims), lay.dtype, width=view.width)


def field_copies(view: View | Layout, packed: Layout | None = None, name: str | None = None) -> tuple[Binding, Binding]:
    """(gather, scatter) bindings between ``view`` and packed rows of ``packed``.

    ``packed`` defaults to a new layout named ``<Layout>_<field>_packed``;
    the kernels are named ``gather_<Layout>_<field>`` and ``scatter_...``
    unless ``name`` gives the common suffix.
    """
    site = caller_site()
    if not isinstance(view, (View, Layout)):
        raise KernelError(Diagnostic("LG208", f"`field_copies` copies a field's view or a layout, got {view!r}", site,
                                     hint="for example field_copies(Window.snap)"))
    if packed is not None and not isinstance(packed, Layout):
        raise KernelError(Diagnostic("LG208", f"`packed` of `field_copies` must be a layout, got {packed!r}", site))
    view = view.view if isinstance(view, Layout) else view
    target = packed or packed_layout(view)
    rows: View | Layout = target
    if view.region.shape:  # a sub-array field lands in the packed layout's one field of a shape
        shaped = [f for f in target.fields() if f.region.shape]
        if len(shaped) == 1:
            rows = shaped[0]
    suffix = name or view.name.replace(".", "_")
    gather = _kernel(f"gather_{suffix}", "gather.cu.j2", view).bind(src=view, dst=rows)
    scatter = _kernel(f"scatter_{suffix}", "scatter.cu.j2", view).bind(src=rows, dst=view)
    return gather, scatter
