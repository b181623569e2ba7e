"""One pass over a project's specs: load, check, render, and compare with disk.

The CLI calls this; it wires the layers together (schema -> kernels -> checks
-> render -> files) and collects every diagnostic instead of stopping at the
first, so one run shows all that is wrong.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..checks import check_spec
from ..checks.lint import lint_rendered, lint_template
from ..codegen.render import relative, render_spec
from ..declare.spec import Spec
from ..schema.diagnostics import Diagnostic, Severity, Site
from .config import Config
from .files import Plan, plan_output
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
    if loaded.spec is None:
        return SpecResult(rel, None, {}, loaded.diagnostics, None)
    spec = loaded.spec
    diags = list(check_spec(spec))
    for binding in spec.kernels:
        diags.extend(lint_template(binding, binding.kernel.template_path))
    if any(d.severity is Severity.ERROR for d in diags):
        return SpecResult(rel, spec, {}, tuple(diags), None)
    rendered = render_spec(spec, root, rel, debug=config.debug, out=config.out,
                           cache_dir=config.cache_dir_from(f"{config.out}/{spec.name}"))
    diags.extend(rendered.diagnostics)
    if rendered.diagnostics:
        return SpecResult(rel, spec, {}, tuple(diags), None)
    for binding in spec.kernels:  # the lint again, on what `{{ }}` rendered: at the template's lines
        template = binding.kernel.template_path
        kernel = rendered.files.get(f"{spec.name}/{binding.name}.cu")
        if kernel is not None:
            diags.extend(lint_rendered(binding, template, relative(template, root), kernel))
    if any(d.severity is Severity.ERROR for d in diags):
        return SpecResult(rel, spec, {}, tuple(diags), None)
    files = {f"{config.out}/{path}": text for path, text in rendered.files.items()}
    plan = plan_output(root, f"{config.out}/{spec.name}", files)
    diags.extend(plan.conflicts)
    return SpecResult(rel, spec, files, tuple(diags), plan)


def no_specs(config: Config) -> Diagnostic:
    """LG506: nothing to process, at the ``[tool.layoutgen]`` table where there is one."""
    pyproject = config.root / "pyproject.toml"
    site = None
    if pyproject.is_file():
        lines = pyproject.read_text(encoding="utf-8", errors="replace").splitlines()
        line = next((n for n, text in enumerate(lines, 1) if text.strip() == "[tool.layoutgen]"), 1)
        site = Site(str(pyproject), line)
    return Diagnostic(
        "LG506", "no spec modules to process: `[tool.layoutgen].specs` is missing or empty and no SPEC was given",
        site, hint='list them under [tool.layoutgen], like `specs = ["examples/vsn/spec.py"]`, '
                   "or pass SPEC on the command line",
    )


def drift_diagnostics(result: SpecResult, root: Path) -> list[Diagnostic]:
    """LG502 for each generated file that differs from what the spec generates now."""
    if result.plan is None:
        return []
    out = []
    for change in result.plan.changes:
        what = {"add": "is missing", "update": "is out of date", "delete": "is no longer generated"}[change.kind]
        out.append(Diagnostic(
            "LG502", f"{change.path} {what} (spec {result.path})", Site(str(root / result.path), 1),
            hint="run `layoutgen generate` and commit the result",
        ))
    return out
