"""Installing layoutgen: the CUDA extras, the headers NVRTC gets, the install commands the docs give.

The quick tests run in every `make test`. The ones marked `install` build
fresh virtual environments from PyPI (a few minutes, and several hundred MB
of wheels the first time): `make test-install` runs them
(LAYOUTGEN_INSTALL_TESTS=1); elsewhere they skip. The test of the CUDA 12
environment runs where `.venv-cu12` exists, which `make test` makes first.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from layoutgen.runtime.device_library import LIBRARY_INCLUDE
import yaml

from layoutgen.runtime import nvrtc as rt
from layoutgen.runtime import paths

REPO = Path(__file__).resolve().parent.parent
VENV12 = REPO / ".venv-cu12"
#: What each extra must install: (distribution, lowest major allowed, first major refused).
CUDA_EXTRAS = {
    "cuda13": {"cupy-cuda13x": (14, 15), "nvidia-cuda-nvrtc": (13, 14), "nvidia-cuda-runtime": (13, 14)},
    "cuda12": {"cupy-cuda12x": (14, 15), "nvidia-cuda-nvrtc-cu12": (12, 13), "nvidia-cuda-runtime-cu12": (12, 13)},
}
_PIN = re.compile(r"^(?P<name>[A-Za-z0-9_.\-]+)(?:\[[^\]]*\])?\s*>=(?P<low>\d+),\s*<(?P<high>\d+)$")


def pyproject() -> dict[str, object]:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))


def extras() -> dict[str, list[str]]:
    project = pyproject()["project"]
    assert isinstance(project, dict)
    return dict(project["optional-dependencies"])


# -- the extras -----------------------------------------------------------------------------------


def test_each_cuda_extra_installs_cupy_nvrtc_and_headers_of_one_major() -> None:
    found = extras()
    for extra, wanted in CUDA_EXTRAS.items():
        pins = {}
        for requirement in found[extra]:
            m = _PIN.match(requirement)
            assert m, f"`{extra}`: {requirement!r} must pin a major range, like 'name>=13,<14'"
            pins[m["name"]] = (int(m["low"]), int(m["high"]))
        assert pins == wanted, extra
    # The base install needs no CUDA at all: generate and check run anywhere, and either extra can be added.
    project = pyproject()["project"]
    assert isinstance(project, dict)
    assert not [d for d in project["dependencies"] if d.startswith(("cupy", "nvidia"))], project["dependencies"]
    assert found["compile"] == ["layoutgen[cuda13]"]  # the earlier name of the CUDA 13 set


def test_make_test_installs_the_cuda13_set_and_a_cuda12_environment() -> None:
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    assert "pip install --quiet -e '.[dev,cuda13]'" in makefile
    assert "pip install --quiet -e '.[cuda12]'" in makefile
    test = re.search(r"^test: (.*)\n((?:\t.*\n)+)", makefile, flags=re.M)
    assert test and "$(STAMP12)" in test[1]
    assert "\t$(PY12) -m layoutgen check --compile\n" in test[2]  # every kernel, compiled with NVRTC 12 too
    assert ".venv-cu12/" in (REPO / ".gitignore").read_text(encoding="utf-8").splitlines()


# -- which headers NVRTC gets --------------------------------------------------------------------------


def fake_headers(folder: Path, version: int) -> Path:
    folder.mkdir(parents=True)
    (folder / "cuda_runtime.h").write_text("// cuda_runtime.h\n")
    (folder / "cuda_runtime_api.h").write_text(f"#pragma once\n#define CUDART_VERSION  {version}\n")
    return folder


@pytest.fixture
def both_wheels(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, Path]:
    """The header folders of nvidia-cuda-runtime 13.5 and nvidia-cuda-runtime-cu12 12.9, and a CUDA 13.0 toolkit,
    all installed (an environment where both wheels ended up, and /usr/local/cuda of another major)."""
    site = tmp_path / "site"
    cu13 = fake_headers(site / "nvidia" / "cu13" / "include", 13050)
    cu12 = fake_headers(site / "nvidia" / "cuda_runtime" / "include", 12090)
    toolkit = fake_headers(tmp_path / "cuda-13.0" / "include", 13000)
    # Only this `nvidia` namespace: the one installed here must not show through (it is looked up on sys.path).
    monkeypatch.setattr(sys, "path", [str(site)])
    for name in [m for m in sys.modules if m == "nvidia" or m.startswith("nvidia.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.delenv(paths.CUDA_INCLUDE_ENV, raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.setattr(paths, "DEFAULT_TOOLKIT", toolkit.parent)
    return cu13, cu12, toolkit


def test_nvrtc_gets_the_headers_of_its_own_major(both_wheels: tuple[Path, Path, Path]) -> None:
    cu13, cu12, toolkit = both_wheels
    assert paths.header_major(cu13) == 13 and paths.header_major(cu12) == 12 and paths.header_major(toolkit) == 13
    assert paths.cuda_include_dirs(12) == (cu12,)
    assert paths.cuda_include_dirs(13) == (cu13, toolkit)
    assert paths.cuda_include_dirs() == (cu13, cu12, toolkit)  # no NVRTC to ask: every folder


def test_compile_options_follow_the_loaded_nvrtc(both_wheels: tuple[Path, Path, Path],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    cu13, cu12, toolkit = both_wheels
    monkeypatch.setattr(rt, "nvrtc_version", lambda: (12, 9))
    assert rt.CompileRequest("", "k.cu").nvrtc_options() == (
        "-arch=sm_90", "--std=c++17", f"-I{LIBRARY_INCLUDE}", f"-I{cu12}", "--ptxas-options=-v")
    monkeypatch.setattr(rt, "nvrtc_version", lambda: (13, 5))
    assert rt.CompileRequest("", "k.cu").nvrtc_options() == (
        "-arch=sm_90", "--std=c++17", f"-I{LIBRARY_INCLUDE}", f"-I{cu13}", f"-I{toolkit}", "--ptxas-options=-v")


def test_a_folder_of_unknown_version_is_kept(tmp_path: Path) -> None:
    assert paths.header_major(tmp_path) is None  # no cuda_runtime_api.h: nothing says it is the other major
    (tmp_path / "cuda_runtime_api.h").write_text("// no version here\n")
    assert paths.header_major(tmp_path) is None


# -- the install commands of the docs --------------------------------------------------------------------

_PIP = re.compile(r"pip install (?P<args>.+)$", re.M)


def install_lines(text: str) -> list[str]:
    """The arguments of every `pip install` in ``text`` that installs layoutgen."""
    return [m["args"].strip() for m in _PIP.finditer(text) if "layoutgen" in m["args"] or "[cuda" in m["args"]]


def readme_install() -> str:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    m = re.search(r"^## Install\s*$(.*?)(?=^## )", readme, flags=re.M | re.S)
    assert m, "README.md has no `## Install` section"
    return m[1]


def test_the_readme_installs_from_a_clone_a_git_url_and_a_wheel() -> None:
    section = readme_install()
    assert install_lines(section) == [
        '-e ".[cuda13]"',
        '"layoutgen[cuda13] @ git+https://github.com/your-org/layoutgen@main"',
        '"$(ls dist/layoutgen-*.whl)[cuda13]"',
    ]
    assert "make wheel" in section and re.search(r"^wheel:", (REPO / "Makefile").read_text(), flags=re.M)
    assert "placeholder" in section  # the URL is marked as one
    for extra in re.findall(r"`(cuda\d+)`", section):
        assert extra in extras(), extra


def test_ci_docs_install_layoutgen_in_a_spelling_that_works() -> None:
    """No bare `layoutgen[...]`, which pip would look up on PyPI, where layoutgen is not."""
    workflow = yaml.safe_load((REPO / "docs" / "github-actions.yml").read_text(encoding="utf-8"))
    (job,) = workflow["jobs"].values()
    runs = [s["run"] for s in job["steps"] if "pip install" in s.get("run", "")]
    page = (REPO / "docs" / "ci.md").read_text(encoding="utf-8")
    lines = [args for run in runs for args in install_lines(run)] + install_lines(page)
    assert lines, "no install command found"
    for args in lines:
        if args.startswith(". "):  # what pre-commit runs for `additional_dependencies`, quoted in the text
            assert args == '. "layoutgen[cuda13]"`), so the extra applies to it', args
            continue
        m = re.search(r'"layoutgen\[(?P<extra>[\w,]+)\](?P<rest>[^"]*)"', args)
        assert m, args
        assert m["rest"].startswith(" @ git+https://"), f"{args}: not an installable reference"
        assert all(e in extras() for e in m["extra"].split(",")), args
    # pre-commit installs the hook repository itself with these, so the extra names its layoutgen.
    assert 'additional_dependencies: ["layoutgen[cuda13]"]' in page
    assert "layoutgen[compile]" not in page


def test_the_pre_commit_example_pins_a_revision_that_exists() -> None:
    page = (REPO / "docs" / "ci.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```yaml\n(.*?)^```", page, flags=re.M | re.S)
    configs = [c for c in map(yaml.safe_load, blocks) if isinstance(c, dict) and "repos" in c]
    (remote,) = [r for c in configs for r in c["repos"] if r["repo"] != "local"]
    rev = str(remote["rev"])
    if not (REPO / ".git").exists():
        pytest.skip("not a git clone: no revisions to look up")
    found = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], cwd=REPO,
                           capture_output=True, text=True)
    assert found.returncode == 0, f"`rev: {rev}` names no branch, tag or commit of layoutgen"
    assert {h["id"] for h in remote["hooks"]} <= {h["id"] for h in yaml.safe_load(
        (REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))}


# -- CUDA 12, in its own environment ----------------------------------------------------------------

_PROBE = r"""
import json, struct
from layoutgen.runtime import paths
from layoutgen.runtime.nvrtc import CompileRequest, compile_cubin, nvrtc_version
major, minor = nvrtc_version()
source = '#include <cuda_fp16.h>\nextern "C" __global__ void k(__half* x) { x[0] = __float2half(1.0f); }\n'
cubin = compile_cubin(CompileRequest(source, "k.cu", arch="sm_90")).cubin
flags = struct.unpack_from("<I", cubin, 0x30)[0]
print(json.dumps({"nvrtc": [major, minor], "elf": cubin[:4] == b"\x7fELF",
                  "sm": flags & 0xFF if cubin[8] < 8 else (flags >> 8) & 0xFF,
                  "headers": [str(d) for d in paths.cuda_include_dirs(major)]}))
"""


@pytest.mark.skipif(not (VENV12 / "bin" / "python").exists(), reason="no .venv-cu12 here (`make venv-cu12` makes it)")
def test_the_cuda12_environment_compiles_cubins_with_nvrtc_12_and_its_headers() -> None:
    env = {k: v for k, v in os.environ.items() if k not in (paths.CUDA_INCLUDE_ENV, "PYTHONPATH")}
    done = subprocess.run([str(VENV12 / "bin" / "python"), "-c", _PROBE], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    probe = json.loads(done.stdout)
    assert probe["nvrtc"][0] == 12 and probe["elf"] and probe["sm"] == 90  # a cubin for sm_90, not PTX
    assert probe["headers"][0].endswith("nvidia/cuda_runtime/include"), probe["headers"]
    assert not any("/cu13/" in h for h in probe["headers"]), probe["headers"]


# -- fresh environments (make test-install) ---------------------------------------------------------

install = pytest.mark.skipif(os.environ.get("LAYOUTGEN_INSTALL_TESTS") != "1",
                             reason="builds fresh environments from PyPI: `make test-install` runs it")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel `make wheel` builds (into a folder of the test's)."""
    dist = tmp_path_factory.mktemp("dist")
    subprocess.run(["make", "--no-print-directory", "wheel", f"DIST={dist}"], cwd=REPO, check=True,
                   capture_output=True, timeout=600)
    (built,) = dist.glob("layoutgen-*.whl")
    return built


@pytest.mark.install
@install
def test_make_wheel_builds_a_wheel_with_the_templates_and_the_extras(wheel: Path) -> None:
    import zipfile

    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        (metadata,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        text = archive.read(metadata).decode()
    package = [p.relative_to(REPO).as_posix() for p in sorted((REPO / "layoutgen").rglob("*"))
               if (p.is_file() or p.is_symlink()) and "__pycache__" not in p.parts and p.suffix != ".pyc"]
    assert "layoutgen/templates/kernel.cu.j2" in package and "layoutgen/runtime/prebuilt.py" in package
    missing = sorted(set(package) - set(names))
    assert not missing, f"the wheel lacks files of the package (package-data in pyproject.toml): {missing}"
    for extra in CUDA_EXTRAS:
        assert f"Provides-Extra: {extra}" in text
    assert not [n for n in names if n.startswith(("tests/", "examples/", "generated/"))]


@pytest.mark.install
@install
@pytest.mark.parametrize("source", ["wheel", "clone"])
@pytest.mark.parametrize("extra", sorted(CUDA_EXTRAS))
def test_a_fresh_environment_installs_layoutgen_and_compiles_the_examples(
        source: str, extra: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    target = f"{request.getfixturevalue('wheel')}[{extra}]" if source == "wheel" else f"{REPO}[{extra}]"
    pip = [str(python), "-m", "pip", "install", "--quiet", *(["-e"] if source == "clone" else []), target]
    subprocess.run(pip, check=True, capture_output=True, timeout=900)
    project = tmp_path / "project"  # a copy of the examples and of this repository's [tool.layoutgen]
    shutil.copytree(REPO / "examples", project / "examples", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", project / "pyproject.toml")
    env = {**{k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", paths.CUDA_INCLUDE_ENV)},
           "LAYOUTGEN_CACHE_DIR": str(tmp_path / "cache")}
    layoutgen = str(venv / "bin" / "layoutgen")
    for command in (["generate", "-q"], ["check", "--compile"], ["build", "-q", "--arch", "sm_80,sm_90"]):
        done = subprocess.run([layoutgen, *command], cwd=project, env=env, capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, f"layoutgen {' '.join(command)}:\n{done.stdout}{done.stderr}"
    probe = subprocess.run([str(python), "-c", "from layoutgen.runtime.nvrtc import nvrtc_version; "
                            "print(nvrtc_version()[0])"], cwd=project, env=env, capture_output=True, text=True)
    assert probe.stdout.strip() == extra.removeprefix("cuda")  # the extra's NVRTC is the one used
