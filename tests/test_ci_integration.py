"""Drop-in CI: the pre-commit hooks, the example GitHub workflow, and `--format github` output.

The YAML files are parsed (pyyaml, in the dev extra) and every `layoutgen`
command in them must be one the command-line parser accepts. The annotation
test runs `layoutgen check --format github` on specs whose path and messages
hold every character GitHub needs escaped, and parses the output back the
way the Actions runner does.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from layoutgen.cli import _parser, main

REPO = Path(__file__).resolve().parent.parent
HOOKS = REPO / ".pre-commit-hooks.yaml"
WORKFLOW = REPO / "docs" / "github-actions.yml"


def load(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def assert_parses(command: str) -> None:
    """``command`` is `layoutgen ...` with arguments the CLI accepts."""
    words = shlex.split(command)
    assert words[0] == "layoutgen", command
    try:
        _parser().parse_args(words[1:])
    except SystemExit as exc:  # argparse's way to refuse
        pytest.fail(f"`{command}` is refused by the command-line parser (exit {exc.code})")


# -- pre-commit -------------------------------------------------------------------------


def test_pre_commit_hooks_run_check_and_generate_check() -> None:
    hooks = load(HOOKS)
    assert isinstance(hooks, list)
    by_id = {h["id"]: h for h in hooks}
    assert {h["entry"] for h in hooks} == {"layoutgen check", "layoutgen generate --check"}
    assert set(by_id) == {"layoutgen-check", "layoutgen-generate-check"}
    for hook in hooks:
        assert set(hook) >= {"id", "name", "entry", "language", "pass_filenames", "description"}
        assert hook["language"] == "python"
        assert hook["pass_filenames"] is False  # the specs come from pyproject.toml, not from git
        assert_parses(hook["entry"])
        files = re.compile(hook["files"])
        for path in ("examples/vsn/spec.py", "examples/vsn/context_broadcast.cu.j2", "pyproject.toml",
                     "generated/vsn/vsn.cuh", "generated/vsn/context_broadcast.cu"):
            assert files.search(path), (hook["id"], path)
        assert not files.search("README.md")


def test_the_hook_entry_is_the_installed_console_script() -> None:
    # language: python installs this repository; the entry must be its script.
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["scripts"]["layoutgen"] == "layoutgen.cli:main"


# -- the GitHub Actions workflow ----------------------------------------------------------


def test_the_workflow_runs_check_with_github_annotations() -> None:
    workflow = load(WORKFLOW)
    # YAML 1.1 reads the key `on` as True.
    triggers = workflow.get("on", workflow.get(True))
    assert "pull_request" in triggers
    (job,) = workflow["jobs"].values()
    assert job["runs-on"].startswith("ubuntu")
    steps = job["steps"]
    assert any(str(s.get("uses", "")).startswith("actions/checkout@") for s in steps)
    runs = [s["run"] for s in steps if "run" in s]
    commands = [r for r in runs if r.startswith("layoutgen ")]
    for command in commands:
        assert_parses(command)
    assert any("check" in c.split() and "--format github" in c for c in commands), commands
    assert "layoutgen generate --check" in commands


def test_the_docs_link_the_ci_files() -> None:
    page = (REPO / "docs" / "ci.md").read_text(encoding="utf-8")
    assert "](github-actions.yml)" in page
    assert "](../.pre-commit-hooks.yaml)" in page


# -- --format github is the workflow-command syntax -----------------------------------------

COMMAND = re.compile(r"^::(error|warning|notice) ([^:]*)::(.*)$")


def unescape(text: str, *, property_value: bool) -> str:
    """What the Actions runner decodes: %25 %0D %0A, and in properties %3A %2C."""
    table = {"%0D": "\r", "%0A": "\n", "%3A": ":", "%2C": ","} if property_value else {"%0D": "\r", "%0A": "\n"}
    for escaped, raw in table.items():
        text = text.replace(escaped, raw)
    return text.replace("%25", "%")


def parse_annotation(line: str) -> tuple[str, dict[str, str], str]:
    """(severity, properties, message) of one workflow command, checking its escaping."""
    m = COMMAND.match(line)
    assert m, f"not a workflow command: {line!r}"
    severity, props, message = m.groups()
    for text in (props, message):
        assert "\r" not in text and "\n" not in text
        assert re.fullmatch(r"([^%]|%25|%0D|%0A|%3A|%2C)*", text), f"a bare `%` in {text!r}"
    properties = {}
    for item in props.split(","):
        key, sep, value = item.partition("=")
        assert sep and key in ("file", "line", "endLine", "col", "endColumn", "title"), item
        properties[key] = unescape(value, property_value=True)
    return severity, properties, unescape(message, property_value=False)


def check_github(cwd: Path, *specs: str) -> tuple[int, str]:
    out = io.StringIO()
    before = Path.cwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            code = main(["check", "--format", "github", *specs])
    finally:
        os.chdir(before)
    return code, out.getvalue()


def test_github_output_of_the_seed_bug_is_one_annotation() -> None:
    code, out = check_github(REPO, "examples/vsn/seed_bug.py")
    assert code == 1
    (line,) = out.splitlines()
    severity, props, message = parse_annotation(line)
    assert severity == "error"
    assert props["file"] == "examples/vsn/seed_bug.py"
    assert int(props["line"]) >= 1
    assert props["title"] == "LG201 not-contiguous"
    assert message.startswith("`variable_selection_fwd.x` needs contiguous rows (stride 40)")
    assert "\nhint: " in message


def test_github_output_escapes_what_the_runner_decodes(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    folder = tmp_path / "odd,dir:1%"
    folder.mkdir()
    (folder / "spec.py").write_text('raise ValueError("100% wrong,\\r\\nsecond: line")\n')
    code, out = check_github(tmp_path, "odd,dir:1%/spec.py")
    assert code == 1
    (line,) = out.splitlines()
    assert line.startswith("::error file=odd%2Cdir%3A1%25/spec.py,line=1,title=LG504 spec-error::")
    _, props, message = parse_annotation(line)
    assert props == {"file": "odd,dir:1%/spec.py", "line": "1", "title": "LG504 spec-error"}
    assert message == "importing the spec raised ValueError: 100% wrong,\r\nsecond: line"


def test_github_output_of_a_clean_project_is_empty(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "spec.py").write_text(
        "from layoutgen import Field, Layout, Spec, dims, f32\n"
        "B, = dims('B')\n"
        "Window = Layout('Window', [B], f32, [Field('snap', 40), Field('context', 16)])\n"
        "spec = Spec('clean', layouts=[Window])\n"
    )
    before = Path.cwd()
    os.chdir(tmp_path)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            assert main(["generate", "spec.py"]) == 0
    finally:
        os.chdir(before)
    code, out = check_github(tmp_path, "spec.py")
    assert (code, out) == (0, "")


# -- progress on a terminal, quiet elsewhere; every command ends with one line ----------------


class Terminal(io.StringIO):
    """A stream that says it is a terminal, or not."""

    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def _compile_with(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *, tty: bool, progress: bool) -> str:
    """What compile_results writes to stderr for the mini spec, with NVRTC stubbed out."""
    import sys

    from layoutgen.project.compile_all import compile_results
    from layoutgen.project.config import load_config
    from layoutgen.project.process import process_spec
    from layoutgen.runtime.cache import CubinCache

    compiled: list[str] = []
    monkeypatch.setattr(CubinCache, "get_or_compile",
                        lambda self, request: compiled.append(request.name) or type("C", (), {"resources": ()})())
    (tmp_path / "pyproject.toml").write_text('[tool.layoutgen]\nspecs = ["spec.py"]\n')
    for f in (REPO / "tests" / "specs" / "mini").iterdir():
        if f.is_file():
            (tmp_path / f.name).write_bytes(f.read_bytes())
    config = load_config(tmp_path, {})
    results = [process_spec(config, tmp_path / "spec.py")]
    err = Terminal(tty)
    monkeypatch.setattr(sys, "stderr", err)
    assert compile_results(results, config, progress=progress) == []
    assert len(compiled) == 2  # both kernels of the mini spec
    return err.getvalue()


def test_compile_progress_shows_on_a_terminal_and_is_cleared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shown = _compile_with(monkeypatch, tmp_path, tty=True, progress=True)
    assert "\rcompiling 1/2 generated/mini/" in shown and "\rcompiling 2/2 generated/mini/" in shown
    assert shown.endswith("\r\x1b[K")  # the line is erased: what follows starts clean


@pytest.mark.parametrize(("tty", "progress"), [(False, True), (True, False)], ids=["not-a-terminal", "quiet"])
def test_compile_progress_is_silent_off_a_terminal_or_quiet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tty: bool, progress: bool
) -> None:
    assert _compile_with(monkeypatch, tmp_path, tty=tty, progress=progress) == ""


def test_quiet_passes_progress_false(monkeypatch: pytest.MonkeyPatch) -> None:
    import layoutgen.project.compile_all as compile_all

    seen: list[bool] = []
    monkeypatch.setattr(compile_all, "compile_results",
                        lambda results, config, *, report, progress: seen.append(progress) or [])
    with contextlib.redirect_stdout(io.StringIO()):
        main(["check", "--compile", "--quiet", "examples/vsn/spec.py"])
        main(["check", "--compile", "examples/vsn/spec.py"])
    assert seen == [False, True]


@pytest.mark.parametrize("args", [
    ["generate"], ["generate", "-q"], ["generate", "--check"], ["generate", "--check", "-q"],
    ["check"], ["check", "-q"],
])
def test_every_command_ends_with_one_summary_line(tmp_path: Path, args: list[str]) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.layoutgen]\nspecs = ["spec.py"]\n')
    (tmp_path / "spec.py").write_text(
        "from layoutgen import Field, Layout, Spec, dims, f32\n"
        "B, = dims('B')\n"
        "Window = Layout('Window', [B], f32, [Field('snap', 40), Field('context', 16)])\n"
        "spec = Spec('clean', layouts=[Window])\n"
    )
    before = Path.cwd()
    os.chdir(tmp_path)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            main(["generate"])
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert main(args) == 0
    finally:
        os.chdir(before)
    last = out.getvalue().splitlines()[-1]
    assert last in ("No files changed in 1 spec.", "Generated code is up to date (1 spec).",
                    "All checks passed: 1 spec, no errors."), out.getvalue()
    if "-q" in args:
        assert len(out.getvalue().splitlines()) == 1


# -- --format json matches the schema documented in docs/cli.md ----------------------------------


def documented_schema() -> Any:
    import json

    page = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    m = re.search(r"```json\n(\{\n  \"\$schema\".*?)^```", page, re.M | re.S)
    assert m, "docs/cli.md has no ```json block with the JSON Schema"
    return json.loads(m.group(1))


def validate(value: Any, schema: dict[str, Any], at: str = "$") -> list[str]:
    """The JSON Schema keywords the documented schema uses, checked; the problems found."""
    kinds = {"object": dict, "array": list, "string": str, "integer": int, "null": type(None)}
    problems: list[str] = []
    if "type" in schema:
        allowed = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(isinstance(value, kinds[t]) and not isinstance(value, bool) for t in allowed):
            return [f"{at} must be {allowed}, got {value!r}"]
    if "const" in schema and value != schema["const"]:
        problems.append(f"{at} must be {schema['const']!r}, got {value!r}")
    if "enum" in schema and value not in schema["enum"]:
        problems.append(f"{at} must be one of {schema['enum']}, got {value!r}")
    if "pattern" in schema and isinstance(value, str) and not re.search(schema["pattern"], value):
        problems.append(f"{at} must match {schema['pattern']}, got {value!r}")
    if "minimum" in schema and isinstance(value, int) and value < schema["minimum"]:
        problems.append(f"{at} must be at least {schema['minimum']}, got {value}")
    if isinstance(value, dict):
        problems += [f"{at} lacks `{k}`" for k in schema.get("required", []) if k not in value]
        properties = schema.get("properties", {})
        if schema.get("additionalProperties") is False:
            problems += [f"{at} has `{k}`, which the schema does not" for k in value if k not in properties]
        for key, sub in properties.items():
            if key in value:
                problems += validate(value[key], sub, f"{at}.{key}")
    if isinstance(value, list) and "items" in schema:
        for n, item in enumerate(value):
            problems += validate(item, schema["items"], f"{at}[{n}]")
    return problems


def test_json_output_matches_the_documented_schema(tmp_path: Path) -> None:
    import json

    schema = documented_schema()
    assert validate({"version": 2}, schema)  # the validator does refuse
    outputs = []
    for cwd, spec in ((REPO, "examples/vsn/seed_bug.py"), (tmp_path, "missing.py")):
        (tmp_path / "pyproject.toml").write_text("")
        out = io.StringIO()
        before = Path.cwd()
        os.chdir(cwd)
        try:
            with contextlib.redirect_stdout(out):
                main(["check", "--format", "json", spec])
        finally:
            os.chdir(before)
        outputs.append(json.loads(out.getvalue()))
    for document in outputs:
        assert validate(document, schema) == [], document
    assert [d["code"] for d in outputs[0]["diagnostics"]] == ["LG201"]
    assert outputs[1]["diagnostics"][0]["code"] == "LG504"
