"""How long `layoutgen generate` and `layoutgen check` take on a spec of 500 kernel bindings.

Builds, in a temporary folder, a project whose one spec declares 50 layouts
and 10 kernels (over 4 small templates) and binds every kernel to every
layout: 500 generated kernels. Then times, each as a fresh `python -m
layoutgen` process (what CI pays):

- ``generate`` into an empty output folder,
- ``check`` (declaration, binding, lint and drift checks; no compile),
- ``generate`` again on unchanged input, which must write 0 files and leave
  every file's mtime as it was;
- the template lint alone, in a fresh process: its 500 readings of the
  templates' text (``lint_template``) and 500 of the rendered kernels
  (``lint_rendered``), within one ``check``.

The same three steps also run in-process through ``layoutgen.cli.main`` (no
interpreter start-up or imports). Prints a table of seconds; the target is
generate + check under 2 s. ``--profile`` adds the top of a cProfile of
an in-process generate + check.

    python benchmarks/bench_generate.py [--repeat N] [--profile]
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
N_LAYOUTS = 50

TEMPLATES = {
    "scale.cu.j2": """\
    // Scale each element of x into y.
#pragma unroll 4
    for (int f = 0; f < F; ++f) {
        y.at(row, f) = x.at(row, f) * 2.0f;
    }
""",
    "copy.cu.j2": """\
    // Copy the first min(F, G) columns.
{% set n = F if F < G else G %}
    for (int c = 0; c < {{ n }}; ++c) {
        y.at(row, c) = x.at(row, c);
    }
""",
    "rowsum.cu.j2": """\
    // Sum the row of x into every column of y.
    float total = 0.0f;
{% for i in range(4) %}
    total += x.at(row, {{ i }} % F);
{% endfor %}
    for (int c = 0; c < G; ++c) y.at(row, c) = total;
""",
    "axpy.cu.j2": """\
    const long long r = element / F;
    const int c = static_cast<int>(element % F);
{% if F > 1 %}
    y.at(r, c) += 0.5f * x.at(r, c);
{% else %}
    y.at(r, 0) += 0.5f * x.at(r, 0);
{% endif %}
""",
}

SPEC = '''\
"""500 bindings: 10 kernels, each bound to each of {n} layouts."""

from layoutgen import Field, Group, Layout, dims, f32
from layoutgen.declare.kernels import Grid, In, InOut, Kernel, Out
from layoutgen.declare.spec import Spec

B, K, F, G = dims("B K F G")

layouts = [
    Layout(f"L{{i}}", [B, K], f32, [
        Field("a", 8 + i % 7),
        Field("b", 4),
        Group("c", [Field("c0", 2 + i % 5), Field("c1", 6)]),
    ])
    for i in range({n})
]

kernels = [
    Kernel("scale_ab", "scale.cu.j2", [In("x", [B, K, F]), Out("y", [B, K, F])]),
    Kernel("scale_cc", "scale.cu.j2", [In("x", [B, K, F]), Out("y", [B, K, F])]),
    Kernel("copy_ab", "copy.cu.j2", [In("x", [B, K, F]), Out("y", [B, K, G])]),
    Kernel("copy_ac", "copy.cu.j2", [In("x", [B, K, F]), Out("y", [B, K, G])]),
    Kernel("copy_cb", "copy.cu.j2", [In("x", [B, K, F]), Out("y", [B, K, G])]),
    Kernel("rowsum_ab", "rowsum.cu.j2", [In("x", [B, K, F]), Out("y", [B, K, G])]),
    Kernel("rowsum_ca", "rowsum.cu.j2", [In("x", [B, K, F]), Out("y", [B, K, G])]),
    Kernel("axpy_aa", "axpy.cu.j2", [In("x", [B, K, F]), InOut("y", [B, K, F])], grid=Grid.elements("y")),
    Kernel("axpy_bb", "axpy.cu.j2", [In("x", [B, K, F]), InOut("y", [B, K, F])], grid=Grid.elements("y")),
    Kernel("axpy_cc", "axpy.cu.j2", [In("x", [B, K, F]), InOut("y", [B, K, F])], grid=Grid.elements("y")),
]
fields = {{"ab": ("a", "a"), "cc": ("c", "c"), "ac": ("a", "c"), "cb": ("c", "b"), "ca": ("c", "a"),
          "aa": ("a", "a"), "bb": ("b", "b")}}


def bind(kernel, layout):
    x, y = fields[kernel.name.rsplit("_", 1)[1]]
    if kernel.name.startswith("scale_ab"):
        x, y = "a", "a"
    return kernel.bind(name=f"{{kernel.name}}_{{layout.name}}", x=layout[x], y=layout[y])


spec = Spec("bench", kernels=[bind(k, lay) for lay in layouts for k in kernels])
'''


def build(root: Path) -> None:
    (root / "spec").mkdir(parents=True)
    for name, text in TEMPLATES.items():
        (root / "spec" / name).write_text(text)
    (root / "spec" / "spec.py").write_text(SPEC.format(n=N_LAYOUTS))
    (root / "pyproject.toml").write_text('[tool.layoutgen]\nspecs = ["spec/spec.py"]\nout = "generated"\n')


def run_cli(root: Path, *args: str) -> tuple[float, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "layoutgen", *args], cwd=root, env=env, capture_output=True,
                          text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"layoutgen {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}")
    return elapsed, proc.stdout


def in_process(root: Path, *args: str) -> tuple[float, str]:
    from layoutgen.cli import main

    out = io.StringIO()
    cwd = os.getcwd()
    os.chdir(root)
    try:
        start = time.perf_counter()
        with contextlib.redirect_stdout(out):
            code = main(list(args))
        elapsed = time.perf_counter() - start
    finally:
        os.chdir(cwd)
    if code != 0:
        raise SystemExit(f"layoutgen {' '.join(args)} failed ({code}):\n{out.getvalue()}")
    return elapsed, out.getvalue()


def mtimes(folder: Path) -> dict[str, int]:
    return {p.relative_to(folder).as_posix(): p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()}


def measure(runner: Callable[..., tuple[float, str]], repeat: int) -> dict[str, float]:
    """The median seconds of each step over ``repeat`` fresh projects."""
    times: dict[str, list[float]] = {"generate": [], "check": [], "generate again": []}
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="lg-bench-") as tmp:
            root = Path(tmp)
            build(root)
            t, out = runner(root, "generate", "-q")
            times["generate"].append(t)
            kernels = [p for p in (root / "generated" / "bench").iterdir() if p.suffix == ".cu"]
            assert len(kernels) == 500, len(kernels)
            t, out = runner(root, "check")
            assert out.startswith("All checks passed"), out
            times["check"].append(t)
            before = mtimes(root / "generated")
            t, out = runner(root, "generate")
            assert out.endswith("No files changed in 1 spec.\n"), out
            assert mtimes(root / "generated") == before, "regenerating unchanged input touched a file"
            times["generate again"].append(t)
            if runner is run_cli:
                times.setdefault("lint in check (fresh process)", []).append(lint_alone(root))
    return {step: statistics.median(ts) for step, ts in times.items()}


def lint_alone(root: Path) -> float:
    """Seconds a fresh ``check`` of the project at ``root`` spends in the lint (both readings)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, __file__, "--lint-seconds", str(root)], env=env, capture_output=True,
                          text=True, check=True)
    return float(proc.stdout.split()[-1])


def _lint_seconds(root: Path) -> None:
    """Print the seconds this process's ``check`` of ``root`` spends in ``lint_template`` and ``lint_rendered``."""
    import layoutgen.project.process as process

    spent = [0.0]

    def timed(function: Callable[..., list[object]]) -> Callable[..., list[object]]:
        def call(*args: object) -> list[object]:
            start = time.perf_counter()
            try:
                return function(*args)
            finally:
                spent[0] += time.perf_counter() - start
        return call

    process.lint_template = timed(process.lint_template)  # type: ignore[assignment]
    process.lint_rendered = timed(process.lint_rendered)  # type: ignore[assignment]
    in_process(root, "check")
    print(f"{spent[0]:.4f}")


def startup() -> float:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import layoutgen.cli, layoutgen.project.process"], env=env, check=True)
    return time.perf_counter() - start


def profile() -> None:
    with tempfile.TemporaryDirectory(prefix="lg-bench-") as tmp:
        root = Path(tmp)
        build(root)
        prof = cProfile.Profile()
        prof.enable()
        in_process(root, "generate", "-q")
        in_process(root, "check")
        prof.disable()
    stream = io.StringIO()
    pstats.Stats(prof, stream=stream).sort_stats("cumulative").print_stats(30)
    print(stream.getvalue())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="fresh projects to time (the median is shown)")
    parser.add_argument("--profile", action="store_true", help="also print a cProfile of generate + check")
    parser.add_argument("--lint-seconds", type=Path, help=argparse.SUPPRESS)  # lint_alone's child process
    args = parser.parse_args()
    if args.lint_seconds:
        _lint_seconds(args.lint_seconds)
        return

    cli = measure(run_cli, args.repeat)
    inproc = measure(in_process, args.repeat)
    base = startup()
    print(f"layoutgen: 500 kernel bindings (10 kernels x {N_LAYOUTS} layouts, 4 templates); "
          f"median of {args.repeat}; {os.cpu_count()} CPUs")
    print()
    print(f"{'step':<34}{'subprocess (s)':>16}{'in-process (s)':>16}")
    for step in cli:
        print(f"{step:<34}{cli[step]:>16.3f}" + (f"{inproc[step]:>16.3f}" if step in inproc else ""))
    total_cli = cli["generate"] + cli["check"]
    total_in = inproc["generate"] + inproc["check"]
    print(f"{'generate + check':<34}{total_cli:>16.3f}{total_in:>16.3f}")
    print(f"{'python start + import layoutgen':<34}{base:>16.3f}{'':>16}")
    print()
    verdict = "meets" if total_cli < 2.0 else "misses"
    print(f"generate + check as two commands: {total_cli:.2f} s ({verdict} the 2 s target); "
          "the second generate wrote 0 files and left every mtime unchanged.")
    if args.profile:
        print()
        profile()


if __name__ == "__main__":
    main()
