"""The names a field may not take: those of the attributes it is reached beside.

A field is reached as an attribute of its layout and views (``Window.snap``) and, in a program, of a
buffer or a field of one (``window.snap``). A field named like one of their attributes would be
shadowed by it (``window.whole`` is the whole buffer), so it is refused where the field is declared
(LG106), not where a program first uses it. The names are read off the classes themselves, never
listed by hand: each module that defines such a class registers it when it is imported (the schema
imports nothing above it, and importing any part of layoutgen imports the program module).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import fields as dataclass_fields
from dataclasses import is_dataclass


@dataclass(frozen=True)
class Reserver:
    """Classes whose attributes a field may not shadow, as messages name them."""

    whose: str  # "layouts and views": the message's "the attribute `x` of ..."
    classes: str  # "Layout and View": the hint's "reserves the names of ... attributes"
    note: str  # what the name would reach instead, with `{name}`; empty where the message says enough

    def message(self, name: str, owner: str) -> str:
        text = f"field `{name}` of `{owner}` would shadow the attribute `{name}` of {self.whose}"
        return text + (": " + self.note.format(name=name) if self.note else "")

    @property
    def hint(self) -> str:
        return f"rename the field; layoutgen reserves the names of {self.classes} attributes"


def public_attributes(*classes: type) -> frozenset[str]:
    """The public attributes of ``classes``: ``dir()``, and the dataclass fields it misses (those without a
    class-level default, such as a layout's ``dims``)."""
    names = {n for c in classes for n in dir(c)}
    names.update(f.name for c in classes if is_dataclass(c) for f in dataclass_fields(c))
    return frozenset(n for n in names if not n.startswith("_"))


_RESERVED: dict[str, Reserver] = {}  # name -> the first registered classes that have it


def reserve_attributes(reserver: Reserver, *classes: type) -> frozenset[str]:
    """Refuse fields named like the public attributes of ``classes`` from now on; those names."""
    names = public_attributes(*classes)
    for name in sorted(names):
        _RESERVED.setdefault(name, reserver)
    return names


def reserved_names() -> Mapping[str, Reserver]:
    """Every name a field may not take, with whose attribute it is."""
    return dict(_RESERVED)
