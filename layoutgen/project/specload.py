"""Importing a spec module and finding its :class:`Spec`.

A spec that raises while it is imported (a bad layout, a malformed kernel)
is reported as a diagnostic at the user's line instead of a traceback.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

from ..declare.spec import Spec
from ..schema.diagnostics import Diagnostic, LayoutgenError, Site, display_path


@dataclass(frozen=True)
class Loaded:
    """A spec module's :class:`Spec`, or the diagnostics that stopped it loading."""

    path: Path
    spec: Spec | None
    diagnostics: tuple[Diagnostic, ...]


def _module_name(path: Path) -> str:
    digest = hashlib.sha256(str(path).encode()).hexdigest()[:12]
    return f"layoutgen_spec_{path.stem}_{digest}"


def _last_user_frame(exc: BaseException, path: Path) -> Site | None:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename).resolve() == path]
    return Site(str(path), frames[-1].lineno or 0) if frames else Site(str(path), 1)


def load_spec(path: str | Path) -> Loaded:
    """Import ``path`` and return its one ``Spec``."""
    resolved = Path(path).resolve()
    if not resolved.is_file():
        return Loaded(resolved, None, (Diagnostic("LG504", f"spec module {display_path(str(resolved))} does not exist"),))
    name = _module_name(resolved)
    module_spec = importlib.util.spec_from_file_location(name, resolved)
    if module_spec is None or module_spec.loader is None:
        return Loaded(resolved, None, (Diagnostic("LG504", f"{display_path(str(resolved))} is not a Python module"),))
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module  # dataclasses and pickling look modules up by name
    # Like `python spec.py`: the spec's folder is importable while it loads, so
    # a spec can import its neighbours; they are forgotten afterwards.
    folder = str(resolved.parent)
    before = set(sys.modules)
    sys.path.insert(0, folder)
    try:
        module_spec.loader.exec_module(module)
    except LayoutgenError as exc:
        return Loaded(resolved, None, (exc.diagnostic,))
    except Exception as exc:  # the user's module failed: report where, not how layoutgen saw it
        message = f"importing the spec raised {type(exc).__name__}: {exc}"
        return Loaded(resolved, None, (Diagnostic("LG504", message, _last_user_frame(exc, resolved)),))
    finally:
        sys.modules.pop(name, None)
        if folder in sys.path:
            sys.path.remove(folder)
        for extra in set(sys.modules) - before:
            origin = getattr(sys.modules[extra], "__file__", None) or ""
            if origin.startswith(folder):
                del sys.modules[extra]
    specs = [v for v in vars(module).values() if isinstance(v, Spec)]
    if len(specs) != 1:
        found = "none" if not specs else f"{len(specs)}"
        return Loaded(resolved, None, (Diagnostic(
            "LG504", f"a spec module must define exactly one `Spec(...)`, {display_path(str(resolved))} defines {found}",
            Site(str(resolved), 1), hint='add spec = Spec("name", kernels=[...]) at module level',
        ),))
    return Loaded(resolved, specs[0], ())
