"""Whether a command colours what it prints: the one place that decides.

``--color always`` and ``--color never`` decide alone. ``--color auto`` (the
default) follows the environment, then the stream: ``NO_COLOR`` set to any
non-empty value turns colour off (https://no-color.org), ``FORCE_COLOR`` set
to any non-empty value turns it on (https://force-color.org); with neither,
colour is on where the stream is a terminal. ``NO_COLOR`` wins over
``FORCE_COLOR``: a user's "no" outranks a tool's "yes".
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TextIO

#: The values of ``--color``, the first the default.
COLOR_CHOICES = ("auto", "always", "never")


def use_color(choice: str, stream: TextIO, environ: Mapping[str, str] | None = None) -> bool:
    """Whether text written to ``stream`` is coloured, for ``--color choice``."""
    if choice not in COLOR_CHOICES:
        raise ValueError(f"`choice` must be one of {', '.join(COLOR_CHOICES)}, got {choice!r}")
    if choice != "auto":
        return choice == "always"
    env = os.environ if environ is None else environ
    if env.get("NO_COLOR"):
        return False
    if env.get("FORCE_COLOR"):
        return True
    isatty = getattr(stream, "isatty", None)  # a stream replaced by a test or a wrapper may lack it
    return bool(isatty and isatty())
