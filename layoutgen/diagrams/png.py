"""PNG from SVG, through a converter that layoutgen does not depend on.

The ``cairosvg`` package where it is installed, else ``rsvg-convert``
(librsvg) on the PATH.
"""

from __future__ import annotations

import importlib
import shutil
import subprocess
from pathlib import Path


class ConverterMissingError(Exception):
    """Neither cairosvg nor rsvg-convert is there to turn an SVG into a PNG."""


def svg_to_png(svg: str, path: Path) -> None:
    """Write ``svg`` rendered as a PNG to ``path``.

    Uses the ``cairosvg`` package when it is installed, else ``rsvg-convert``
    from the PATH. Raises :class:`ConverterMissingError` when neither is
    there, and ``subprocess.CalledProcessError`` when rsvg-convert fails.
    """
    try:
        cairosvg = importlib.import_module("cairosvg")
    except ImportError:
        cairosvg = None
    if cairosvg is not None:
        cairosvg.svg2png(bytestring=svg.encode("utf-8"), write_to=str(path))
        return
    rsvg = shutil.which("rsvg-convert")
    if rsvg is None:
        raise ConverterMissingError(
            "--png needs a converter from SVG: install the `cairosvg` package or `rsvg-convert` (librsvg), "
            "or write --svg and convert it yourself"
        )
    subprocess.run([rsvg, "--format", "png", "--output", str(path)], input=svg.encode("utf-8"), check=True)
