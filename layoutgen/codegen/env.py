"""The one Jinja environment, and line markers that map output back to templates.

User kernel templates are loaded with an invisible marker at the start of every
plain line (``\\x01<n>\\x02``). After rendering, the markers tell which template
line produced each output line, so the kernel file can carry exact ``#line``
directives even through loops and conditionals; then they are removed.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from pathlib import Path

import jinja2

from ..templates import DIRECTORY

PACKAGE_TEMPLATES = DIRECTORY

_SHIPPED = "layoutgen/templates/"
_MARK = re.compile("\x01(\\d+)\x02")
_OPEN = ("{{", "{%", "{#")
_CLOSE = {"{{": "}}", "{%": "%}", "{#": "#}"}


def mark_lines(source: str) -> str:
    """Prefix each line that starts outside a Jinja tag with its 1-based number."""
    out: list[str] = []
    open_tag: str | None = None  # a tag left open at the end of the previous line
    for number, line in enumerate(source.split("\n"), start=1):
        if open_tag is None and not line.lstrip().startswith(("{%", "{#")):
            out.append(f"\x01{number}\x02{line}")
        else:
            out.append(line)
        open_tag = _scan(line, open_tag)
    return "\n".join(out)


def _scan(line: str, open_tag: str | None) -> str | None:
    """The tag still open after ``line``, given the one open before it."""
    i = 0
    while i < len(line):
        if open_tag is None:
            starts = [(line.find(t, i), t) for t in _OPEN if line.find(t, i) >= 0]
            if not starts:
                return None
            i, open_tag = min(starts)
            i += 2
        else:
            end = line.find(_CLOSE[open_tag], i)
            if end < 0:
                return open_tag
            i, open_tag = end + 2, None
    return open_tag


def split_marks(rendered: str) -> list[tuple[int | None, str]]:
    """Each output line with the template line that produced it (None: unknown)."""
    result: list[tuple[int | None, str]] = []
    last: int | None = None
    for line in rendered.split("\n"):
        marks = _MARK.findall(line)
        text = _MARK.sub("", line)
        if marks:
            last = int(marks[0])
            result.append((last, text))
        else:
            last = None if last is None else last + 1
            result.append((last, text))
    return result


class _Loader(jinja2.BaseLoader):
    """``lg/<name>``: layoutgen's skeletons; ``layoutgen/templates/<name>``: its kernel
    bodies (marked); anything else a path under the root (marked)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def get_source(
        self, environment: jinja2.Environment, template: str
    ) -> tuple[str, str, Callable[[], bool]]:
        if template.startswith("lg/"):  # the skeletons of generated files
            path = PACKAGE_TEMPLATES / template[3:]
            marked = False
        elif template.startswith(_SHIPPED):  # kernel bodies layoutgen ships
            path = PACKAGE_TEMPLATES / template[len(_SHIPPED):]
            marked = True
        else:
            path = Path(template) if Path(template).is_absolute() else self.root / template
            marked = True
        if not path.is_file():
            raise jinja2.TemplateNotFound(template)
        source = path.read_text(encoding="utf-8")
        mtime = path.stat().st_mtime
        return (mark_lines(source) if marked else source), str(path), lambda: path.stat().st_mtime == mtime


def c_float(value: float) -> str:
    """A C float literal that round-trips: ``1.5f``."""
    text = repr(float(value))
    if "inf" in text or "nan" in text:
        raise ValueError(f"no C literal for {value}")
    return (text if ("." in text or "e" in text) else text + ".0") + "f"


def c_int(value: int) -> str:
    """A C integer literal, 64-bit where it needs to be."""
    return f"{value}LL" if not -(2**31) <= value < 2**31 else str(value)


def c_string(value: str) -> str:
    """A C string literal."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


@functools.lru_cache(maxsize=8)
def environment(root: Path) -> jinja2.Environment:
    """The environment for one project root (cached)."""
    env = jinja2.Environment(
        loader=_Loader(root),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )
    env.filters.update(c_float=c_float, c_int=c_int, c_string=c_string, py=repr)
    return env
