"""Generated field copies: any field view to packed rows and back.

``field_copies(Window.snap)`` returns two bindings of layoutgen's own
templates: ``gather`` reads the field's columns into a packed ``[B, K, 40]``
array, ``scatter`` writes them back. Each thread moves the widest group of
bytes that stays aligned on every row of both sides (16 bytes where the
field's offset, width and row stride allow, down to one element).
"""

from __future__ import annotations

from .kernels import Binding, Grid, In, Kernel, Out
from .schema import Dim, Layout, View
from .templates import DIRECTORY as PACKAGE_TEMPLATES


def _kernel(name: str, template: str, view: View) -> Kernel:
    shape: list[Dim | int] = [*view.layout.dims, view.width]
    verb = "gather" if template.startswith("gather") else "scatter"
    return Kernel(name, template, [In("src", shape), Out("dst", shape)], grid=Grid.vectors("dst"),
                  doc=f"{verb} `{view.name}`", template_root=PACKAGE_TEMPLATES)


def packed_layout(view: View, name: str | None = None) -> Layout:
    """A layout with the view's leading dims and dtype whose rows are just the field."""
    lay = view.layout
    return Layout(name or f"{view.name.replace('.', '_')}_packed", list(lay.dims), lay.dtype, width=view.width)


def field_copies(view: View | Layout, packed: Layout | None = None, name: str | None = None) -> tuple[Binding, Binding]:
    """(gather, scatter) bindings between ``view`` and packed rows of ``packed``.

    ``packed`` defaults to a new layout named ``<Layout>_<field>_packed``;
    the kernels are named ``gather_<Layout>_<field>`` and ``scatter_...``
    unless ``name`` gives the common suffix.
    """
    view = view.view if isinstance(view, Layout) else view
    target = packed or packed_layout(view)
    suffix = name or view.name.replace(".", "_")
    gather = _kernel(f"gather_{suffix}", "gather.cu.j2", view).bind(src=view, dst=target)
    scatter = _kernel(f"scatter_{suffix}", "scatter.cu.j2", view).bind(src=target, dst=view)
    return gather, scatter
