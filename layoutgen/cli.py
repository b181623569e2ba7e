"""The ``layoutgen`` command: generate, check and show.

Exit codes: 0 clean (warnings allowed, unless they count as errors), 1 when a check failed or generated
code would change, 2 on a usage or internal error (a bug in layoutgen: the
traceback is printed, with a request to report it), 130 when interrupted, 141 when the reader of stdout
went away (`layoutgen show ... | head -1`), quietly, as a tool that SIGPIPE stops.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from pathlib import Path

from .project.colors import COLOR_CHOICES, use_color
from .project.config import Config, ConfigError, load_config, project_start
from .project.files import hand_edited, outside_project, unified_diff
from .project.outlock import output_lock
from .project.includes import include_flags
from .project.aot import build_specs, no_build_archs, stale_prebuilt
from .project.process import SpecResult, drift_diagnostics, no_specs, process_specs
from .project.report import FORMATS, changed_line, counts, render, summary_line, up_to_date_line, would_change_line
from .project.specfind import spec_modules
from .project.writing import apply
from .schema.diagnostics import Diagnostic, LayoutgenError
from .version import __version__

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERNAL, EXIT_INTERRUPTED = 0, 1, 2, 2, 130
EXIT_CLOSED_PIPE = 141  # 128 + SIGPIPE: what a shell reports for a tool whose reader went away

#: ``--color`` of the command running; read where diagnostics are rendered (see project/colors.py).
_COLOR: ContextVar[str] = ContextVar("color", default="auto")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="layoutgen",
        description="Declare packed tensor layouts once; generate CUDA views, kernels and launchers from them.",
        epilog="Settings come from [tool.layoutgen] in pyproject.toml; options override them.",
    )
    parser.add_argument("--version", action="version", version=f"layoutgen {__version__}")
    verbs = parser.add_subparsers(dest="verb", metavar="COMMAND", required=True)

    def color(p: argparse.ArgumentParser) -> None:
        p.add_argument("--color", choices=COLOR_CHOICES, default="auto",
                       help="colour diagnostics: auto (on a terminal, unless NO_COLOR is set; FORCE_COLOR turns it "
                       "on), always or never (default: auto)")

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("specs", nargs="*", metavar="SPEC",
                       help="spec modules, or folders of them (default: `specs` in pyproject.toml)")
        color(p)
        p.add_argument("--out", metavar="DIR", help="output folder (default: `out`, \"generated\")")
        p.add_argument("--quiet", "-q", action="store_true", help="print diagnostics and the summary only")
        p.add_argument("--debug", action="store_true",
                       help="the debug build: accessors check every index against their field and launchers scan "
                       "outputs for NaN/Inf (default: `debug`, false)")
        p.add_argument("--select", metavar="CODES", type=_code_list,
                       help="report only these codes or prefixes, comma-separated (LG401,LG3), of those that can be "
                       "turned off; errors that stop generation are always reported (default: `select`, all)")
        p.add_argument("--ignore", metavar="CODES", type=_code_list,
                       help="do not report these codes or prefixes, comma-separated: warnings, notes and the lint's "
                       "LG401/LG403 (default: `ignore`, none)")
        p.add_argument("--warnings-as-errors", action=argparse.BooleanOptionalAction, default=None,
                       help="count every warning as an error (default: `warnings_as_errors`, false)")

    gen = verbs.add_parser("generate", help="write the generated files",
                           description="Render every spec into OUT/<spec name>/, writing only files that changed.")
    common(gen)
    gen.add_argument("--check", action="store_true",
                     help="write nothing; print a diff of what would change and exit 1 if anything would")
    gen.add_argument("--force", action="store_true",
                     help="overwrite generated files that were edited by hand (without it, generate refuses, LG509)")

    chk = verbs.add_parser("check", help="run every check (and optionally compile)",
                           description="Declaration, binding, template-lint and drift checks; with --compile, "
                           "NVRTC compiles every kernel for ARCH (no GPU needed).")
    common(chk)
    chk.add_argument("--compile", action="store_true", help="compile every generated kernel with NVRTC")
    chk.add_argument("--arch", help="target architecture for --compile (default: `arch`, \"sm_90\")")
    chk.add_argument("--report", action="store_true", help="with --compile: report registers and spills")
    chk.add_argument("--execute", action="store_true",
                     help="run every kernel on the CPU under the footprint sanitizer (needs g++ or clang++)")
    chk.add_argument("--format", choices=FORMATS, default="text", help="diagnostic format (default: text)")

    bld = verbs.add_parser("build", help="compile every kernel ahead of time into the generated packages",
                           description="Compile every kernel of every spec with NVRTC for each architecture into "
                           "OUT/<spec name>/cubins/, with a manifest; launchers load the cubin for their device "
                           "instead of compiling at first launch. The generated files must be current.")
    common(bld)
    bld.add_argument("--arch", dest="build_archs", metavar="ARCHS", type=_code_list,
                     help="architectures, comma-separated: sm_80,sm_89,sm_90,sm_100 (default: `build_archs`)")

    show = verbs.add_parser("show", help="print or draw layouts and kernel bindings",
                            description="Print the layout tables of a spec and every kernel binding with its "
                            "resolved strides. SPEC:NAME shows one layout or kernel binding. --svg and --png "
                            "draw them instead.")
    show.add_argument("target", metavar="SPEC[:NAME]")
    show.add_argument("--svg", metavar="FILE", help="write the diagram as SVG to FILE")
    show.add_argument("--png", metavar="FILE",
                      help="write the diagram as PNG to FILE (needs cairosvg or rsvg-convert)")
    show.add_argument("--format", choices=("text", "json"), default="text",
                      help="text, or json: one document of the layouts, views, bindings and programs, its schema "
                      "in docs/show-json.md (default: text)")
    color(show)
    explain = verbs.add_parser("explain", help="print a diagnostic code's documentation",
                               description="Print the documentation of CODE (LG201, or its name, not-contiguous): "
                               "its section of docs/diagnostics.md. Without CODE, list every code.")
    explain.add_argument("code", nargs="?", metavar="CODE")
    init = verbs.add_parser("init", help="start a small working project",
                            description="Write a spec module with one layout and one kernel, its template, the "
                            "[tool.layoutgen] table of pyproject.toml and a pytest test into FOLDER (default: the "
                            "working directory), then generate its files. Writes over no file.")
    init.add_argument("folder", nargs="?", default=".", metavar="FOLDER")
    imp = verbs.add_parser("import", help="write a starting spec declaring existing CUDA kernels",
                           description="Read the `__global__` kernels of each FILE.cu (a folder: its .cu and .cuh "
                           "files) and write a spec module declaring each as an ExistingKernel, one entry per "
                           "parameter in order, with TODOs for the shapes, layouts and bindings to fill in "
                           "(docs/existing-kernels.md). Reads comments, macros, templates, default arguments, "
                           "__launch_bounds__ and extern \"C\"; writes to stdout, or to -o FILE (never over "
                           "an existing file).")
    imp.add_argument("paths", nargs="+", metavar="FILE.cu|FOLDER")
    imp.add_argument("-o", "--output", metavar="FILE", default=None,
                     help="write the spec module here (its paths are relative to its folder) instead of stdout")
    verbs.add_parser("includes", help="print the include flag of layoutgen's device library (for nvcc)",
                     description="Print -I<folder>: the folder holding lg/lg.cuh, the device library every "
                     "generated views header includes. layoutgen's own compiles find it themselves; pass it to "
                     "nvcc or any other compiler of the generated headers: nvcc $(layoutgen includes) -c k.cu")
    return parser


def _code_list(text: str) -> tuple[str, ...]:
    """``--select``/``--ignore``: codes or prefixes separated by commas (checked with the settings)."""
    return tuple(part.strip() for part in text.split(",") if part.strip())


def _config(args: argparse.Namespace) -> Config:
    overrides: dict[str, object] = {"out": getattr(args, "out", None), "arch": getattr(args, "arch", None),
                                    "debug": True if getattr(args, "debug", False) else None,
                                    "select": getattr(args, "select", None), "ignore": getattr(args, "ignore", None),
                                    "warnings_as_errors": getattr(args, "warnings_as_errors", None),
                                    "build_archs": getattr(args, "build_archs", None)}
    if getattr(args, "specs", None):
        overrides["specs"] = tuple(args.specs)
    return _project_config(getattr(args, "specs", None) or (), overrides)


def _project_config(specs: Sequence[str], overrides: dict[str, object] | None = None) -> Config:
    """The settings of the project of ``specs`` (found from their folder), else of the working folder's. Where
    the working folder is outside that project, the root is said (on stderr, keeping stdout the report's):
    the paths of the report are relative to it."""
    cwd = Path.cwd()
    config = load_config(project_start(specs, cwd), overrides)
    if not cwd.resolve().is_relative_to(config.root):
        print(f"layoutgen: project {config.root} (found from the spec; the working folder is outside it)",
              file=sys.stderr)
    return config


def _spec_files(config: Config, args: argparse.Namespace) -> list[Path]:
    if args.specs:  # a folder stands for the spec modules under it
        return spec_modules(args.specs, load_config(config.root))
    return list(config.spec_paths)


def _finish(config: Config, diags: list[Diagnostic], n_specs: int, fmt: str) -> int:
    diags = config.selection.apply(diags)  # every diagnostic of the run, whichever step found it
    errors, warnings = counts(diags)
    text = render(diags, fmt, color=fmt == "text" and use_color(_COLOR.get(), sys.stdout))
    if text:
        sys.stdout.write(text)
    if fmt == "text":
        print(summary_line(errors, warnings, n_specs))
    return EXIT_FAILED if errors else EXIT_OK


def _waiting(out: str) -> Callable[[], None]:
    return lambda: print(f"layoutgen: waiting for another layoutgen process to finish with `{out}` ...",
                         file=sys.stderr, flush=True)


def _locked(config: Config, n_specs: int, fmt: str, exclusive: bool, work: Callable[[], int]) -> int:
    """``work()`` holding the output folder's lock; a folder outside the project, a lock held too long
    (LG508) or a folder that cannot be written (LG511) is reported like any other diagnostic."""
    outside = outside_project(config.root, config.out)
    if outside is not None:
        return _finish(config, [outside], n_specs, fmt)
    try:
        with output_lock(config.root, config.out, exclusive=exclusive, on_wait=_waiting(config.out)):
            return work()
    except LayoutgenError as exc:
        return _finish(config, [exc.diagnostic], n_specs, fmt)


def cmd_generate(args: argparse.Namespace) -> int:
    config = _config(args)
    spec_files = _spec_files(config, args)
    if not spec_files:  # a project that checks nothing must not pass silently
        return _finish(config, [no_specs(config)], 0, "text")
    # Planning and writing under one lock: no other generate changes the disk in between.
    return _locked(config, len(spec_files), "text", not args.check,
                   lambda: _generate(config, process_specs(config, spec_files), args))


def _generate(config: Config, results: list[SpecResult], args: argparse.Namespace) -> int:
    diags = [d for r in results for d in r.diagnostics]
    if any(not r.ok for r in results):
        return _finish(config, diags, len(results), "text")
    plans = [r.plan for r in results if r.plan is not None]  # every result is ok, so each rendered a plan
    if not args.check and not args.force:  # keep what was edited by hand, and say so
        edits = [hand_edited(config.root, path) for plan in plans for path in plan.edited]
        if edits:
            return _finish(config, diags + edits, len(results), "text")
    changed: list[str] = []
    labels: dict[str, str] = {}
    for plan in plans:
        labels.update({c.path: "deleted" for c in plan.changes if c.kind == "delete"})
        labels.update(dict.fromkeys(plan.temporaries, "removed"))
        if args.check:
            diff = unified_diff(plan)
            if diff:
                sys.stdout.write(diff)
            changed.extend([*plan.paths, *plan.temporaries])
        else:
            changed.extend(apply(config.root, plan, overwrite_edits=args.force))
    if args.check:
        stale = [d for r in results for d in stale_prebuilt(r, config)]  # built cubins are output too (LG520)
        if changed:
            print(would_change_line(len(changed)))
        if stale:
            return _finish(config, diags + stale, len(results), "text")
        if changed:
            return EXIT_FAILED
        # The closing line is printed even with --quiet: every command ends with one.
        print(up_to_date_line(len(results)))
        return EXIT_OK
    if not args.quiet:
        for path in changed:
            print(f"{labels.get(path, 'wrote')} {path}")
    print(changed_line(len(changed), len(results)))
    return _finish(config, diags, len(results), "text") if diags else EXIT_OK


def cmd_check(args: argparse.Namespace) -> int:
    config = _config(args)
    spec_files = _spec_files(config, args)
    if not spec_files:  # a project that checks nothing must not pass silently
        return _finish(config, [no_specs(config)], 0, args.format)
    results: list[SpecResult] = []
    diags: list[Diagnostic] = []

    def read() -> int:  # under a shared lock: no generate is half-way through the folder meanwhile
        results.extend(process_specs(config, spec_files))
        diags.extend(d for r in results for d in r.diagnostics)
        for result in results:
            diags.extend(drift_diagnostics(result, config.root))
            diags.extend(stale_prebuilt(result, config))  # the cubins of `layoutgen build`, where there are
        return EXIT_OK

    status = _locked(config, len(spec_files), args.format, False, read)
    if status != EXIT_OK:
        return status
    if args.compile:
        from .project.compile_all import compile_results  # imports CuPy's NVRTC only when asked

        diags.extend(compile_results(results, config, report=args.report, progress=not args.quiet))
    if args.execute:
        from .project.execute import execute_results

        diags.extend(config.selection.apply(execute_results(results, config, progress=not args.quiet)))
    return _finish(config, diags, len(results), args.format)


def cmd_build(args: argparse.Namespace) -> int:
    config = _config(args)
    spec_files = _spec_files(config, args)
    if not spec_files or not config.build_archs:
        return _finish(config, [no_build_archs(config) if spec_files else no_specs(config)], len(spec_files), "text")

    def work() -> int:  # under the exclusive lock: no generate changes the kernels while their cubins are built
        outcome = build_specs(config, process_specs(config, spec_files), progress=not args.quiet)
        for line in () if args.quiet else outcome.lines:
            print(line)
        if outcome.summary:
            print(outcome.summary)
        return _finish(config, list(outcome.diagnostics), len(spec_files), "text") if outcome.diagnostics else EXIT_OK

    return _locked(config, len(spec_files), "text", True, work)


def cmd_show(args: argparse.Namespace) -> int:
    from .project.show import show

    target = args.target
    spec_path, _, layout = target.partition(":") if not Path(target).exists() else (target, "", "")
    config = _project_config([spec_path])
    return show(config, Path(spec_path), layout or None, svg=args.svg, png=args.png,
                color=use_color(args.color, sys.stderr), fmt=args.format)


def cmd_explain(args: argparse.Namespace) -> int:
    from .project.explain import UnknownCodeError, code_list, explain

    try:
        sys.stdout.write(explain(args.code) if args.code else code_list())
    except UnknownCodeError as exc:
        print(f"layoutgen: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK


def cmd_init(args: argparse.Namespace) -> int:
    from .project.scaffold import InitError, init_project

    try:
        created = init_project(Path(args.folder))
    except InitError as exc:
        print(f"layoutgen: error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    for path in created.written:
        print(f"wrote {path}")
    if created.appended:
        print(f"added [tool.layoutgen] to {created.appended}")
    for path in created.generated:
        print(f"wrote {path}")
    where = "" if args.folder == "." else f"cd {args.folder} && "
    print(f"Created a layoutgen project; next: `{where}layoutgen check --compile`, then `pytest`.")
    return EXIT_OK


def cmd_import_kernels(args: argparse.Namespace) -> int:
    from .project.import_kernels import read_all, spec_text

    found = read_all([Path(p) for p in args.paths])  # LG541 as a LayoutgenError: main prints it
    if args.output is None:
        sys.stdout.write(spec_text(found, Path.cwd()))
        return EXIT_OK
    out = Path(args.output)
    if out.exists():
        print(f"layoutgen: error: `-o` must name a new file, got the existing {out}", file=sys.stderr)
        return EXIT_FAILED
    out.write_text(spec_text(found, out.resolve().parent), encoding="utf-8")
    print(f"wrote {out} ({len(found)} kernel{'s' if len(found) != 1 else ''})")
    return EXIT_OK


def cmd_includes(args: argparse.Namespace) -> int:
    """``layoutgen includes``: the device library's include flag (project/includes.py)."""
    print(include_flags())
    return EXIT_OK


def _closed_pipe() -> int:
    """The reader of stdout went away (`| head -1`): stop without a traceback. Python flushes stdout once
    more at exit and would report the broken pipe then, so stdout is pointed at /dev/null first."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is no file descriptor (replaced in-process): nothing to flush
        pass
    return EXIT_CLOSED_PIPE


def main(argv: Sequence[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else list(argv)
    parser = _parser()
    if not words:  # as ruff does: the whole help, where a usage error would go, with its exit status
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    args = parser.parse_args(words)
    chosen = _COLOR.set(getattr(args, "color", "auto"))
    try:
        handler = {"generate": cmd_generate, "check": cmd_check, "show": cmd_show, "explain": cmd_explain,
                   "init": cmd_init, "build": cmd_build, "import": cmd_import_kernels,
                   "includes": cmd_includes}[args.verb]
        status = handler(args)
        sys.stdout.flush()  # a closed pipe shows here, inside the handlers below, rather than at exit
        return status
    except BrokenPipeError:
        return _closed_pipe()
    except ConfigError as exc:
        print(f"layoutgen: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except LayoutgenError as exc:
        print(exc, file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except Exception as exc:  # a bug in layoutgen: not a failed check, and not to be hidden
        print(f"layoutgen: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        traceback.print_exc(file=sys.stderr)
        print(f"This is a bug in layoutgen {__version__}, not in your project: please report it with the "
              "traceback above and the command that ran.", file=sys.stderr)
        return EXIT_INTERNAL
    finally:
        _COLOR.reset(chosen)
