"""``layoutgen check --execute``: every kernel of the project run on the CPU under the footprint sanitizer.

For each spec the debug build is rendered (its views check every index); for each kernel binding a host
program (:mod:`.execute_harness`) is built with AddressSanitizer against the host runtime layoutgen ships,
cached by content, and run at sizes chosen from the declarations (:mod:`.footprints`) on random finite
inputs, outputs poisoned. Each bad line it finds becomes a diagnostic at the user's line (LG650..LG655; a
line once, at most :data:`MAX_FINDINGS` a kernel); a kernel that cannot be built for the host is reported as
not executed (LG531, an error that only a comment on the kernel's binding line saying why accepts: the
team's decision, in the code, :func:`accepted`), one that crashes or hangs as LG532, and no compiler at all
as LG530. Nothing is passed in silence.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import tokenize
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ..checks.suppress import named_codes
from ..codegen.debug_headers import COPIES
from ..codegen.pymodule import module_model
from ..codegen.render import declared_in, render_spec
from ..declare.tiles import shared_arrays
from ..runtime import paths
from ..schema.diagnostics import Diagnostic, Site
from .config import Config
from .execute_existing import existing_call
from .execute_findings import finding_diagnostic, finding_place, prefix_maps, user_sites
from .execute_harness import (
    INCLUDE_ROOT, HostProgram, build_key, compile_program, compiler_version, find_compiler, headers_digest,
    host_program,
)
from .footprints import chosen_sizes, grid_blocks, param_footprints, shared_footprints
from .host_shared import static_shared
from .process import SpecResult

#: Seconds a kernel may run on the CPU before it is reported as not finishing (LG532).
RUN_TIMEOUT = 120
#: AddressSanitizer's settings for the run: no leak check (the process may end at a finding), addresses left
#: for layoutgen to read back, and the run going on after a report (each place reported once), so that every
#: bad line of a kernel is found (the sanitizer ends it after a few hundred places).
ASAN_OPTIONS = ("detect_leaks=0:symbolize=0:handle_abort=1:allocator_may_return_null=1:halt_on_error=0:"
                "suppress_equal_pcs=1")
#: The most lines reported for one kernel: the first lines of a kernel that goes wrong everywhere say enough.
MAX_FINDINGS = 8
#: A finding's line of the host program's stderr: where a line holds one (another thread's output may lead it).
_FINDING = re.compile(r"LGSAN\t[^\n]*")


def execute_results(results: Sequence[SpecResult], config: Config, *, progress: bool = True) -> list[Diagnostic]:
    """Run every kernel of every rendered spec on the CPU; the findings, in the order of the specs."""
    compiler = find_compiler()
    specs = [r for r in results if r.spec is not None and r.files]
    if not specs:
        return []
    if compiler is None:
        return [Diagnostic("LG530", "`check --execute` needs a host C++ compiler with AddressSanitizer, found none "
                           "(tried `CXX`, g++, clang++)",
                           hint="install g++ (Debian, Ubuntu: apt-get install g++), or name one in CXX")]
    version = compiler_version(compiler)
    headers = headers_digest(config.include_paths)
    jobs = []
    for result in specs:
        jobs.extend(_spec_jobs(result, config))
    root = (Path(config.cache_path) if config.cache_path else paths.cache_dir()) / "execute"
    show = progress and sys.stderr.isatty()
    done = [0]

    def one(job: tuple[HostProgram, dict[str, str], Site | None]) -> list[Diagnostic]:
        program, files, site = job
        out = _run_one(program, files, site, compiler, version, headers, root, config)
        done[0] += 1
        if show:
            print(f"\rexecuting {done[0]}/{len(jobs)} {program.kernel}\x1b[K", end="", file=sys.stderr, flush=True)
        return out

    with ThreadPoolExecutor(max_workers=max(1, min(len(jobs), os.cpu_count() or 1))) as pool:
        found = list(pool.map(one, jobs))
    if show:
        print("\r\x1b[K", end="", file=sys.stderr, flush=True)
    return [d for diags in found for d in diags if not accepted(d)]


def accepted(diag: Diagnostic) -> bool:
    """Whether ``diag`` is an LG531 that the line it is reported at (the kernel's binding) accepts with
    ``# layoutgen: ignore[LG531]: why``: a kernel the host runtime cannot run may be left unchecked only by a
    decision written where the kernel is bound, with its reason (never for a whole project: the registry's
    ``Off.LINE``)."""
    if diag.code != "LG531" or diag.site is None:
        return False
    try:
        with open(diag.site.path, encoding="utf-8") as source:  # the comment as Python reads it, not in a string
            comments = [tok.string for tok in tokenize.generate_tokens(source.readline)
                        if tok.type == tokenize.COMMENT and tok.start[0] == diag.site.line]
    except (OSError, UnicodeDecodeError, SyntaxError, tokenize.TokenError):
        return False
    for comment in comments:
        named = named_codes(comment[1:])
        if named is not None and "LG531" in named[0] and named[1].strip(" :\t"):  # the code, and a reason
            return True
    return False


def _spec_jobs(result: SpecResult, config: Config) -> list[tuple[HostProgram, dict[str, str], Site | None]]:
    """The host program of each kernel binding of one spec, with the debug build's files it includes."""
    spec = result.spec
    assert spec is not None  # the caller keeps rendered specs only
    module_dir = f"{config.out}/{spec.name}"
    rendered = render_spec(spec, config.root, result.path, debug=True, out=config.out,
                           cache_dir=config.cache_dir_from(module_dir), templates=config.template_paths,
                           include=config.include_from(module_dir), headers=config.include_paths)
    # The kernels and headers by file name, the project headers' debug copies by their path under the spec's folder
    # (lg_debug_include/<n>/...), searched before the project's folders: both runs check the same helpers.
    files = {_build_name(path, spec.name): text if f"/{COPIES}/" in path else static_shared(text)
             for path, text in rendered.files.items()  # static __shared__ arrays one per block: host_shared.py
             if path.endswith((".cu", ".cuh", ".h")) or f"/{COPIES}/" in path}
    sources = {id(lay): declared_in(lay.site, config.root) for lay in spec.layouts}
    model = module_model(spec, sources)
    layouts = {lay.name: lay for lay in model["layouts"]}  # type: ignore[attr-defined]
    jobs = []
    for binding, kernel in zip(spec.kernels, model["kernels"]):  # type: ignore[call-overload]
        sizes = chosen_sizes(kernel, layouts)
        params = param_footprints(kernel, layouts, sizes)
        shared, shared_bytes = shared_footprints(shared_arrays(binding), kernel.shared, sizes)
        program = host_program(kernel, f"{kernel.name}.cu", params, shared, shared_bytes, sizes,
                               grid_blocks(kernel, params, sizes), call=existing_call(binding, sizes))
        jobs.append((program, files, binding.site))
    return jobs


def _build_name(path: str, spec: str) -> str:
    """A rendered file's path in the host program's build folder: its name, or a header copy's path under
    ``lg_debug_include/``."""
    under = path.removeprefix(f"{spec}/")
    return under if under.startswith(f"{COPIES}/") else path.rsplit("/", 1)[-1]


def _copy_folders(build: Path, files: dict[str, str], count: int) -> tuple[Path, ...]:
    """The header copies' folders of ``build`` that ``files`` fill, in ``include``'s order."""
    return tuple(build / COPIES / str(n) for n in range(count) if any(f.startswith(f"{COPIES}/{n}/") for f in files))


def _run_one(program: HostProgram, files: dict[str, str], site: Site | None, compiler: str, version: str,
             headers: str, root: Path, config: Config) -> list[Diagnostic]:
    key = build_key(program, files, compiler, version, headers)
    folder = root / key[:2] / key
    executable = folder / "program"
    if not executable.is_file():
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        with tempfile.TemporaryDirectory(dir=folder) as tmp:
            build = Path(tmp)
            for name, text in files.items():
                (build / name).parent.mkdir(parents=True, exist_ok=True)
                (build / name).write_text(text, encoding="utf-8")
            source = build / f"{program.kernel}.host.cpp"
            source.write_text(program.text, encoding="utf-8")
            maps = prefix_maps(config.root, build, config.include_paths, INCLUDE_ROOT)
            include = (*_copy_folders(build, files, len(config.include_paths)), *config.include_paths)
            errors = compile_program(compiler, source, build / "program", include, config.root, maps)
            if errors is not None:
                errors = errors.replace(f"{build}/", "")  # name the kernel's files as the user knows them
                first = next((line for line in errors.splitlines() if "error" in line), errors.strip()[:300])
                return [Diagnostic("LG531", f"`{program.kernel}` was not executed on the CPU: the host runtime cannot "
                                   f"build it: {first.strip()}", site,
                                   hint="the host runtime lacks what this kernel uses (see the compiler's message); "
                                   "its accesses were not checked. To accept that for this kernel, end its binding's "
                                   "line with `# layoutgen: ignore[LG531]: why`")]
            os.replace(build / "program", executable)  # whole or not at all: another run may read it
    env = {**os.environ, "ASAN_OPTIONS": ASAN_OPTIONS}
    try:
        run = subprocess.run([str(executable)], capture_output=True, text=True, timeout=RUN_TIMEOUT, env=env,
                             cwd=config.root)
    except subprocess.TimeoutExpired:
        return [Diagnostic("LG532", f"`{program.kernel}` did not finish on the CPU within {RUN_TIMEOUT} s "
                           f"({program.blocks} blocks of {program.threads} threads)", site,
                           hint="a barrier or a spin that waits for something no thread does, or a loop that does "
                           "not end at these sizes")]
    records = finding_records(run.stderr)
    if not records:
        tail = run.stderr.strip().splitlines()[-1:] or [f"exit status {run.returncode}"]
        return [Diagnostic("LG532", f"`{program.kernel}` crashed on the CPU: {tail[0]}", site,
                           hint="run it under a debugger: the host program is " + str(executable))]
    records = [r for r in records if r.get("kind") != "done"]
    found = user_sites(executable, [finding_place(r) for r in records], config.root, config.include_paths,
                       config.out)
    return _distinct_lines([finding_diagnostic(program, r, at, site) for r, at in zip(records, found)])


def finding_records(stderr: str) -> list[dict[str, str]]:
    """The findings of a host program's ``stderr``, in order: each ``LGSAN`` line's key=value pairs, found where
    the line holds one (another thread's output, with no newline, may lead it)."""
    return [dict(part.split("=", 1) for part in line.split("\t")[1:] if "=" in part)
            for line in _FINDING.findall(stderr)]


def _distinct_lines(diags: Sequence[Diagnostic]) -> list[Diagnostic]:
    """Each (code, line) once, the first found; in the order of their lines; at most :data:`MAX_FINDINGS`."""
    seen: dict[tuple[str, str], Diagnostic] = {}
    for d in diags:
        seen.setdefault((d.code, str(d.site)), d)
    ordered = sorted(seen.values(), key=lambda d: (d.site.path, d.site.line) if d.site else ("", 0))
    return ordered[:MAX_FINDINGS]
