"""``layoutgen check --compile``: NVRTC-compile every generated kernel offline.

Each error keeps NVRTC's whole text and lands at the user's line: errors in a
kernel's body are at the template's line already (``#line``); an error in the
spec's views header is placed at the template line that instantiated it, else
at the declaration whose view it is in (the struct around the line names the
view; its declaration comes from the loaded spec, as the header names no line
of it), and names the header by its path under the project root. What is one cause is one diagnostic: an arch NVRTC does not
compile for, or an error in the header that every kernel includes.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from ..codegen.debug_headers import COPIES
from ..codegen.render import struct_sites, view_struct_names
from ..codegen.source_shim import entry_diagnostics
from ..declare.kernels import Binding
from ..declare.source_kernels import SourceKernel
from ..runtime.cache import CacheError, CubinCache
from ..runtime.device_library import library_names
from ..runtime.nvrtc import CompileError, CompileRequest, HeaderFolderError, LogError, check_arch, parse_log
from ..schema.diagnostics import Diagnostic, Site
from .config import Config
from .process import SpecResult

# A struct of the views header (layoutgen/templates/views.cuh.j2): each view's and its row tag's.
_STRUCT = re.compile(r"^struct (?P<name>\w+)\b")
# What NVRTC says of an `#include` it cannot find: `cannot open source file "helpers.cuh"`.
_MISSING_HEADER = "cannot open source file"


def compile_results(
    results: Sequence[SpecResult], config: Config, *, report: bool = False, progress: bool = True
) -> list[Diagnostic]:
    """Compile each rendered kernel (through the cubin cache, so this also warms it).

    A cache that is unsafe (LG512) or unusable (LG513) is reported once, like a compile error; so is an
    arch NVRTC does not compile for, or NVRTC missing, checked before any kernel is compiled.
    """
    cache = CubinCache(config.cache_path) if config.cache_path else CubinCache.default()
    jobs: list[tuple[str, str, tuple[tuple[str, str], ...], dict[str, str], dict[str, Site]]] = []
    entries: dict[str, tuple[Binding, str, dict[str, str]]] = {}  # the kernels of SourceKernels, by path
    for result in results:
        if result.spec is None or not result.files:
            continue
        # A kernel includes its spec's header by file name; the header's path under the root names it to users.
        names = {path.rsplit("/", 1)[-1]: path for path in result.files
                 if path.endswith(".cuh") and f"/{COPIES}/" not in path}
        # The debug build's copies of the project's headers (not on disk during `check`) by their include name,
        # the first folder's first: found before the project's folders, as the debug module finds them.
        for path in sorted(result.files, key=_copy_order):
            if f"/{COPIES}/" in path:
                names.setdefault(path.split(f"/{COPIES}/", 1)[1].split("/", 1)[1], path)
        texts = tuple(sorted((name, result.files[path]) for name, path in names.items()))
        sites = struct_sites(result.spec)
        structs = view_struct_names(result.spec)
        entries.update({f"{config.out}/{result.spec.name}/{b.name}.cu": (b, result.spec.name, structs)
                        for b in result.spec.kernels if isinstance(b.kernel, SourceKernel)})
        jobs.extend((path, text, texts, names, sites) for path, text in sorted(result.files.items())
                    if path.endswith(".cu") and f"/{COPIES}/" not in path)
    if not jobs:
        return []
    try:
        check_arch(config.arch)
    except CompileError as exc:  # the same for every kernel: say it once, and compile nothing
        return list(exc.diagnostics)
    diags: list[Diagnostic] = []
    show = progress and sys.stderr.isatty()
    for n, (path, text, headers, names, sites) in enumerate(jobs, start=1):
        if show:
            print(f"\rcompiling {n}/{len(jobs)} {path}\x1b[K", end="", file=sys.stderr, flush=True)
        request = CompileRequest(source=text, name=path, headers=headers, arch=config.arch, report=report,
                                 include_dirs=tuple(str(folder) for folder in config.include_paths))
        try:
            compiled = cache.get_or_compile(request)
        except CompileError as exc:
            errors = [_header_hint(e, config) for e in parse_log(exc.log)]
            found = ([placed(e, names, dict(headers), path, config.root, sites) for e in errors] if errors else
                     [_at_root(d, config.root) for d in exc.diagnostics])
            if path in entries:  # a SourceKernel's entry that takes other types: LG225/LG226 alone say it
                binding, spec_name, structs = entries[path]
                found = entry_diagnostics(binding, [e.message for e in errors], spec_name, structs) or found
            # One cause, one diagnostic: a header's error comes with every kernel, and one line can reach
            # the same error twice (`x.row(0) + r * n + c` is two additions on a row).
            seen = {_cause(d) for d in diags}
            for d in found:
                if _cause(d) not in seen:
                    seen.add(_cause(d))
                    diags.append(d)
            continue
        except (CacheError, HeaderFolderError) as exc:  # LG512/LG513/LG514: the same for every kernel
            if exc.diagnostic not in diags:
                diags.append(exc.diagnostic)
            continue
        if report:
            for r in compiled.resources:
                diags.append(Diagnostic(
                    "LG505", f"{r.kernel}: {r.registers} registers, {r.spill_stores} bytes spill stores, "
                    f"{r.spill_loads} bytes spill loads, {r.stack_frame} bytes stack frame ({config.arch})",
                    Site(str(config.root / path), 1),
                ))
    if show:
        print("\r\x1b[K", end="", file=sys.stderr, flush=True)
    return diags


def _copy_order(path: str) -> tuple[int, str]:
    """A header copy's folder number, then its path: the order NVRTC would search them in."""
    _, copy, rest = path.partition(f"/{COPIES}/")
    number, _, name = rest.partition("/")
    return (int(number), name) if copy and number.isdigit() else (-1, path)


def _header_hint(error: LogError, config: Config) -> LogError:
    """``error`` with a hint that names the project's header folders, where it is a header NVRTC did not find."""
    if _MISSING_HEADER not in error.message:
        return error
    folders = ", ".join(f"`{folder}/`" for folder in config.include)
    searched = (f"project headers are searched in {folders} (`include` in [tool.layoutgen])" if folders else
                'project headers are searched in the folders of `include` in [tool.layoutgen], which names none: '
                'add the folder of yours (`include = ["cuda/include"]`)')
    return replace(error, hint=f"{searched}; CUDA headers in the nvidia-cuda-runtime wheel and the CUDA toolkit, "
                   "or `LAYOUTGEN_CUDA_INCLUDE`")


def placed(error: LogError, names: Mapping[str, str], headers: Mapping[str, str], kernel: str,
           root: Path, sites: Mapping[str, Site]) -> Diagnostic:
    """LG501 for one error of the log of ``kernel`` (its path under ``root``), at the user's line.

    ``names`` maps each header's include name to its path under the root, ``headers`` to its text;
    ``sites`` each view struct of the headers to its view's declaration (:func:`struct_sites`).
    An error in a header (a generated one, or the device library's) goes to the last place the instantiations
    name outside generated code and the library (the template line that asked for it), else to the declaration
    of the view it is in, else to the header itself; the message names the header's line by its path under the
    root (the library's by its include name, `lg/field.cuh`).
    """
    library = library_names()  # the device library's files, as NVRTC names them, to `lg/field.cuh`
    shown = {**names, **library}
    site = error.site
    if site is None or site.path not in shown:  # a template's line, the kernel file's, or none: as NVRTC says
        return _at_root(Diagnostic("LG501", error.text(shown), site, error.hint), root)
    header = f"{shown[site.path]}:{site.line}"
    declared = declared_at(headers[site.path], site.line, sites) if site.path in headers else None
    generated = {*shown, kernel}
    user = next((s for s in reversed(error.instantiated_at) if s.path not in generated), None)
    view = f", the view declared at {Site(str(root / declared.path), declared.line)}" if declared else ""
    if user is not None:
        return _at_root(Diagnostic("LG501", error.text(shown, f"in {header}{view}, instantiated here"), user,
                                   error.hint), root)
    if declared is not None:
        return Diagnostic("LG501", error.text(shown, f"in {header}, the view generated from this declaration"),
                          Site(str(root / declared.path), declared.line), error.hint)
    if site.path in library:  # reached from no line of the user's: the library's own line
        return Diagnostic("LG501", error.text(shown), site, error.hint)
    return Diagnostic("LG501", error.text(shown), Site(str(root / names[site.path]), site.line), error.hint)


def declared_at(header: str, line: int, sites: Mapping[str, Site]) -> Site | None:
    """The declaration of the view whose struct holds ``line`` of a views header, or None where the line is
    in no view's struct (the header's own lines above its views: the device library's ``#include``). ``sites`` maps the view structs' names to their
    declarations: the header names no spec line (a comment added above a declaration must change no
    generated byte), so they come from the loaded spec. The struct is the nearest one opened in the first
    column at or above ``line``."""
    lines = header.splitlines()
    for text in reversed(lines[: max(line, 0)]):
        if m := _STRUCT.match(text):
            return sites.get(m["name"])
    return None


def _cause(diag: Diagnostic) -> tuple[str, Site | None, str]:
    """What makes two compile errors one: the code, the place and the message's first line."""
    return diag.code, diag.site, diag.message.split("\n", 1)[0]


def _at_root(diag: Diagnostic, root: Path) -> Diagnostic:
    """``diag`` with a relative site made absolute under the project root (shown relative to the cwd)."""
    if diag.site is None or Path(diag.site.path).is_absolute():
        return diag
    return replace(diag, site=Site(str(root / diag.site.path), diag.site.line))
