"""``layoutgen check --compile``: NVRTC-compile every generated kernel offline."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from ..runtime.cache import CubinCache
from ..runtime.nvrtc import CompileError, CompileRequest
from ..schema.diagnostics import Diagnostic, Site
from .config import Config
from .process import SpecResult


def compile_results(
    results: Sequence[SpecResult], config: Config, *, report: bool = False, progress: bool = True
) -> list[Diagnostic]:
    """Compile each rendered kernel (through the cubin cache, so this also warms it)."""
    cache = CubinCache(config.cache_path) if config.cache_path else CubinCache.default()
    jobs: list[tuple[str, str, tuple[tuple[str, str], ...]]] = []
    for result in results:
        if result.spec is None or not result.files:
            continue
        headers = tuple(sorted(
            (path.rsplit("/", 1)[-1], text) for path, text in result.files.items() if path.endswith(".cuh")
        ))
        jobs.extend((path, text, headers) for path, text in sorted(result.files.items()) if path.endswith(".cu"))
    diags: list[Diagnostic] = []
    show = progress and sys.stderr.isatty()
    for n, (path, text, headers) in enumerate(jobs, start=1):
        if show:
            print(f"\rcompiling {n}/{len(jobs)} {path}\x1b[K", end="", file=sys.stderr, flush=True)
        request = CompileRequest(source=text, name=path, headers=headers, arch=config.arch, report=report)
        try:
            compiled = cache.get_or_compile(request)
        except CompileError as exc:
            # NVRTC names files as the generated code does: relative to the project root.
            diags.extend(_at_root(d, config) for d in exc.diagnostics)
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


def _at_root(diag: Diagnostic, config: Config) -> Diagnostic:
    """``diag`` with a relative site made absolute under the project root (shown relative to the cwd)."""
    if diag.site is None or Path(diag.site.path).is_absolute():
        return diag
    return replace(diag, site=Site(str(config.root / diag.site.path), diag.site.line))
