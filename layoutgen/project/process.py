"""One pass over a project's specs: load, check, render, and compare with disk.

The CLI calls this; it wires the layers together (schema -> kernels -> checks
-> render -> files) and collects every diagnostic instead of stopping at the
first, so one run shows all that is wrong.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ..checks import check_spec
from ..checks.lint import each_once, lint_rendered, lint_template
from ..checks.raw_kernels import lint_existing_kernel
from ..declare.existing_kernels import ExistingKernel
from ..checks.suppress import read_suppressions
from ..codegen.render import relative, render_spec
from ..declare.spec import Spec
from ..schema.diagnostics import Diagnostic, Severity, Site
from .config import Config
from .pyproject_lines import table_site
from .files import Plan, hand_edited, plan_output
from .folders import missing_folders, shadowed_headers
from .specload import load_spec


@dataclass(frozen=True)
class SpecResult:
    """What one spec module produced."""

    path: str  # relative to the root
    spec: Spec | None
    files: dict[str, str]  # paths relative to the root -> text
    diagnostics: tuple[Diagnostic, ...]
    plan: Plan | None  # how the files differ from the disk; None when nothing rendered

    @property
    def ok(self) -> bool:
        return not any(d.severity is Severity.ERROR for d in self.diagnostics)


def process_spec(config: Config, spec_file: Path) -> SpecResult:
    """Load, check, lint and render one spec; plan its files against the disk."""
    root = config.root
    rel = relative(spec_file, root)
    loaded = load_spec(spec_file)
    reported = config.selection.apply  # select, ignore, warnings as errors: before every stop
    if loaded.spec is None:
        return SpecResult(rel, None, {}, tuple(reported(loaded.diagnostics)), None)
    spec = loaded.spec
    # What loading warned of (LG306), then the checks, then the names of the project's headers (LG516).
    diags = [*loaded.diagnostics, *check_spec(spec, config.arch), *shadowed_headers(config, spec)]
    # The lint reads each template's text, then the body as rendered; a `// layoutgen: ignore` comment
    # suppresses what either finds on its line, and one that suppresses nothing is LG404.
    # (Until both readings ran, a comment's use is not known: LG404 waits for the rendered one.)
    # An existing kernel (ExistingKernel) is a whole file of raw-pointer code, not a body over views: its own
    # lines are read with its pointers as the bases of their arrays (checks/raw_kernels.py), once; it has no
    # rendered body to read again.
    lintable = [b for b in spec.kernels if not isinstance(b.kernel, ExistingKernel)]
    comments = read_suppressions([binding.kernel.template_path for binding in spec.kernels])
    linted = [d for binding in lintable for d in lint_template(binding, binding.kernel.template_path)]
    linted += [d for binding in spec.kernels for d in lint_existing_kernel(binding)]
    kept, used = comments.apply(each_once(linted))  # a template bound twice: each cause once
    diags = reported([*diags, *kept])
    if _failed(diags):
        return SpecResult(rel, spec, {}, tuple(diags), None)
    module_dir = f"{config.out}/{spec.name}"
    rendered = render_spec(spec, root, rel, debug=config.debug, out=config.out,
                           cache_dir=config.cache_dir_from(module_dir), templates=config.template_paths,
                           include=config.include_from(module_dir), headers=config.include_paths)
    diags.extend(reported(rendered.diagnostics))
    if rendered.diagnostics:
        return SpecResult(rel, spec, {}, tuple(diags), None)
    again: list[Diagnostic] = []
    for binding in lintable:  # the lint again, on what `{{ }}` rendered: at the template's lines
        template = binding.kernel.template_path
        kernel = rendered.files.get(f"{spec.name}/{binding.name}.cu")
        if kernel is not None:
            again.extend(lint_rendered(binding, template, relative(template, root), kernel))
    # What the text showed is suppressed again, and reported once: a warning does not stop the spec there.
    kept, used_again = comments.apply(each_once(again))
    first = set(linted)
    kept = [d for d in kept if d not in first]
    diags.extend(reported([*kept, *comments.unused(used | used_again)]))
    if _failed(diags):
        return SpecResult(rel, spec, {}, tuple(diags), None)
    files = {f"{config.out}/{path}": text for path, text in rendered.files.items()}
    plan = plan_output(root, f"{config.out}/{spec.name}", files)
    diags.extend(plan.conflicts)
    return SpecResult(rel, spec, files, tuple(diags), plan)


def _failed(diags: Sequence[Diagnostic]) -> bool:
    return any(d.severity is Severity.ERROR for d in diags)


def process_specs(config: Config, spec_files: Sequence[Path]) -> list[SpecResult]:
    """:func:`process_spec` for each spec module (each file once), then the checks across them (LG507), and
    the project's folders (LG514)."""
    unique = list(dict.fromkeys(Path(p).resolve() for p in spec_files))
    return _with_folders(config, _one_spec_per_folder(config, [process_spec(config, path) for path in unique]))


def _with_folders(config: Config, results: list[SpecResult]) -> list[SpecResult]:
    """``results`` with each LG514 once (on the first), and none with files to write or compile: every spec's
    kernels would include from the folders, and its launchers look for them."""
    missing = missing_folders(config)
    if not missing or not results:
        return results
    first, *others = [replace(r, files={}, plan=None) for r in results]
    return [replace(first, diagnostics=(*missing, *first.diagnostics)), *others]


def _one_spec_per_folder(config: Config, results: list[SpecResult]) -> list[SpecResult]:
    """Refuse (LG507, at each one's ``Spec(...)``) specs that would write one folder.

    Their plans would delete each other's files, and the folder would flip on every run. Names that
    differ only in case count as one: on macOS and Windows their folders are the same.
    """
    groups: dict[str, list[int]] = {}
    for i, result in enumerate(results):
        if result.spec is not None:
            groups.setdefault(result.spec.name.casefold(), []).append(i)
    out = list(results)
    for members in (g for g in groups.values() if len(g) > 1):
        files = _listed([f"`{results[i].path}`" for i in members])
        names = sorted({s.name for i in members if (s := results[i].spec) is not None})
        every = "both" if len(members) == 2 else "all"
        if len(names) == 1:
            message = (f"spec modules {files} {every} define the spec `{names[0]}`, so {every} would write "
                       f"`{config.out}/{names[0]}/`")
        else:
            message = (f"spec modules {files} define the specs {_listed([f'`{n}`' for n in names])}, whose folders "
                       f"under `{config.out}/` are one on a case-insensitive file system")
        for i in members:
            spec = results[i].spec
            diag = Diagnostic("LG507", message, spec.site if spec else None,
                              hint='give each spec a name of its own: Spec("...", ...)')
            out[i] = replace(results[i], files={}, plan=None, diagnostics=(*results[i].diagnostics, diag))
    return out


def _listed(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def no_specs(config: Config) -> Diagnostic:
    """LG506: nothing to process, at the ``[tool.layoutgen]`` table where there is one."""
    site = table_site(config.root)
    return Diagnostic(
        "LG506", "no spec modules to process: `[tool.layoutgen].specs` is missing or empty and no SPEC was given",
        site, hint='list them under [tool.layoutgen], like `specs = ["examples/vsn/spec.py"]`, '
                   "or pass SPEC on the command line",
    )


def drift_diagnostics(result: SpecResult, root: Path) -> list[Diagnostic]:
    """LG509 for each generated file edited by hand, then one LG502 for the spec listing every other file
    that differs from what it generates now, and each temporary file that a killed ``generate`` left.

    One stale tree is one cause (the spec changed, or ``generate`` was not run), so it is one diagnostic.
    """
    plan = result.plan
    if plan is None:
        return []
    edited = set(plan.edited)
    out = [hand_edited(root, c.path) for c in plan.changes if c.path in edited]
    what = {"add": "is missing", "update": "is out of date", "delete": "is no longer generated"}
    stale = [f"{c.path} {what[c.kind]}" for c in plan.changes if c.path not in edited]
    stale += [f"{t} is a temporary file left by an interrupted `layoutgen generate`" for t in plan.temporaries]
    if stale:
        files = f"{len(stale)} file{'s' if len(stale) > 1 else ''} of `{plan.module_dir}/`"
        name = result.spec.name if result.spec is not None else result.path
        out.append(Diagnostic(
            "LG502", f"{files} {'are' if len(stale) > 1 else 'is'} not what spec `{name}` generates now:"
            + "".join(f"\n  {line}" for line in stale), Site(str(root / result.path), 1),
            hint="run `layoutgen generate` and commit the result" if len(stale) > len(plan.temporaries) else
            "run `layoutgen generate`: it removes " + ("them" if len(plan.temporaries) > 1 else "the file"),
        ))
    return out
