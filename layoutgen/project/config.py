"""The project's settings: ``[tool.layoutgen]`` in ``pyproject.toml``.

One frozen :class:`Config`, read by :func:`load_config` from the nearest
``pyproject.toml`` and overridden by the command line. Every value is checked
on the way in; a bad one raises :class:`ConfigError` naming the key, what it
must be, what it got and where it came from.
"""

from __future__ import annotations

import difflib
import json
import os
import posixpath
import re
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from ..checks.suppress import can_ignore
from ..schema.diagnostics import CODES, display_path
from .root import find_root as find_root  # re-exported: where the project is
from .selection import Selection, why_not_ignored

#: Every key of ``[tool.layoutgen]``, with a one-line description and its
#: default; the configuration docs are generated from this table.
KEYS: dict[str, str] = {
    "specs": "spec modules to generate from, paths relative to the project root (default: none)",
    "out": 'folder for generated code, relative to the project root (default: "generated")',
    "arch": 'GPU architecture NVRTC compiles for, like "sm_90" or "sm_90a" (default: "sm_90")',
    "cache_dir": "folder for compiled kernels, relative to the project root (default: layoutgen's user cache)",
    "debug": "generate the debug build: bounds-checked accessors and a NaN/Inf scan after each launch "
             "(default: false)",
    "select": 'diagnostic codes or prefixes to report among those that can be turned off, like ["LG4"] '
              "(default: all)",
    "ignore": 'diagnostic codes or prefixes not to report, like ["LG401", "LG303"]; only warnings, notes and '
              "the lint's LG401/LG403 can be ignored (default: none)",
    "warnings_as_errors": "count every warning as an error: in the exit status, the summary, and what stops "
                          "`generate` (default: false)",
    "include": 'folders of project CUDA headers that kernels `#include`, relative to the project root, like '
               '["cuda/include"]; NVRTC searches them before the CUDA headers (default: none)',
    "templates": "folders that `{% include %}`, `{% import %}` and `{% from %}` in kernel templates search after "
                 "the template's own folder, relative to the project root (default: none)",
    "build_archs": 'GPU architectures `layoutgen build` compiles every kernel for, into the generated packages, like '
                   '["sm_80", "sm_90"] (default: none)',
}

_ARCH_RE = re.compile(r"sm_\d+a?")
_BUILD_ARCH_RE = re.compile(r"sm_\d{2,3}[af]?")  # a cubin's: the `f` (family) form too
_CODE_PREFIX = re.compile(r"LG\d{0,3}")


class ConfigError(ValueError):
    """A setting in ``[tool.layoutgen]`` or an override is unknown or invalid."""


class _Invalid(Exception):
    """Raised by a checker with what the value must be (and which part of it is not, for a list); the caller
    adds the rest."""

    def __init__(self, expected: str, got: str | None = None) -> None:
        super().__init__(expected)
        self.expected = expected
        self.got = got


def _path_text(value: object) -> str:
    """A non-empty path as text; accepts str and os.PathLike (for overrides)."""
    if isinstance(value, os.PathLike):
        value = Path(value).as_posix()
    if not isinstance(value, str) or not value:
        raise _Invalid("a non-empty path")
    return value


def _check_specs(value: object) -> tuple[str, ...]:
    expected = 'a list of paths to spec modules, like ["examples/vsn/spec.py"]'
    if not isinstance(value, (list, tuple)):
        raise _Invalid(expected)
    try:
        return tuple(_path_text(item) for item in value)
    except _Invalid:
        raise _Invalid(expected) from None


def _check_out(value: object) -> str:
    expected = 'a folder inside the project, like "generated"'
    try:
        text = _path_text(value)
    except _Invalid:
        raise _Invalid(expected) from None
    # The output folder is written into generated code and compared as a '/'-path:
    # a backslash would be a separator on Windows and a letter elsewhere.
    if "\\" in text:
        raise _Invalid('a folder inside the project with "/" between its parts, like "generated"')
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in text):
        raise _Invalid('a folder inside the project named without control characters, like "generated"')
    pure = PurePosixPath(text)
    # Output folders are scanned for generated files to delete: keep them
    # inside the project, never the project root itself.
    if pure.is_absolute() or PureWindowsPath(text).is_absolute() or ".." in pure.parts or str(pure) == ".":
        raise _Invalid(expected)
    return str(pure)


def _check_folders(value: object, example: str, *, inside: bool) -> tuple[str, ...]:
    """Folders under (or, unless ``inside``, beside) the project, each as a normalised relative '/'-path.

    Generated code names them relative to the project or to its own folder (:meth:`Config.include_from`),
    so a folder must be relative to the root: an absolute one would be a path of this machine in it.
    """
    expected = f"a list of folders relative to the project root, like [{_shown(example)}]"
    if not isinstance(value, (list, tuple)):
        raise _Invalid(expected)
    out = []
    for item in value:
        try:
            text = _path_text(item)
        except _Invalid:
            raise _Invalid(expected) from None
        if "\\" in text or any(ord(c) < 0x20 or ord(c) == 0x7F for c in text):
            raise _Invalid(f'{expected}, with "/" between their parts and no control characters', _shown(text))
        if PurePosixPath(text).is_absolute() or PureWindowsPath(text).is_absolute() or text.startswith("~"):
            raise _Invalid(expected, f"{_shown(text)}, which is not relative: generated modules would name a "
                           "path of this machine")
        folder = posixpath.normpath(text)
        if inside and (folder == ".." or folder.startswith("../")):
            raise _Invalid(expected, f"{_shown(text)}, which is outside the project: `#line` directives to its "
                           "templates would name a path of this machine")
        out.append(folder)
    return tuple(out)


def _check_include(value: object) -> tuple[str, ...]:
    return _check_folders(value, "cuda/include", inside=False)  # headers may lie beside it: no path is written


def _check_templates(value: object) -> tuple[str, ...]:
    return _check_folders(value, "cuda/templates", inside=True)


def _check_arch(value: object) -> str:
    if not isinstance(value, str) or not _ARCH_RE.fullmatch(value):
        raise _Invalid('a string like "sm_90"')
    return value


def _check_build_archs(value: object) -> tuple[str, ...]:
    expected = 'a list of architectures like ["sm_80", "sm_90"]'
    if not isinstance(value, (list, tuple)):
        raise _Invalid(expected)
    for item in value:
        if not isinstance(item, str) or not _BUILD_ARCH_RE.fullmatch(item):
            raise _Invalid(expected, f"{_shown(item)} in {_shown(value)}")
    return tuple(value)


def _check_cache_dir(value: object) -> str | None:
    if value is None:
        return None
    try:
        return _path_text(value)
    except _Invalid:
        raise _Invalid('a path to a folder, like ".cache/layoutgen"') from None


def _check_debug(value: object) -> bool:
    if not isinstance(value, bool):
        raise _Invalid("true or false")
    return value


_CODES_EXAMPLE = 'a list of diagnostic codes or their prefixes, like ["LG401", "LG3"]'


def _codes(value: object) -> tuple[str, ...]:
    """A list of codes or prefixes, each naming at least one registered code."""
    if not isinstance(value, (list, tuple)) or not all(isinstance(item, str) for item in value):
        raise _Invalid(_CODES_EXAMPLE)
    for item in value:
        if not _CODE_PREFIX.fullmatch(item) or not any(code.startswith(item) for code in CODES):
            raise _Invalid(_CODES_EXAMPLE, f"{_shown(item)}, which is no code and no prefix of one")
    return tuple(value)


def _check_select(value: object) -> tuple[str, ...]:
    return _codes(value)


def _check_ignore(value: object) -> tuple[str, ...]:
    codes = _codes(value)
    ignorable = ", ".join(sorted(c for c in CODES if can_ignore(c)))
    for item in codes:
        why = why_not_ignored(item)
        if why is not None:
            raise _Invalid(f"a list of codes that can be ignored ({ignorable}) or their prefixes", f"{_shown(item)}: {why}")
    return codes


_CHECKS: dict[str, Callable[[object], object]] = {
    "specs": _check_specs,
    "out": _check_out,
    "arch": _check_arch,
    "cache_dir": _check_cache_dir,
    "debug": _check_debug,
    "select": _check_select,
    "ignore": _check_ignore,
    "warnings_as_errors": _check_debug,
    "include": _check_include,
    "templates": _check_templates,
    "build_archs": _check_build_archs,
}


def _shown(value: object) -> str:
    """A value as the user would write it in TOML: "text", true, [1, 2]."""
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def _check(key: str, value: object, label: str, source: str) -> object:
    try:
        return _CHECKS[key](value)
    except _Invalid as bad:
        where = f" ({source})" if source else ""
        got = _shown(value) if bad.got is None else bad.got
        raise ConfigError(f"`{label}` must be {bad.expected}, got {got}{where}") from None


@dataclass(frozen=True)
class Config:
    """layoutgen's settings for one project; build it with :func:`load_config`.

    ``specs``, ``out`` and a relative ``cache_dir`` are relative to ``root``.
    Values are checked on construction too (ConfigError).
    """

    root: Path
    specs: tuple[str, ...] = ()
    out: str = "generated"
    arch: str = "sm_90"
    cache_dir: str | None = None
    debug: bool = False
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    warnings_as_errors: bool = False
    include: tuple[str, ...] = ()
    templates: tuple[str, ...] = ()
    build_archs: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for key in KEYS:
            object.__setattr__(self, key, _check(key, getattr(self, key), f"Config.{key}", ""))

    @property
    def selection(self) -> Selection:
        """Which diagnostics a run reports, and whether warnings count as errors."""
        return Selection(self.select, self.ignore, self.warnings_as_errors)

    @property
    def spec_paths(self) -> tuple[Path, ...]:
        """The spec modules as paths under the root."""
        return tuple(self.root / s for s in self.specs)

    @property
    def out_path(self) -> Path:
        """The output folder as a path under the root."""
        return self.root / self.out

    @property
    def cache_path(self) -> Path | None:
        """The cache folder (``~`` expanded, relative to the root), or None for the default."""
        return None if self.cache_dir is None else self.root / Path(self.cache_dir).expanduser()

    def cache_dir_from(self, folder: str) -> str | None:
        """``cache_dir`` as generated code in ``folder`` (relative to the root) names it, or None.

        A relative ``cache_dir`` becomes relative to ``folder`` ("../../.cache"), so generated
        files name no absolute path; an absolute one, or one under ``~``, is kept as written.
        """
        if self.cache_dir is None:
            return None
        if self.cache_dir.startswith("~") or Path(self.cache_dir).is_absolute():
            return self.cache_dir
        return posixpath.relpath(posixpath.normpath(self.cache_dir), posixpath.normpath(folder))


    @property
    def include_paths(self) -> tuple[Path, ...]:
        """The project's header folders (``include``) as paths under the root, in search order."""
        return tuple(self.root / folder for folder in self.include)

    @property
    def template_paths(self) -> tuple[Path, ...]:
        """The project's template folders (``templates``) as paths under the root, in search order."""
        return tuple(self.root / folder for folder in self.templates)

    def include_from(self, folder: str) -> tuple[str, ...]:
        """``include`` as generated code in ``folder`` (relative to the root) names it: ("../../cuda/include",).

        Relative to ``folder``, so a generated module finds the headers wherever the project lies, and
        names no path of the machine that generated it.
        """
        return tuple(posixpath.relpath(d, posixpath.normpath(folder)) for d in self.include)


def project_start(specs: Sequence[str], cwd: Path) -> Path:
    """Where a command looks for its project: the folder of the first SPEC that lies in one (``specs`` are
    the command line's, relative to ``cwd``), as ruff and mypy find a file's settings from its own folder;
    ``cwd`` where none is given or none lies in a project. Raises :class:`ConfigError` for specs of two
    projects: one run has one root, one output folder and one set of settings."""
    found: dict[Path, Path] = {}  # root -> the first spec found in it
    for given in specs:
        path = (cwd / given).resolve()
        root = find_root(path)
        if root is not None:
            found.setdefault(root, path)
    if len(found) > 1:
        (first, one), (second, other) = list(found.items())[:2]
        raise ConfigError(f"the specs given belong to two projects: {one} to {first} and {other} to {second}; "
                          "run layoutgen once for each")
    return next(iter(found.values()), cwd)


def _unknown(key: str, problem: str) -> ConfigError:
    close = difflib.get_close_matches(key, KEYS, n=1)
    if close:
        advice = f"did you mean `{close[0]}`?"
    else:
        advice = "known keys: " + ", ".join(f"`{k}`" for k in KEYS)
    return ConfigError(f"{problem}; {advice}")


def _read_table(pyproject: Path) -> dict[str, object]:
    """The ``[tool.layoutgen]`` table of a pyproject.toml; empty when it has none."""
    source = display_path(str(pyproject))
    try:
        with pyproject.open("rb") as f:
            data = tomllib.load(f)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source} is not valid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"cannot read {source}: {exc.strerror}") from None
    tool = data.get("tool", {})
    table = tool.get("layoutgen", {}) if isinstance(tool, dict) else {}
    if not isinstance(table, dict):
        raise ConfigError(f"`[tool.layoutgen]` must be a table, got {_shown(table)} ({source})")
    return table


def load_config(start: Path | None = None, overrides: Mapping[str, object] | None = None) -> Config:
    """Read the settings of the project that holds ``start`` (default: the cwd).

    The root is the nearest folder with a ``pyproject.toml``, or ``start``
    itself when there is none (then every setting has its default).
    ``overrides`` (from the command line) replace file values; None values
    are ignored. Raises :class:`ConfigError` for an unknown key, a value of
    the wrong type or form, or a pyproject.toml that cannot be read.
    """
    start = (start or Path.cwd()).resolve()
    root = find_root(start)
    values: dict[str, Any] = {}  # Any: each value passed _check, which fixes its type
    if root is None:
        root = start.parent if start.is_file() else start
    else:
        pyproject = root / "pyproject.toml"
        source = display_path(str(pyproject))
        table = _read_table(pyproject)
        for key in sorted(table):
            if key not in KEYS:
                raise _unknown(key, f"`[tool.layoutgen]` has no key `{key}` ({source})")
        for key in KEYS:
            if key in table:
                values[key] = _check(key, table[key], f"[tool.layoutgen].{key}", source)
    for key, value in sorted((overrides or {}).items()):
        if key not in KEYS:
            raise _unknown(key, f"there is no setting `{key}` to override")
        if value is not None:
            values[key] = _check(key, value, key, "override")
    return Config(root, **values)
