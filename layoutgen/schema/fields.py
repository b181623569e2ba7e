"""What a user writes inside a layout: fields, groups and padding.

These are declarations, recorded with their site; :mod:`.record` resolves
them into column ranges and validates them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from .diagnostics import Site, caller_site

Columns = tuple[int, int]
ShapeEntry = object  # a Dim, an int or a symbol's name; validated when the layout resolves it


@dataclass(frozen=True)
class Field:
    """A named run of columns: ``Field("snap", 40)`` or ``Field("snap", cols=(0, 40))``.

    Given a width, the field starts where the previous entry of its record
    ended; given ``cols=(start, stop)`` (absolute columns of the row, stop
    exclusive), it sits exactly there.

    Given ``shape=[H, D]`` the field is a packed sub-array of its row: ``H * D``
    columns whose views and accessors take one index per dim (``q(b, s, h, d)``).
    Its dims may be symbolic; a row with symbolic fields counts its columns in
    that symbol (``q: [32, D]`` is 32 columns of ``D`` elements).
    """

    name: str
    width: int | None = None
    cols: Columns | None = None
    doc: str = ""
    site: Site | None = field(default_factory=caller_site, compare=False, repr=False)
    shape: Sequence[ShapeEntry] | None = None


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


@dataclass(frozen=True)
class Axis:
    """A leading axis of a layout whose index ranges have names.

    ``Layout("Obs", [N, Axis([Field("t1", 3), Field("t2", 5)]), 32], f32, width=32)``
    declares ``[N, 8, 32, 32]`` whose rows 0..3 of axis 1 are ``t1``: ``Obs.t1``
    is a ``[N, 3, 32, 32]`` view. The entries are Field, Group and Pad as in a
    record, counted in indices of this axis; ``size`` checks their extent.
    Views nest: ``Obs.t1.snap`` is ``t1``'s part of the last-axis field ``snap``.
    """

    fields: Sequence[Field | Group | Pad]
    size: int | None = None
    doc: str = ""
    site: Site | None = field(default_factory=caller_site, compare=False, repr=False)


Entry = Field | Group | Pad
