"""The ``layoutgen`` command: generate, check and show.

Exit codes: 0 clean (warnings allowed), 1 when a check failed or generated
code would change, 2 on a usage or internal error.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from .project.config import Config, ConfigError, load_config
from .project.files import apply, unified_diff
from .project.process import drift_diagnostics, no_specs, process_spec
from .project.report import FORMATS, counts, render, summary_line
from .schema.diagnostics import Diagnostic, LayoutgenError
from .version import __version__

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="layoutgen",
        description="Declare packed tensor layouts once; generate CUDA views, kernels and launchers from them.",
        epilog="Settings come from [tool.layoutgen] in pyproject.toml; options override them.",
    )
    parser.add_argument("--version", action="version", version=f"layoutgen {__version__}")
    verbs = parser.add_subparsers(dest="verb", metavar="COMMAND", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("specs", nargs="*", metavar="SPEC", help="spec modules (default: `specs` in pyproject.toml)")
        p.add_argument("--out", metavar="DIR", help="output folder (default: `out`, \"generated\")")
        p.add_argument("--quiet", "-q", action="store_true", help="print diagnostics and the summary only")
        p.add_argument("--debug", action="store_true",
                       help="the debug build: accessors check every index against their field and launchers scan "
                       "outputs for NaN/Inf (default: `debug`, false)")

    gen = verbs.add_parser("generate", help="write the generated files",
                           description="Render every spec into OUT/<spec name>/, writing only files that changed.")
    common(gen)
    gen.add_argument("--check", action="store_true",
                     help="write nothing; print a diff of what would change and exit 1 if anything would")

    chk = verbs.add_parser("check", help="run every check (and optionally compile)",
                           description="Declaration, binding, template-lint and drift checks; with --compile, "
                           "NVRTC compiles every kernel for ARCH (no GPU needed).")
    common(chk)
    chk.add_argument("--compile", action="store_true", help="compile every generated kernel with NVRTC")
    chk.add_argument("--arch", help="target architecture for --compile (default: `arch`, \"sm_90\")")
    chk.add_argument("--report", action="store_true", help="with --compile: report registers and spills")
    chk.add_argument("--format", choices=FORMATS, default="text", help="diagnostic format (default: text)")

    show = verbs.add_parser("show", help="print or draw layouts and kernel bindings",
                            description="Print the layout tables of a spec and every kernel binding with its "
                            "resolved strides. SPEC:NAME shows one layout or kernel binding. --svg and --png "
                            "draw them instead.")
    show.add_argument("target", metavar="SPEC[:NAME]")
    show.add_argument("--svg", metavar="FILE", help="write the diagram as SVG to FILE")
    show.add_argument("--png", metavar="FILE",
                      help="write the diagram as PNG to FILE (needs cairosvg or rsvg-convert)")
    return parser


def _config(args: argparse.Namespace) -> Config:
    overrides: dict[str, object] = {"out": getattr(args, "out", None), "arch": getattr(args, "arch", None),
                                    "debug": True if getattr(args, "debug", False) else None}
    if getattr(args, "specs", None):
        overrides["specs"] = tuple(args.specs)
    return load_config(Path.cwd(), overrides)


def _spec_files(config: Config, args: argparse.Namespace) -> list[Path]:
    if args.specs:
        return [Path(s).resolve() for s in args.specs]
    return list(config.spec_paths)


def _finish(diags: list[Diagnostic], n_specs: int, fmt: str) -> int:
    errors, warnings = counts(diags)
    text = render(diags, fmt, color=fmt == "text" and sys.stdout.isatty())
    if text:
        sys.stdout.write(text)
    if fmt == "text":
        print(summary_line(errors, warnings, n_specs))
    return EXIT_FAILED if errors else EXIT_OK


def cmd_generate(args: argparse.Namespace) -> int:
    config = _config(args)
    spec_files = _spec_files(config, args)
    if not spec_files:  # a project that checks nothing must not pass silently
        return _finish([no_specs(config)], 0, "text")
    results = [process_spec(config, path) for path in spec_files]
    diags = [d for r in results for d in r.diagnostics]
    if any(not r.ok for r in results):
        return _finish(diags, len(results), "text")
    changed: list[str] = []
    deleted: set[str] = set()
    for result in results:
        assert result.plan is not None  # every result is ok, so each rendered a plan
        if args.check:
            diff = unified_diff(result.plan)
            if diff:
                sys.stdout.write(diff)
            changed.extend(c.path for c in result.plan.changes)
        else:
            deleted.update(c.path for c in result.plan.changes if c.kind == "delete")
            changed.extend(apply(config.root, result.plan))
    if args.check:
        if changed:
            print(f"{len(changed)} generated file(s) would change; run `layoutgen generate`.")
            return EXIT_FAILED
        # The closing line is printed even with --quiet: every command ends with one.
        print(f"Generated code is up to date ({len(results)} spec(s)).")
        return EXIT_OK
    if not args.quiet:
        for path in changed:
            print(f"{'deleted' if path in deleted else 'wrote'} {path}")
    print(f"{len(changed)} file(s) changed in {len(results)} spec(s).")
    return _finish(diags, len(results), "text") if diags else EXIT_OK


def cmd_check(args: argparse.Namespace) -> int:
    config = _config(args)
    spec_files = _spec_files(config, args)
    if not spec_files:  # a project that checks nothing must not pass silently
        return _finish([no_specs(config)], 0, args.format)
    results = [process_spec(config, path) for path in spec_files]
    diags: list[Diagnostic] = [d for r in results for d in r.diagnostics]
    for result in results:
        diags.extend(drift_diagnostics(result, config.root))
    if args.compile:
        from .project.compile_all import compile_results  # imports CuPy's NVRTC only when asked

        diags.extend(compile_results(results, config, report=args.report, progress=not args.quiet))
    return _finish(diags, len(results), args.format)


def cmd_show(args: argparse.Namespace) -> int:
    from .project.show import show

    config = load_config(Path.cwd())
    target = args.target
    spec_path, _, layout = target.partition(":") if not Path(target).exists() else (target, "", "")
    return show(config, Path(spec_path), layout or None, svg=args.svg, png=args.png)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        handler = {"generate": cmd_generate, "check": cmd_check, "show": cmd_show}[args.verb]
        return handler(args)
    except ConfigError as exc:
        print(f"layoutgen: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except LayoutgenError as exc:
        print(exc, file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        return 130
