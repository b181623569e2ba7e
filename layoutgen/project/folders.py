"""The project's folders of headers and templates (``include``, ``templates`` of ``[tool.layoutgen]``).

Checked before anything is written: a folder that is not there (LG514) would
make every kernel's ``#include`` or ``{% include %}`` of it fail later, far
from the setting; and a header with the name of a spec's views header (LG516)
is never what a kernel gets, because NVRTC gives the views header, which it
holds in memory, to every ``#include`` of that name.
"""

from __future__ import annotations

from pathlib import Path

from ..declare.spec import Spec
from ..schema.diagnostics import Diagnostic, Site
from .config import Config
from .pyproject_lines import table_site


def missing_folders(config: Config) -> list[Diagnostic]:
    """LG514 for each folder of ``include`` and ``templates`` that is not a folder, at its key's line."""
    out = []
    for key, folders in (("include", config.include), ("templates", config.templates)):
        for folder in folders:
            path = config.root / folder
            if path.is_dir():
                continue
            what = "is a file" if path.exists() else "does not exist"
            out.append(Diagnostic(
                "LG514", f"`[tool.layoutgen].{key}` must name folders, got `{folder}`, which {what}",
                table_site(config.root, key),
                hint=f"create the folder, or remove it from `{key}`; its paths are relative to the project root",
            ))
    return out


def shadowed_headers(config: Config, spec: Spec) -> list[Diagnostic]:
    """LG516 for a header in an ``include`` folder named like the views header of ``spec`` (``<spec>.cuh``)."""
    header = f"{spec.name}.cuh"
    out = []
    for folder in config.include:
        path = config.root / folder / header
        if path.is_file():
            out.append(Diagnostic(
                "LG516", f"project header `{Path(folder, header).as_posix()}` must not be named like the views "
                f"header of spec `{spec.name}`, got `{header}`: NVRTC gives each `#include \"{header}\"` the views "
                "header", Site(str(path), 1),
                hint=f"rename the header, or move it into a sub-folder and include it as `\"<sub-folder>/{header}\"`",
            ))
    return out
