"""What a user writes inside a layout: fields, groups and padding.

These are declarations, recorded with their site; :mod:`.record` resolves
them into column ranges and validates them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from .diagnostics import Site, caller_site

Columns = tuple[int, int]


@dataclass(frozen=True)
class Field:
    """A named run of columns: ``Field("snap", 40)`` or ``Field("snap", cols=(0, 40))``.

    Given a width, the field starts where the previous entry of its record
    ended; given ``cols=(start, stop)`` (absolute columns of the row, stop
    exclusive), it sits exactly there.
    """

    name: str
    width: int | None = None
    cols: Columns | None = None
    doc: str = ""
    site: Site | None = field(default_factory=caller_site, compare=False, repr=False)


@dataclass(frozen=True)
class Group:
    """Named fields nested under one name: ``Group("trade", [...])``.

    The group covers the columns of its entries; ``cols`` places it (and
    checks its extent), ``width`` checks its extent.
    """

    name: str
    fields: Sequence[Field | Group | Pad]
    width: int | None = None
    cols: Columns | None = None
    doc: str = ""
    site: Site | None = field(default_factory=caller_site, compare=False, repr=False)


@dataclass(frozen=True)
class Pad:
    """Columns deliberately left unused: ``Pad(2)`` or ``Pad(cols=(38, 40))``."""

    width: int | None = None
    cols: Columns | None = None
    site: Site | None = field(default_factory=caller_site, compare=False, repr=False)


Entry = Field | Group | Pad
