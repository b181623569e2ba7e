"""Which run of ``layoutgen generate`` each file a launcher compiles comes from (LG640).

``generate`` replaces a package's files one rename at a time, its ``__init__.py`` last, so a run killed
between two renames leaves kernels or a views header of the new run beside the launchers of the old one
(renaming cannot make several files change at once). A launcher of one run compiling a kernel of another
checks arrays against one run's layouts and runs code written for the other's: a row width of 56 checked,
64 compiled, which is the bug layoutgen exists to prevent. So the generated module names the stamp (the
``layoutgen-hash`` line, :mod:`layoutgen.codegen.stamp`) of every kernel file and header its launchers
compile, as that run wrote them (:func:`expect`, when the module is imported), and a launcher refuses a file
whose stamp is another (:func:`check`) when it reads the file, before compiling it or loading a cubin of it:
the cache's key and a shipped cubin's manifest digest are both of the text checked here, so neither can
stand for another run's kernel either.

Only the stamp line is compared, not the body: a file edited by hand keeps its run's stamp and compiles as
it did (``layoutgen check`` reports the edit, LG509).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from ..schema.diagnostics import display_path
from .errors import launch_error

__all__ = ["HEAD_LINES", "check", "expect", "stamp_of"]

#: How far from the top a stamp is looked for (as ``layoutgen.codegen.stamp`` writes it: the second line).
HEAD_LINES = 5
# The hash line :mod:`layoutgen.codegen.stamp` writes, behind `//`, `#` or inside `/* */`; the runtime may not
# import the generator, so the test suite holds the two to one format (tests/test_stamps.py).
_HASH = re.compile(r"layoutgen-hash: (sha256:[0-9a-f]{64})")

# A module's folder -> the stamp of each file its launchers compile, by file name. Set whole by each import of a
# generated module (an import of a regenerated package replaces it).
_EXPECTED: dict[Path, Mapping[str, str]] = {}


def stamp_of(text: str) -> str | None:
    """The stamp (``sha256:<hex>``) in the first lines of a generated file's ``text``; None where there is none."""
    for line in text.split("\n", HEAD_LINES)[:HEAD_LINES]:
        found = _HASH.search(line)
        if found:
            return found.group(1)
    return None


def expect(folder: Path, stamps: Mapping[str, str]) -> None:
    """Record that the launchers of the generated module in ``folder`` compile the files named in ``stamps``
    (file name -> ``sha256:<hex>``) as they were stamped; what a generated module calls when imported."""
    _EXPECTED[folder] = dict(stamps)


def check(kernel: str, folder: Path, files: Iterable[tuple[str, str]]) -> None:
    """LG640 (a LaunchError) for the first of ``files`` ((file name in ``folder``, text), as just read to compile
    ``kernel``) whose stamp is not the one the module in ``folder`` was generated with. A folder no generated
    module named stamps for (a launcher built by hand) is not checked."""
    expected = _EXPECTED.get(folder)
    if expected is None:
        return
    for name, text in files:
        want = expected.get(name)
        found = stamp_of(text)
        if found is not None and found == want:
            continue
        module = display_path(str(folder / "__init__.py"))
        shown = display_path(str(folder / name))
        if want is None:
            what = f"`{module}` was not generated with `{shown}`"
        elif found is None:
            what = f"`{shown}` has no `layoutgen-hash` line, and `{module}` was generated with the one of {_short(want)}"
        else:
            what = (f"`{shown}` is of another run of `layoutgen generate` than `{module}`: the file is "
                    f"{_short(found)}, the module was generated with {_short(want)}")
        raise launch_error(
            "LG640", f"{what}; `{kernel}` would check arrays against the layouts of one run and compile the kernel "
            "of another, so it compiles and loads nothing",
            hint="run `layoutgen generate` to write the whole package again (a run that was interrupted leaves "
            "files of two runs), then import it again")


def _short(stamp: str) -> str:
    """``sha256:1a2b3c4d5e6f``: enough of a stamp to tell two runs apart in a message."""
    return stamp[: len("sha256:") + 12]
