"""The Jinja environments, and line markers that map output back to templates.

Two environments, with the same options: :func:`environment` renders kernel
templates (the user's bodies, and the field copies layoutgen ships), and
:func:`skeletons` the files around them, whose every ``{{ }}`` must pass
through an escaper of :mod:`layoutgen.codegen.escape`.

Kernel templates are loaded with an invisible marker at the start of every
plain line (``\\x01<file>:<n>\\x02``: the file's number in the loader, the line's
number in the file). After rendering, the markers tell which line of which
template produced each output line, so the kernel file can carry exact
``#line`` directives even through loops, conditionals, included templates and
macros of other files; then they are removed.

``{% include %}``, ``{% import %}`` and ``{% from %}`` look for a name in the
including template's own folder, then in each of the project's template
folders (``templates`` of ``[tool.layoutgen]``), in order.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jinja2

from ..templates import DIRECTORY
from .escape import (
    Escaped, c_ident, c_include, c_string, cpp_code, cpp_comment, py_comment, py_docline, py_docstring,
    py_literal,
)

PACKAGE_TEMPLATES = DIRECTORY

_SHIPPED = "layoutgen/templates/"
_MARK = re.compile("\x01(\\d+):(\\d+)\x02")
# A mark that a line's text follows: an included template's last, empty line leaves its mark right before
# the mark of the including template's next line, which is the one that line's text comes from.
_TEXT_MARK = re.compile("\x01(\\d+):(\\d+)\x02(?!\x01)")
_OPEN = ("{{", "{%", "{#")
_CLOSE = {"{{": "}}", "{%": "%}", "{#": "#}"}


class TemplateEncodingError(jinja2.TemplateError):
    """A template file that is not UTF-8 text: where, and which byte."""

    def __init__(self, path: Path, data: bytes, exc: UnicodeDecodeError) -> None:
        self.filename = str(path)
        self.lineno = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        super().__init__(f"`{path.name}` is not UTF-8 text: byte 0x{data[exc.start]:02x} at line {self.lineno}, "
                         f"column {column}")


def mark_lines(source: str, file: int = 0) -> str:
    """Prefix each line that starts outside a Jinja tag with ``file`` and its own 1-based number."""
    out: list[str] = []
    open_tag: str | None = None  # a tag left open at the end of the previous line
    for number, line in enumerate(source.split("\n"), start=1):
        if open_tag is None and not line.lstrip().startswith(("{%", "{#")):
            out.append(f"\x01{file}:{number}\x02{line}")
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


#: Where an output line came from: the file's number in the loader (:func:`marked_file`) and its line.
Origin = tuple[int, int]


def split_origins(rendered: str) -> list[tuple[Origin | None, str]]:
    """Each output line with the template file and line that produced it (None: unknown)."""
    result: list[tuple[Origin | None, str]] = []
    last: Origin | None = None
    for line in rendered.split("\n"):
        marks = _TEXT_MARK.findall(line)
        text = _MARK.sub("", line)
        if marks:
            last = (int(marks[0][0]), int(marks[0][1]))
        elif last is not None:  # a line a tag or an expression made: it follows the last marked one
            last = (last[0], last[1] + 1)
        result.append((last, text))
    return result


def split_marks(rendered: str) -> list[tuple[int | None, str]]:
    """Each output line with the template line that produced it (None: unknown), whatever its file."""
    return [(None if origin is None else origin[1], text) for origin, text in split_origins(rendered)]


class _Loader(jinja2.BaseLoader):
    """``layoutgen/templates/<name>``: layoutgen's kernel bodies; anything else a path under the root.

    Both are marked with their file's number and their line numbers. Every file it reads is remembered,
    so that a failure in an included template can be reported at that template's line, and its lines
    in the output named by their own file.
    """

    def __init__(self, root: Path, folders: tuple[Path, ...]) -> None:
        self.root = root
        self.folders = folders  # the project's template folders, searched after the including one's
        self.numbers: dict[str, int] = {}  # each file read -> its number in the line marks
        self.missing: dict[str, str] = {}  # a name join() found nowhere -> where it looked

    @property
    def files(self) -> set[str]:
        return set(self.numbers)

    def _path(self, template: str) -> Path:
        if template.startswith(_SHIPPED):  # kernel bodies layoutgen ships
            return PACKAGE_TEMPLATES / template[len(_SHIPPED):]
        return Path(template) if Path(template).is_absolute() else self.root / template

    def join(self, template: str, parent: str) -> str:
        """The file an include of ``template`` in ``parent`` names: in ``parent``'s folder, else in the
        first template folder that has it. Found nowhere: the name in ``parent``'s folder, which
        :meth:`get_source` reports with every place it looked."""
        folders = (self._path(parent).parent, *self.folders)
        for folder in folders:
            if (folder / template).is_file():
                return str(folder / template)
        name = str(folders[0] / template)
        own = f"`{template}` is not in the template's folder (`{_shown(folders[0], self.root)}/`)"
        others = ", ".join(f"`{_shown(f, self.root)}/`" for f in folders[1:])
        self.missing[name] = (f"{own} or a folder of `templates` ({others})" if others else
                              f"{own}, and `templates` in [tool.layoutgen] names no other folder")
        return name

    def get_source(
        self, environment: jinja2.Environment, template: str
    ) -> tuple[str, str, Callable[[], bool]]:
        path = self._path(template)
        if not path.is_file():
            raise jinja2.TemplateNotFound(template, self.missing.get(template))
        source = _read(path)
        mtime = path.stat().st_mtime
        number = self.numbers.setdefault(str(path), len(self.numbers))
        return mark_lines(source, number), str(path), lambda: path.stat().st_mtime == mtime


def _shown(folder: Path, root: Path) -> str:
    """A folder as messages name it: under the root relative to it, layoutgen's own as `layoutgen/templates`."""
    for base, prefix in ((PACKAGE_TEMPLATES, _SHIPPED.rstrip("/")), (root, "")):
        try:
            rel = folder.resolve().relative_to(base.resolve()).as_posix()
        except ValueError:
            continue
        return "/".join(p for p in (prefix, "" if rel == "." else rel) if p) or "."
    return folder.as_posix()


class _KernelEnvironment(jinja2.Environment):
    """Kernel templates' environment: includes and imports resolve through :meth:`_Loader.join`."""

    def join_path(self, template: str, parent: str) -> str:
        loader = self.loader
        return loader.join(template, parent) if isinstance(loader, _Loader) else template


def _read(path: Path) -> str:
    """A template's text; TemplateEncodingError (an LG402 at its line) when it is not UTF-8."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TemplateEncodingError(path, data, exc) from None


def template_files(root: Path, folders: tuple[Path, ...] = ()) -> frozenset[str]:
    """Every template file the environment of ``root`` (and ``folders``) has read (for locating errors)."""
    loader = environment(root, folders).loader
    return frozenset(loader.numbers) if isinstance(loader, _Loader) else frozenset()


def marked_file(root: Path, folders: tuple[Path, ...], number: int) -> str:
    """The path of the file that the line marks of that environment number ``number``."""
    loader = environment(root, folders).loader
    names = list(loader.numbers) if isinstance(loader, _Loader) else []
    return names[number]


def c_float(value: float) -> str:
    """A C float literal that round-trips: ``1.5f``."""
    text = repr(float(value))
    if "inf" in text or "nan" in text:
        raise ValueError(f"no C literal for {value}")
    return (text if ("." in text or "e" in text) else text + ".0") + "f"


def c_int(value: int) -> str:
    """A C integer literal, 64-bit where it needs to be."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"c_int takes an integer, got {value!r}")
    return f"{value}LL" if not -(2**31) <= value < 2**31 else str(value)


_OPTIONS: dict[str, Any] = dict(
    undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
    autoescape=False,
)


@functools.lru_cache(maxsize=8)
def environment(root: Path, folders: tuple[Path, ...] = ()) -> jinja2.Environment:
    """The environment of the kernel templates of one project root and its template folders (cached)."""
    env = _KernelEnvironment(loader=_Loader(root, folders), **_OPTIONS)
    env.filters.update(c_float=c_float, c_int=c_int, c_string=c_string, py=repr)
    return env


def _placed(value: object) -> object:
    """What a skeleton may place: text an escaper made, or an integer. Anything else is layoutgen's bug."""
    if isinstance(value, Escaped) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    raise TypeError(f"a skeleton placed {value!r} without an escaper (py_literal, py_docstring, cpp_comment, ...)")


@functools.lru_cache(maxsize=1)
def skeletons() -> jinja2.Environment:
    """The environment of the generated files' skeletons (``layoutgen/templates/*.j2``).

    Every ``{{ }}`` must go through one of the escapers of :mod:`layoutgen.codegen.escape`: the
    environment's ``finalize`` refuses a string that did not, so no spec text can reach a generated
    file unescaped, whatever a skeleton places.
    """
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(PACKAGE_TEMPLATES), finalize=_placed, **_OPTIONS)
    env.filters.update(
        c_int=lambda v: Escaped(c_int(v)), c_string=c_string, c_include=c_include, c_ident=c_ident,
        cpp_code=cpp_code, cpp_comment=cpp_comment, py_comment=py_comment, py_docline=py_docline,
        py_docstring=py_docstring, py_literal=py_literal,
    )
    return env
