"""The README reads in five minutes, and nothing it shows goes stale.

- README.md is at most 250 lines;
- every command it shows (a line of a `sh` or `console` block, or an inline
  span that starts with a command) is run or checked here, by a rule for its
  kind; a command no rule knows fails, so a new one comes with its check:
  `layoutgen` in a `console` block is run from the repository root and must
  print what is shown; any other `layoutgen` (the command table's synopses,
  commands named in the text) must name a verb, options, choices and
  metavars that the verb's `--help` has; `make` names a target that `make -n`
  accepts; the install commands stay in `## Install`, whose lines
  tests/test_install.py pins and `make test-install` runs; `mypy` is what
  `make test` runs; `.ci/run` runs `make test`;
- its Python blocks run: a declaration block here, giving the same layouts,
  kernels and bindings as examples/vsn/spec.py, which it quotes; the blocks
  that launch kernels on a GPU, in tests/test_docs.py's GPU test;
- README.md and docs/performance.md link only to files and anchors that
  exist, and every repository path they name exists;
- docs/performance.md has every benchmark script, one table at most per
  section, and the README's performance summary quotes its figures.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from layoutgen.cli import main

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
PERFORMANCE = REPO / "docs" / "performance.md"
MAX_LINES = 250

_FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)
_SPAN = re.compile(r"`([^`]+)`")  # a span may wrap onto the next line
_ENV = re.compile(r"^(?:[A-Z_][A-Z0-9_]*=\S*\s+)+")
#: The words a command starts with; a span or block line starting with one is a command the README shows.
COMMAND_WORDS = ("layoutgen", "make", "python", "python3", "pip", "git", "cd", "mypy", "pytest", ".ci/run",
                 "bash", "sh", "nvidia-smi")
#: Repository paths named in backticks or links: they must exist (a glob must match something).
_REPO_PATH = re.compile(r"(?<![\w./-])((?:benchmarks|examples|docs|layoutgen|tests|generated)/[\w.*/-]*[\w*/])")


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def blocks(text: str) -> list[tuple[str, str]]:
    """Every fenced block of ``text``: (info string, content)."""
    return [(m.group(1), m.group(2)) for m in _FENCE.finditer(text)]


def section(text: str, heading: str) -> str:
    """The text under ``## heading`` up to the next ``## ``."""
    m = re.search(rf"^## {re.escape(heading)}\s*$(.*?)(?=^## |\Z)", text, flags=re.M | re.S)
    assert m, f"README.md has no `## {heading}` section"
    return m.group(1)


def commands(text: str) -> list[tuple[str, str]]:
    """Every command ``text`` shows: (where, command). ``where`` is ``console``, ``sh`` or ``text``."""
    found: list[tuple[str, str]] = []
    for info, content in blocks(text):
        for line in content.splitlines():
            if info == "console" and line.startswith("$ "):
                found.append(("console", line[2:].strip()))
            elif info in ("sh", "bash", "shell") and line.strip() and not line.lstrip().startswith("#"):
                found.append(("sh", line.split("  #")[0].strip()))
    prose = _FENCE.sub("", text)
    for span in _SPAN.findall(prose):
        span = " ".join(span.replace("\\|", "|").split())  # `|` escaped in a table cell; a wrapped line
        words = _ENV.sub("", span).split()
        if words and words[0] in COMMAND_WORDS:
            found.append(("text", span))
    return found


def words_of(command: str) -> list[str]:
    """The command's words without leading ``NAME=value`` settings; ``python -m layoutgen`` as ``layoutgen``."""
    words = _ENV.sub("", command).split()
    if words[:3] in (["python", "-m", "layoutgen"], ["python3", "-m", "layoutgen"]):
        return ["layoutgen", *words[3:]]
    return words


def run_layoutgen(argv: list[str]) -> tuple[int, str]:
    """``layoutgen ARGV`` in-process in the repository root: (exit status, stdout and stderr as one text)."""
    out = io.StringIO()
    before = Path.cwd()
    os.chdir(REPO)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            try:
                status = main(argv)
            except SystemExit as exc:  # --help and usage errors
                status = exc.code if isinstance(exc.code, int) else 1
    finally:
        os.chdir(before)
    return status, out.getvalue()


def verb_help(verb: str) -> str:
    status, text = run_layoutgen([verb, "--help"])
    assert status == 0, f"`layoutgen {verb}` is not a command of layoutgen: {text}"
    return text


def synopsis_problems(command: str) -> list[str]:
    """What in ``layoutgen VERB [--opt ...] [--fmt a|b] [SPEC ...]`` the verb's --help does not have."""
    words = words_of(command)
    if len(words) < 2 or words[1].startswith("-"):  # `layoutgen` alone (`python -m layoutgen`), or an option
        status, text = run_layoutgen(words[1:] or ["--help"])
        return [] if status == 0 else [f"`{command}` exits {status}: {text}"]
    verb = words[1]
    help_text = verb_help(verb)
    problems = [f"`{command}`: `layoutgen {verb}` has no option {opt}"
                for opt in re.findall(r"--[\w-]+", command) if not re.search(rf"{opt}(?![\w-])", help_text)]
    for opt, shown in re.findall(r"(--[\w-]+) ((?:\w+\|)+\w+)", command):
        m = re.search(rf"{opt} \{{([^}}]*)\}}", help_text)
        if not m or set(shown.split("|")) != set(m.group(1).split(",")):
            problems.append(f"`{command}`: {opt} takes {m.group(1) if m else 'no choices'}, the README says {shown}")
    usage = help_text.split("\n\n", 1)[0]
    problems += [f"`{command}`: `layoutgen {verb}` has no argument {metavar}"
                 for metavar in re.findall(r"\b[A-Z]{2,}\b", command) if metavar not in usage]
    return problems


def makefile_targets() -> set[str]:
    return set(re.findall(r"^([\w.-]+):(?!=)", read(REPO / "Makefile"), flags=re.M))


_ARG = st.text(st.sampled_from("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:[],"),
               min_size=1, max_size=12)


@given(word=st.sampled_from(COMMAND_WORDS), args=st.lists(_ARG, max_size=4),
       shown=st.sampled_from(["sh", "console", "span", "wrapped span", "table cell"]))
def test_every_way_of_showing_a_command_is_seen(word: str, args: list[str], shown: str) -> None:
    """A command is found however a page shows it, so no command escapes the rules below."""
    command = " ".join([word, *args])
    if shown == "sh":
        page, found = f"Run:\n\n```sh\n# a comment\n{command}\n```\n", ("sh", command)
    elif shown == "console":
        page, found = f"```console\n$ {command}\nwhat it prints\n```\n", ("console", command)
    elif shown == "span":
        page, found = f"Then `{command}` does it.\n", ("text", command)
    elif shown == "wrapped span":
        page, found = f"Then `{command.replace(' ', chr(10), 1)}` does it.\n", ("text", command)
    else:
        page, found = f"| command | what |\n|---|---|\n| `{command}` | it |\n", ("text", command)
    assert found in commands(f"# A page\n\nText with `code` first.\n\n{page}\nAnd `more code`.\n")


# -- length -------------------------------------------------------------------------------------


def test_the_readme_reads_in_five_minutes() -> None:
    lines = len(read(README).splitlines())
    assert lines <= MAX_LINES, f"README.md has {lines} lines, at most {MAX_LINES}: move details to docs/"


# -- every command it shows ----------------------------------------------------------------------


def test_every_command_the_readme_shows_has_a_check() -> None:
    text = read(README)
    install = section(text, "Install")
    install_lines = {line.strip() for info, content in blocks(install) if info == "sh"
                     for line in content.splitlines() if line.strip() and not line.startswith("#")}
    problems: list[str] = []
    for where, command in commands(text):
        words = words_of(command)
        if words[0] == "layoutgen" and where == "console":
            continue  # run, below
        if words[0] == "layoutgen":
            problems += synopsis_problems(command)
        elif words[0] == "make":
            problems += [f"`{command}`: the Makefile has no target {t}"
                         for t in words[1:] if "=" not in t and t not in makefile_targets()]
        elif words[0] in ("pip", "git", "cd") or words[1:3] == ["-m", "pip"]:
            if command not in install_lines:
                problems.append(f"`{command}`: only the install lines of `## Install` run pip, git or cd "
                                "(tests/test_install.py pins them, `make test-install` runs them)")
        elif words[0] == "mypy":
            if f"$(PY) -m {command}" not in read(REPO / "Makefile"):
                problems.append(f"`{command}`: `make test` does not run it")
        elif words == [".ci/run"]:
            if not (os.access(REPO / ".ci" / "run", os.X_OK) and "make test\n" in read(REPO / ".ci" / "run")):
                problems.append("`.ci/run`: it must be executable and run `make test`")
        else:
            problems.append(f"`{command}`: no rule of tests/test_readme.py checks this command; add one")
    assert not problems, "\n".join(problems)


def test_the_make_targets_the_readme_shows_resolve() -> None:
    targets = sorted({t for _, command in commands(read(README)) if words_of(command)[0] == "make"
                      for t in words_of(command)[1:] if "=" not in t})
    assert "demo" in targets and "test" in targets, targets
    for target in targets:
        dry = subprocess.run(["make", "-n", "--no-print-directory", target], cwd=REPO, capture_output=True,
                             text=True, timeout=120)
        assert dry.returncode == 0, f"`make {target}`: {dry.stderr}"


def _console_runs() -> list[tuple[str, str]]:
    """(command, output shown) of every `console` block line of the README."""
    runs: list[tuple[str, str]] = []
    for info, content in blocks(read(README)):
        if info != "console":
            continue
        for line in content.splitlines(keepends=True):
            if line.startswith("$ "):
                runs.append((line[2:].strip(), ""))
            elif runs:
                runs[-1] = (runs[-1][0], runs[-1][1] + line)
    return runs


@pytest.mark.parametrize(("command", "shown"), _console_runs(), ids=lambda v: v if v.startswith("layout") else "")
def test_console_commands_print_what_the_readme_shows(command: str, shown: str) -> None:
    argv = shlex.split(command)
    assert argv[0] == "layoutgen", f"`{command}`: a console block of the README runs only `layoutgen`"
    writes = argv[1] not in ("show", "check", "explain") or any(
        a in argv for a in ("--compile", "--execute", "--svg", "--png"))
    assert not writes, f"`{command}` writes or compiles: show it in a `sh` block, run by a test of its own"
    _, printed = run_layoutgen(argv[1:])
    assert printed == shown, f"README.md: the output of `{command}` changed"


# -- its Python -----------------------------------------------------------------------------------------


def test_the_readme_declarations_are_the_examples() -> None:
    """Each Python block that declares something runs, and declares what examples/vsn/spec.py does."""
    from layoutgen import Kernel, Layout, Spec
    from examples.vsn import spec as example

    python = [content for info, content in blocks(read(README)) if info == "python"]
    launching = [c for c in python if "import generated." in c or "window.data[" in c]
    assert len(launching) == 2, "the GPU example and the refusal: tests/test_docs.py runs them on a GPU"
    declaring = [c for c in python if c not in launching]
    assert declaring, "README.md has no declaration block"
    layouts = {name: value for name, value in vars(example).items() if isinstance(value, Layout)}
    for n, content in enumerate(declaring):
        namespace: dict[str, Any] = dict(layouts)
        exec(compile(content, f"README.md, declaration block {n + 1}", "exec"), namespace)  # noqa: S102
        for name, value in namespace.items():
            if isinstance(value, Layout):
                assert str(value) == str(getattr(example, name)), f"README.md: `{name}` is not the example's"
            elif isinstance(value, Kernel):
                theirs = getattr(example, name)
                for part in ("name", "template", "params", "grid", "doc", "scalars", "shared"):
                    assert getattr(value, part) == getattr(theirs, part), f"README.md: `{name}`.{part} differs"
            elif isinstance(value, Spec):
                bound = {b.name: b for b in example.spec.kernels}
                for binding in value.kernels:
                    shown = [(n, v.layout, v.region, v.axis_range) for n, v in binding.views]
                    real = [(n, v.layout, v.region, v.axis_range) for n, v in bound[binding.name].views]
                    assert shown == real, f"README.md binds `{binding.name}` otherwise than the example"


# -- links and paths ------------------------------------------------------------------------------------


def _slugs(markdown: str) -> set[str]:
    """GitHub's anchors of a page's headings (outside code blocks)."""
    headings = re.findall(r"^#{1,6} (.+?)\s*$", _FENCE.sub("", markdown), flags=re.M)
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}


@pytest.mark.parametrize("page", [README, PERFORMANCE], ids=lambda p: p.relative_to(REPO).as_posix())
def test_links_and_paths_resolve(page: Path) -> None:
    text = read(page)
    prose = _FENCE.sub("", text)
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", prose):
        if re.match(r"[a-z]+:", target):
            continue  # https: and the like
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            broken.append(f"link {target}: no such file")
        elif anchor and linked.suffix == ".md" and anchor not in _slugs(read(linked)):
            broken.append(f"link {target}: no heading #{anchor} in {linked.relative_to(REPO)}")
    for span in _SPAN.findall(prose):
        for path in _REPO_PATH.findall(span):
            if not any(REPO.glob(path.rstrip("/"))):
                broken.append(f"`{path}`: no such path in the repository")
    assert not broken, f"{page.relative_to(REPO)}:\n" + "\n".join(broken)


# -- the performance page -------------------------------------------------------------------------------


def test_the_performance_page_has_every_benchmark_one_table_a_section() -> None:
    text = read(PERFORMANCE)
    missing = sorted(p.name for p in (REPO / "benchmarks").glob("bench_*.py") if p.name not in text)
    assert not missing, f"docs/performance.md does not say what these benchmarks measured: {missing}"
    figures = section(text, "The figures")
    for part in re.split(r"^### ", figures, flags=re.M)[1:]:
        tables = len(re.findall(r"^\|[-| ]+\|\s*$", part, flags=re.M))
        assert tables <= 1, f"docs/performance.md, {part.splitlines()[0]}: {tables} tables, one run a benchmark"


def test_the_readme_performance_summary_quotes_the_page() -> None:
    summary = section(read(README), "Performance")
    assert "(docs/performance.md)" in summary
    page = read(PERFORMANCE)
    invented = [n for n in re.findall(r"\d+\.\d+", summary) if n not in page]
    assert not invented, f"README.md's performance summary gives figures docs/performance.md lacks: {invented}"
