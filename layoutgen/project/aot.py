"""``layoutgen build``: every kernel of every spec compiled ahead of time, into the generated packages.

For each spec, ``<out>/<spec>/cubins/`` gets ``<kernel>.<arch>.cubin`` for
every kernel and arch, and ``manifest.json`` (:mod:`layoutgen.runtime.prebuilt`
says what it holds and how launchers choose from it). A build compiles what
``generate`` writes: the specs are checked and rendered as for ``check``, and
the CLI refuses to build generated files that are not current (LG502), so the
shipped kernels and their cubins are of one source. Compiles go through the
cubin cache with exactly the requests launchers make, and their errors are
reported as ``check --compile`` reports them; a build therefore also warms
the cache, and a second build compiles nothing.

Writes, under the output folder's lock: each cubin atomically where its bytes
changed, then the manifest; then the cubins of an earlier build that the new
manifest does not name (only files named ``<kernel>.<arch>.cubin``). The
manifest carries no ``layoutgen-hash`` marker, so ``generate`` leaves the
folder alone; ``check`` and ``generate --check`` compare it with what the
specs generate now (:func:`stale_prebuilt`, LG520).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ..runtime.cache import CubinCache
from ..runtime.cachefiles import write_atomic
from ..runtime.nvrtc import CompileRequest, nvrtc_version
from ..runtime.paths import PREBUILT_DIR, PREBUILT_MANIFEST, prebuilt_dir
from ..runtime.prebuilt import (
    BuiltCubin, BuiltKernel, Manifest, cubin_name, misfit, read_manifest, sorted_archs, source_digest,
)
from ..runtime.project_headers import project_header_digest
from ..schema.diagnostics import Diagnostic, LayoutgenError, Severity, Site
from ..schema.words import plural
from ..version import __version__
from .compile_all import compile_results
from .config import Config
from .files import linked_folder, outside_project
from .pyproject_lines import table_site
from .process import SpecResult, drift_diagnostics

__all__ = ["BuildOutcome", "build_prebuilt", "build_specs", "kernel_requests", "no_build_archs", "stale_prebuilt"]

_CUBIN_FILE = re.compile(r".+\.sm_\d{2,3}[af]?\.cubin")


def no_build_archs(config: Config) -> Diagnostic:
    """LG521: ``build`` has no arch to build for; at the ``[tool.layoutgen]`` table where there is one."""
    site = table_site(config.root)
    return Diagnostic(
        "LG521", "`layoutgen build` needs the architectures to build for: `[tool.layoutgen].build_archs` is missing "
        "or empty and no --arch was given", site,
        hint='list them under [tool.layoutgen], like `build_archs = ["sm_80", "sm_90"]`, or pass --arch sm_80,sm_90')


def kernel_requests(result: SpecResult, config: Config, arch: str) -> list[tuple[str, CompileRequest]]:
    """(kernel name, request) for each kernel of ``result``, as its generated launcher asks NVRTC for ``arch``:
    the kernel file and the views header as ``generate`` writes them, the project's header folders."""
    spec = result.spec
    if spec is None or not result.files:
        return []
    module_dir = f"{config.out}/{spec.name}"
    header = f"{spec.name}.cuh"
    headers = ((header, result.files[f"{module_dir}/{header}"]),)
    include = tuple(str(folder) for folder in config.include_paths)
    out = []
    for path, text in sorted(result.files.items()):
        folder, _, file = path.rpartition("/")
        if folder == module_dir and file.endswith(".cu"):
            out.append((file[: -len(".cu")], CompileRequest(source=text, name=f"{spec.name}/{file}", headers=headers,
                                                            arch=arch, include_dirs=include)))
    return out


@dataclass(frozen=True)
class BuildOutcome:
    """What ``layoutgen build`` did: its diagnostics, a line per file written or removed, a closing line."""

    diagnostics: tuple[Diagnostic, ...]
    lines: tuple[str, ...] = ()
    summary: str = ""


def build_specs(config: Config, results: Sequence[SpecResult], *, progress: bool = True) -> BuildOutcome:
    """``layoutgen build`` of ``results`` for ``config.build_archs`` (not empty): nothing is compiled unless
    every spec checks clean and its generated files are current (LG502, LG509: the cubins must be of the
    kernels the package ships). Call it holding the output folder's lock."""
    diags = [d for r in results for d in r.diagnostics]
    diags += [d for r in results for d in drift_diagnostics(r, config.root)]
    if any(d.severity is Severity.ERROR for d in config.selection.apply(diags)):
        return BuildOutcome(tuple(diags))
    archs = sorted_archs(config.build_archs)
    built, changed = build_prebuilt(results, config, archs, progress=progress)
    diags += built
    if any(d.severity is Severity.ERROR for d in config.selection.apply(diags)):
        return BuildOutcome(tuple(diags))
    lines = tuple(f"{'wrote' if (config.root / path).exists() else 'removed'} {path}" for path in changed)
    kernels = sum(len(kernel_requests(r, config, archs[0])) for r in results)
    summary = (f"Built {plural(kernels, 'kernel')} for {', '.join(archs)} in {plural(len(results), 'spec')}: "
               f"{plural(len(changed), 'file')} changed.")
    return BuildOutcome(tuple(diags), lines, summary)


def build_prebuilt(results: Sequence[SpecResult], config: Config, archs: Sequence[str], *,
                   progress: bool = True) -> tuple[list[Diagnostic], list[str]]:
    """Compile every kernel of ``results`` for each of ``archs`` and write the cubins and manifests.

    Returns the diagnostics (compile errors at the user's lines, LG501 for an arch NVRTC does not compile for,
    LG511 for a file that cannot be written) and the files written or removed, relative to the root. Nothing
    is written when anything failed to compile. Call it holding the output folder's lock.
    """
    archs = sorted_archs(archs)
    diags = _unwritable(results, config)  # LG510, LG517, LG518: before anything compiles or is written
    if diags:
        return diags, []
    for arch in archs:  # errors at the template's lines, each cause once, the cache warmed
        diags.extend(compile_results(results, replace(config, arch=arch), progress=progress))
    if any(d.severity is Severity.ERROR for d in diags):
        return diags, []
    cache = CubinCache(config.cache_path) if config.cache_path else CubinCache.default()
    headers = project_header_digest(tuple(str(p) for p in config.include_paths)) if config.include else None
    nvrtc = "{}.{}".format(*nvrtc_version())
    changed: list[str] = []
    try:
        for result in results:
            if result.spec is None or not result.files:
                continue
            folder = prebuilt_dir(config.out_path / result.spec.name)
            per_kernel: dict[str, list[BuiltCubin]] = {}
            digests: dict[str, str] = {}
            for arch in archs:
                for name, request in kernel_requests(result, config, arch):
                    data = cache.load(request)  # a hit: compile_results compiled it
                    file = cubin_name(name, arch)
                    if _write_if_changed(folder / file, data):
                        changed.append(_rel(config, folder / file))
                    per_kernel.setdefault(name, []).append(
                        BuiltCubin(arch, file, hashlib.sha256(data).hexdigest(), len(data)))
                    digests[name] = source_digest(request)
            kernels = tuple(BuiltKernel(name, digests[name], headers, tuple(cubins))
                            for name, cubins in sorted(per_kernel.items()))
            manifest = Manifest(__version__, nvrtc, archs, kernels)
            if _write_if_changed(folder / PREBUILT_MANIFEST, manifest.to_json().encode("utf-8")):  # last
                changed.append(_rel(config, folder / PREBUILT_MANIFEST))
            named = {c.file for k in kernels for c in k.cubins}
            for old in sorted(folder.iterdir()):
                if _CUBIN_FILE.fullmatch(old.name) and old.name not in named and not old.is_symlink():
                    old.unlink()
                    changed.append(_rel(config, old))
    except LayoutgenError as exc:  # the cache became unusable (LG512, LG513) since compile_results used it
        diags.append(exc.diagnostic)
    except OSError as exc:
        where = f"`{_rel(config, Path(os.fsdecode(exc.filename)))}`" if exc.filename else f"`{config.out}/`"
        diags.append(Diagnostic("LG511", f"{where} cannot be written: {exc.strerror or exc}",
                                hint="make the output folder writable, or free disk space, and build again"))
    return diags, changed


def stale_prebuilt(result: SpecResult, config: Config) -> list[Diagnostic]:
    """LG520 for a spec whose ``cubins/`` (where there is one) is not of the kernels it generates now: built
    from another source, of a kernel no longer generated, a cubin missing or changed, another layoutgen,
    or other archs than ``build_archs`` lists. One diagnostic per spec lists every reason. Raises nothing."""
    spec = result.spec
    if spec is None or not result.files:
        return []
    folder = prebuilt_dir(config.out_path / spec.name)
    shown = f"{config.out}/{spec.name}/{PREBUILT_DIR}/"
    reasons: list[str] = []
    try:
        manifest = read_manifest(folder)
    except ValueError as exc:
        reasons.append(str(exc))
        manifest = None
    else:
        if manifest is None:
            return []  # nothing was built: a package may ship without cubins
    if manifest is not None:
        wanted = sorted_archs(config.build_archs)
        if wanted and manifest.archs != wanted:
            reasons.append(f"they were built for {', '.join(manifest.archs) or 'no arch'}, and `build_archs` "
                           f"lists {', '.join(wanted)}")
        generated = set()
        for arch in manifest.archs:
            for name, request in kernel_requests(result, config, arch):
                generated.add(name)
                found = misfit(manifest, folder, name, request, arch)
                if isinstance(found, str):
                    reasons.append(found)
        reasons += [f"`{k.name}` is no longer generated, but {shown} has its cubins" for k in manifest.kernels
                    if k.name not in generated]
    if not reasons:
        return []
    listed = list(dict.fromkeys(reasons))  # a reason of the whole folder comes once, not once a kernel
    return [Diagnostic(
        "LG520", f"the cubins in `{shown}` are not of the kernels spec `{spec.name}` generates now:"
        + "".join(f"\n  {line}" for line in listed), Site(str(config.root / result.path), 1),
        hint="run `layoutgen build` (after `layoutgen generate`) and ship the new cubins; launchers compile with "
        "NVRTC what does not fit")]


def _unwritable(results: Sequence[SpecResult], config: Config) -> list[Diagnostic]:
    """Why the ``cubins/`` folder of each spec may not be written: its package leads outside the project or into
    version control's folder, or the folder (or its package) is a link a build would write through."""
    out = []
    for result in results:
        if result.spec is not None and result.files:
            module_dir = f"{config.out}/{result.spec.name}"
            problem = outside_project(config.root, module_dir) or linked_folder(config.root, module_dir, PREBUILT_DIR)
            if problem is not None:
                out.append(problem)
    return out


def _rel(config: Config, path: Path) -> str:
    try:
        return path.relative_to(config.root).as_posix()
    except ValueError:
        return str(path)


def _write_if_changed(path: Path, data: bytes) -> bool:
    """Write ``data`` to ``path`` atomically unless the file holds it already; whether it wrote. Raises OSError."""
    try:
        if not path.is_symlink() and path.read_bytes() == data:
            return False
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, data, shared=True)  # the umask's mode, as a compiler's output: other users load them
    return True
