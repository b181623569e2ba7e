"""Importing a spec module and finding its :class:`Spec`.

A spec that raises while it is imported (a bad layout, a malformed kernel)
is reported as a diagnostic at the user's line instead of a traceback; so is
one that exits (``sys.exit()``) or would end the process (``os._exit``, ``os.execv``: refused while it
imports), and a syntax error, at its own line. Ctrl-C
(KeyboardInterrupt) is let through.

Unknown field names (LG111) do not stop the import: each use is recorded
(see :mod:`layoutgen.schema.unknown`) and all of them are reported, each
naming the bindings and launches it reached, so a renamed field shows every
place still to change in one run. A ``Program`` declared in the module but
listed in no ``Spec`` is a warning (LG306).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib.abc import Loader
from dataclasses import dataclass, replace
from pathlib import Path
from types import ModuleType
from typing import NoReturn

from ..declare.kernels import Binding
from ..declare.program import Program
from ..declare.spec import Spec
from ..schema.diagnostics import Diagnostic, LayoutgenError, Site, display_path
from ..schema.unknown import UnknownField, collecting_unknown_fields
from .specfind import SPEC_FILE, spec_files_under


@dataclass(frozen=True)
class Loaded:
    """A spec module's :class:`Spec` (and its warnings), or the diagnostics that stopped it loading."""

    path: Path
    spec: Spec | None
    diagnostics: tuple[Diagnostic, ...]


def _module_name(path: Path) -> str:
    digest = hashlib.sha256(str(path).encode()).hexdigest()[:12]
    return f"layoutgen_spec_{path.stem}_{digest}"


def _last_user_frame(exc: BaseException, path: Path) -> Site | None:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename).resolve() == path]
    return Site(str(path), frames[-1].lineno or 0) if frames else Site(str(path), 1)


def _raised(exc: Exception, path: Path) -> Diagnostic:
    """LG504 for an exception the module raised: at the last line of the module in the traceback, or, for
    a syntax error (which has no frame of its own), at the line and column Python names, with that line."""
    if isinstance(exc, SyntaxError) and exc.filename and exc.lineno:
        message = f"importing the spec raised {type(exc).__name__}: {exc.msg}"
        text = (exc.text or "").rstrip("\r\n")
        if text.strip():
            code = text.lstrip()
            message += f"\n    {code}"
            if exc.offset:  # 1-based, counted in the line as written
                message += "\n    " + " " * max(exc.offset - 1 - (len(text) - len(code)), 0) + "^"
        return Diagnostic("LG504", message, Site(exc.filename, exc.lineno))
    message = f"importing the spec raised {type(exc).__name__}: {exc}"
    return Diagnostic("LG504", message, _last_user_frame(exc, path))


class _Ended(BaseException):
    """A spec called a function that ends the process (``os._exit``, ``os.execv``) while it was imported.

    A BaseException, like SystemExit: a spec's ``except Exception`` does not swallow it."""

    def __init__(self, call: str) -> None:
        super().__init__(call)
        self.call = call


#: The functions of `os` (and `posix`, which `os` re-exports) that end the process with no exception, so
#: that `check` would exit with the spec's status having reported nothing: refused while a spec imports.
#: (`os.execl`, `os.execvp`, ... call `os.execv` or `os.execve`; `os.abort` and signals end it nonzero.)
_ENDING = ("_exit", "execv", "execve")


def _refused(name: str) -> Callable[..., NoReturn]:
    def refuse(*args: object, **kwargs: object) -> NoReturn:
        raise _Ended(f"os._exit({args[0]!r})" if name == "_exit" and args else f"os.{name}")

    return refuse


@contextmanager
def _process_kept() -> Iterator[None]:
    """While a spec imports, the functions that would end the process raise :class:`_Ended` instead."""
    modules = [m for m in (os, sys.modules.get("posix"), sys.modules.get("nt")) if m is not None]
    saved = [(m, n, getattr(m, n)) for m in modules for n in _ENDING if hasattr(m, n)]
    for m, n, _ in saved:
        setattr(m, n, _refused(n))
    try:
        yield
    finally:
        for m, n, f in saved:
            setattr(m, n, f)


def _import(module: ModuleType, loader: Loader, path: Path) -> tuple[list[UnknownField], Diagnostic | None]:
    """Run the module; the unknown field names it used, and what stopped it (None when it ran to its end)."""
    with collecting_unknown_fields() as unknown:
        try:
            with _process_kept():
                loader.exec_module(module)
        except _Ended as exc:  # the process would have ended here, with the spec's status and no report
            return unknown, Diagnostic(
                "LG504", f"importing the spec called {exc.call}: a spec module must not end the process while "
                "layoutgen imports it", _last_user_frame(exc, path),
                hint='put what runs the module as a script under `if __name__ == "__main__":`',
            )
        except LayoutgenError as exc:
            return unknown, exc.diagnostic
        except SystemExit as exc:  # sys.exit() in the module would end the command having checked nothing
            message = (f"importing the spec raised SystemExit({exc.code!r}): a spec module must not exit while "
                       "layoutgen imports it")
            return unknown, Diagnostic(
                "LG504", message, _last_user_frame(exc, path),
                hint='put what runs the module as a script under `if __name__ == "__main__":`',
            )
        except Exception as exc:  # the user's module failed: report where, not how layoutgen saw it
            return unknown, _raised(exc, path)
    return unknown, None


def _in_folder(module: object, folder: str) -> bool:
    """Whether ``module`` was imported from a file in ``folder`` or below it."""
    origin = getattr(module, "__file__", None) or ""
    return origin.startswith(folder + os.sep)


def load_spec(path: str | Path) -> Loaded:
    """Import ``path`` and return its one ``Spec``."""
    resolved = Path(path).resolve()
    if resolved.is_dir():
        return Loaded(resolved, None, (_folder(resolved),))
    if not resolved.is_file():
        return Loaded(resolved, None, (Diagnostic("LG504", f"spec module {display_path(str(resolved))} does not exist"),))
    name = _module_name(resolved)
    module_spec = importlib.util.spec_from_file_location(name, resolved)
    if module_spec is None or module_spec.loader is None:
        return Loaded(resolved, None, (Diagnostic(
            "LG504", f"{display_path(str(resolved))} is not a Python module",
            hint="give a spec module: a .py file that defines a `Spec(...)`"),))
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module  # dataclasses and pickling look modules up by name
    # Like `python spec.py`: the spec's folder is importable while it loads, so
    # a spec can import its neighbours; they are forgotten afterwards.
    # A neighbour imported before (an earlier load in this process, a notebook) may be stale: each load
    # imports the folder's modules afresh, and puts back what was there afterwards.
    folder = str(resolved.parent)
    stale = {n: m for n, m in list(sys.modules.items()) if _in_folder(m, folder)}
    for n in stale:
        del sys.modules[n]
    sys.path.insert(0, folder)
    try:
        unknown, stopped = _import(module, module_spec.loader, resolved)
    finally:
        sys.modules.pop(name, None)
        if folder in sys.path:
            sys.path.remove(folder)
        for extra in [n for n, m in list(sys.modules.items()) if _in_folder(m, folder)]:
            del sys.modules[extra]
        sys.modules.update(stale)
    specs = list({id(v): v for v in vars(module).values() if isinstance(v, Spec)}.values())  # `spec = s = Spec()`
    if unknown:  # what ran after a stand-in may have failed for it: the names come first, then what stopped
        return Loaded(resolved, None, (*_unknown_fields(unknown, module, specs), *([stopped] if stopped else [])))
    if stopped is not None:
        return Loaded(resolved, None, (stopped,))
    if len(specs) != 1:
        return Loaded(resolved, None, (_not_one_spec(specs, resolved),))
    return Loaded(resolved, specs[0], tuple(_unlisted_programs(module, specs[0], resolved)))


def _folder(path: Path) -> Diagnostic:
    """LG504 for a folder where one spec module is wanted, naming the spec modules in it, if any."""
    inside = [display_path(str(p)) for p in spec_files_under(path)]
    if inside:
        return Diagnostic("LG504", f"{display_path(str(path))} is a folder, not a spec module",
                          hint=f"give one of the spec modules in it: {', '.join(inside)}")
    return Diagnostic("LG504", f"{display_path(str(path))} is a folder and holds no spec module",
                      hint=f"give a spec module (a .py file that defines a `Spec(...)`), or a folder that holds one "
                      f"named {SPEC_FILE}")


def _not_one_spec(specs: list[Spec], path: Path) -> Diagnostic:
    """LG504 for a module with no ``Spec`` (at its first line) or several (at the second, naming each)."""
    shown = display_path(str(path))
    if not specs:
        return Diagnostic(
            "LG504", f"a spec module must define exactly one `Spec(...)`, {shown} defines none", Site(str(path), 1),
            hint='add spec = Spec("name", kernels=[...]) at module level',
        )
    ordered = sorted(specs, key=lambda s: s.site.line if s.site else 0)
    listed = _listed([f"`{s.name}` ({s.site})" for s in ordered])
    return Diagnostic(
        "LG504", f"a spec module must define exactly one `Spec(...)`, {shown} defines {len(specs)}: {listed}",
        ordered[1].site or Site(str(path), 1),
        hint="move each spec but one into a module of its own, and list every module in `[tool.layoutgen].specs`",
    )


def _unknown_fields(unknown: list[UnknownField], module: ModuleType, specs: list[Spec]) -> list[Diagnostic]:
    """Each LG111 recorded while the module ran, naming the bindings and launches its stand-in reached.

    A launch of a kernel binds it to the launch's views, so a stand-in given to a launch is named by the
    launch (its kernel's parameter, the launch's place in its program) rather than again by that binding.
    """
    namespace = list(vars(module).values())
    programs = list({id(p): p for p in [*(p for s in specs for p in s.programs),
                                         *(v for v in namespace if isinstance(v, Program))]}.values())
    bindings = list({id(b): b for b in [*(b for s in specs for b in s.kernels),
                                         *(v for v in namespace if isinstance(v, Binding))]}.values())
    uses: dict[int, list[str]] = {}
    named: set[tuple[int, str]] = set()  # (binding, parameter) pairs already named by their launch
    for program in programs:
        for n, launch in enumerate(program.launches, start=1):
            for arg in launch.args:
                uses.setdefault(id(arg.view), []).append(
                    f"`{launch.binding.name}.{arg.param}` in launch {n} of program `{program.name}` ({launch.site})")
                if launch.binding.view(arg.param) is arg.view:
                    named.add((id(launch.binding), arg.param))
    for binding in bindings:
        for param, view in binding.views:
            if (id(binding), param) not in named:
                uses.setdefault(id(view), []).append(f"`{binding.name}.{param}` (bound at {binding.site})")
    out = []
    for u in unknown:
        found = uses.get(id(u.stand_in))
        used = f"; used by {_listed(found)}" if found else ""
        out.append(replace(u.diagnostic, message=u.diagnostic.message + used))
    return out


def _unlisted_programs(module: ModuleType, spec: Spec, path: Path) -> list[Diagnostic]:
    """LG306 for each ``Program`` declared in this module (not imported into it) that ``spec`` does not list."""
    listed = {id(p) for p in spec.programs}
    out = []
    for name, value in vars(module).items():
        if not isinstance(value, Program) or id(value) in listed or value.site is None:
            continue
        if Path(value.site.path).resolve() != path:
            continue
        listed.add(id(value))  # bound to two names: one warning
        out.append(Diagnostic(
            "LG306", f"program `{value.name}` is declared in {display_path(str(path))} but not listed in its spec "
            f"`{spec.name}`, so nothing checks or generates it", value.site,
            hint=f"list it: Spec(\"{spec.name}\", ..., programs=[..., {name}]), or delete it",
        ))
    return out


def _listed(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
