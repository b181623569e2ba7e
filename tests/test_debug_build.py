"""The debug build, without a GPU: what `--debug` adds, that it compiles, and that release output ignores it.

The release build is pinned by the golden files (tests/golden) and by the
committed generated code; here the same specs are rendered both ways and
compared. The debug build's own behaviour on a device (a planted
out-of-field access, a planted NaN) is in tests/gpu/test_program_gpu.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from layoutgen.codegen.render import render_spec
from layoutgen.project.config import ConfigError, load_config
from layoutgen.project.specload import load_spec
from tests.test_cli import layoutgen
from tests.test_codegen import render

REPO = Path(__file__).resolve().parent.parent
SPEC = "tests/specs/debug/spec.py"


def _render(spec: str, debug: bool) -> dict[str, str]:
    return render(spec, debug=debug, project=True).files  # as the committed `generated/` is: with the configuration


def test_release_output_is_the_committed_code_and_debug_only_adds() -> None:
    release = _render("examples/vsn/spec.py", debug=False)
    for path, text in release.items():  # the feature changes nothing of the release build
        assert (REPO / "generated" / path).read_text(encoding="utf-8") == text, path
    debug = _render("examples/vsn/spec.py", debug=True)
    assert debug.keys() == release.keys()
    header = debug["vsn/vsn.cuh"]
    assert "__device__ lg::Fault lg_fault;" in header and "lg_check(r, c)" in header
    assert "lg_fault" not in release["vsn/vsn.cuh"] and "lg_check" not in release["vsn/vsn.cuh"]
    kernel = debug["vsn/variable_selection_fwd.cu"]
    assert ('const lg::views::vsn::Window_snap_view<const float, 16, lg::Packing::strided> x{ {lg_arg_x}, lg_dim_B, lg_dim_K, 0, '
            '"variable_selection_fwd.x (Window.snap)" };') in kernel
    module = debug["vsn/__init__.py"]
    assert "debug=True," in module and "cols=(0, 40)" in module and "This is the debug build" in module
    assert "debug=True" not in release["vsn/__init__.py"]


def test_every_release_line_survives_in_the_debug_build() -> None:
    # Debug code is only added: the release build's lines appear in order in the debug build's
    # (apart from the stamp, which hashes the text, and the stamps of the other files the module names).
    release, debug = _render(SPEC, debug=False), _render(SPEC, debug=True)
    for path in release:
        lines = iter(debug[path].splitlines()[2:])
        # Lines that gain debug arguments; a view's operator() hands out a checked reference and takes the
        # caller's line in the debug build (a redefinition, the one line the debug build replaces).
        kept = [line for line in release[path].splitlines()[2:]
                if "{ {lg_" not in line and "ParamSpec(" not in line and "'sha256:" not in line
                and not line.startswith(("    __device__ __forceinline__ T& operator()(", "        return this->at("))]
        missing = [line for line in kept if not any(line == d for d in lines)]
        assert missing == [], (path, missing)


def test_the_debug_build_compiles_offline(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO), "LAYOUTGEN_CACHE_DIR": str(tmp_path / "cache")}
    run = subprocess.run([sys.executable, "-m", "layoutgen", "check", "--compile", "--debug", "--out",
                          "build/test-debug-offline", SPEC], cwd=REPO, env=env, capture_output=True, text=True,
                         timeout=600)
    # Nothing was generated into that folder, so drift is expected; compile errors are not.
    assert "LG501" not in run.stdout, run.stdout
    assert list((tmp_path / "cache").rglob("*.cubin")), run.stdout + run.stderr


def test_generate_debug_into_the_committed_folder_is_drift() -> None:
    run = layoutgen("generate", "--check", "--debug", "examples/vsn/spec.py", cwd=REPO)
    assert run.returncode == 1
    assert "+__device__ lg::Fault lg_fault;" in run.stdout


def test_debug_is_a_config_key(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.layoutgen]\ndebug = true\n")
    assert load_config(tmp_path).debug is True
    (tmp_path / "pyproject.toml").write_text('[tool.layoutgen]\ndebug = "yes"\n')
    with pytest.raises(ConfigError, match=r'`\[tool.layoutgen\].debug` must be true or false, got "yes"'):
        load_config(tmp_path)


@pytest.mark.parametrize("spec", ["tests/specs/sanitizer/bad.py", "tests/specs/sanitizer/good.py",
                                  "tests/specs/sanitizer/pointers.py"])
def test_the_checked_pointers_of_the_debug_build_compile_with_nvrtc(spec: str) -> None:
    """The sanitizer's test kernels (pointers from views kept raw, in `auto`, through template helpers, cast to
    float4 with reinterpret_cast, a hand-written entry) compile unchanged in the debug build, where `&x.at(r, c)`
    is an lg::checked_ptr (the CPU run compiles the same build for the host: tests/test_execute_host.py)."""
    from layoutgen.runtime.nvrtc import CompileRequest, compile_cubin

    loaded = load_spec(REPO / spec)
    assert loaded.spec is not None
    rendered = render_spec(loaded.spec, REPO, spec, debug=True, out="build/test-debug-checked")
    headers = tuple(sorted((path.rsplit("/", 1)[-1], text) for path, text in rendered.files.items()
                           if path.endswith(".cuh")))
    kernels = {path: text for path, text in rendered.files.items() if path.endswith(".cu")}
    assert kernels and all("lg::checked_ptr" in text for _, text in headers)
    for path, text in sorted(kernels.items()):
        assert compile_cubin(CompileRequest(text, path, headers=headers, arch="sm_90")).cubin, path
