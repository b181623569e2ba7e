"""Every file the package needs at run time is shipped: the headers and templates match package data.

``layoutgen/include/`` (the device library, the host runtime of ``check --execute``) and
``layoutgen/templates/`` are read at run time from the installed package. A wheel carries a file that is not
Python code only where a pattern of ``[tool.setuptools.package-data]`` names it, so a header added without a
pattern works in the checkout and is missing from every install (as the host's stand-ins for ``cuda_fp16.h``
were). Patterns are matched as setuptools globs them: relative to the package, ``*`` within one folder.
"""

from __future__ import annotations

import tomllib
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "layoutgen"
SHIPPED_FOLDERS = ("include", "templates")


def _patterns() -> list[str]:
    table = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = table["tool"]["setuptools"]["package-data"]["layoutgen"]
    assert isinstance(patterns, list) and patterns, "[tool.setuptools.package-data] names no file of layoutgen"
    return patterns


def _globbed(path: PurePosixPath, pattern: str) -> bool:
    """Whether setuptools' glob of ``pattern`` (relative to the package) takes ``path``: one folder per part."""
    parts = PurePosixPath(pattern).parts
    return len(parts) == len(path.parts) and all(fnmatchcase(p, q) for p, q in zip(path.parts, parts))


def _needed() -> list[PurePosixPath]:
    """The files under the shipped folders that only package data ships: not Python modules of a package
    (those ship as code) and not Python's caches."""
    out = []
    for folder in SHIPPED_FOLDERS:
        for path in sorted((PACKAGE / folder).rglob("*")):
            if not path.is_file() or "__pycache__" in path.parts:
                continue
            if path.suffix == ".py" and (path.parent / "__init__.py").is_file():
                continue
            out.append(PurePosixPath(path.relative_to(PACKAGE).as_posix()))
    return out


def test_every_header_and_template_is_package_data() -> None:
    patterns = _patterns()
    needed = _needed()
    assert len(needed) > 10  # the folders were read: the views template, the host runtime...
    unshipped = [str(p) for p in needed if not any(_globbed(p, pattern) for pattern in patterns)]
    assert unshipped == [], f"add a pattern to [tool.setuptools.package-data] for: {', '.join(unshipped)}"


def test_the_glob_is_setuptools_one_folder_per_star() -> None:
    """What the test above relies on: `*` does not reach into a subfolder, as setuptools' glob does not."""
    header = PurePosixPath("include/lg/host/cuda/cuda_fp16.h")
    assert _globbed(header, "include/lg/host/cuda/*.h")
    assert not _globbed(header, "include/lg/host/*.h")
    assert not _globbed(PurePosixPath("templates/kernel.cu.j2"), "templates/*.cuh")
