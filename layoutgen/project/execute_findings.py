"""The sanitizer's findings (``LGSAN`` lines of a host program) as diagnostics at the user's line.

A finding carries the address of the access or of the check's call; ``addr2line`` reads it back through
the ``#line`` directives of the generated file to the innermost line that is the user's own: a template,
a hand-written ``.cu``, a project header (a helper's line, where the access is in the helper). The build
names its files relative to the project root or by marks (:func:`prefix_maps`), so that a program cached by
content reports the same relative paths from any checkout of the project. The
messages name the kernel, the parameter and its view, the row and column against the field's columns, and
the block and thread.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from ..runtime.debug import barrier_fault, field_fault, footprint_fault, nan_fault, tile_fault, unheld_fault
from ..schema.diagnostics import Diagnostic, Site
from .execute_harness import HostProgram
from .footprints import Footprint


#: What the host program's build names its own files by (``-ffile-prefix-map``, :func:`prefix_maps`): the build
#: folder, the host headers layoutgen ships, the project's header folders (each by its place in ``include``).
#: A cached program is the same bytes from every checkout, and its findings name the same relative paths.
BUILD_MARK = ".layoutgen-host/build"
HEADERS_MARK = ".layoutgen-host/include"
PROJECT_MARK = ".layoutgen-host/project-include"


def prefix_maps(root: Path, build: Path, include: Sequence[Path], headers: Path) -> list[str]:
    """The compiler's options that name every file of a host program relative to the project ``root`` (the
    build runs there: a ``#line`` name is relative to it) or by a mark (:data:`BUILD_MARK`...), never by where
    this checkout lies. The later maps win (g++ tries the last first): the folders may lie inside the root."""
    maps = [(root, ".")]
    maps += [(folder, f"{PROJECT_MARK}/{n}") for n, folder in enumerate(include)]
    maps += [(headers, HEADERS_MARK), (build, BUILD_MARK)]
    return [f"-ffile-prefix-map={Path(folder).resolve()}={mark}" for folder, mark in maps]


def shown_path(path: str, root: Path, include: Sequence[Path], out: str = "generated") -> str | None:
    """A file named in a host program's line tables as the user knows it (relative to ``root`` where it lies
    there), or None where it is layoutgen's: its host headers, the build's files, the generated files (under
    ``out``, the project's output folder)."""
    while path.startswith("./"):
        path = path[2:]
    if path.startswith((BUILD_MARK + "/", HEADERS_MARK + "/")) or path.endswith(".host.cpp"):
        return None
    if path.startswith(PROJECT_MARK + "/"):
        number, _, rest = path[len(PROJECT_MARK) + 1:].partition("/")
        if not number.isdigit() or int(number) >= len(include):
            return None
        path = (Path(include[int(number)]) / rest).as_posix()
    # A generated file names itself by its path under the root in the `#line` after the user's part.
    generated = PurePosixPath(out).as_posix().rstrip("/") + "/"
    if path.startswith(("generated/", generated)) or "/generated/" in path:
        return None
    p = Path(path)
    if p.is_absolute():
        try:
            return p.resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            return path
    return path


def user_sites(executable: Path, places: Sequence[tuple[str, str, bool]], root: Path,
               include: Sequence[Path], out: str = "generated") -> list[Site | None]:
    """For each (pc, calls, call) the user's line of the code at ``pc`` (a return address where ``call``: the line
    of the call), else of the innermost of ``calls`` (return addresses, comma-separated) in the user's code; one
    ``addr2line`` for them all."""
    queries = []
    for pc, calls, call in places:
        addresses = [int(pc, 16) - (1 if call else 0)] if pc.startswith("0x") else []
        queries.append(addresses + [int(a, 16) - 1 for a in calls.split(",") if a.startswith("0x")])
    wanted = sorted({a for q in queries for a in q})
    tool = shutil.which("addr2line")
    if tool is None or not wanted:
        return [None] * len(places)
    run = subprocess.run([tool, "-i", "-a", "-e", str(executable), *map(hex, wanted)], capture_output=True,
                         text=True, timeout=120)
    frames: dict[int, list[str]] = {}
    current: list[str] = []
    for line in run.stdout.splitlines():  # each address, then its innermost frame and those it is inlined into
        if line.startswith("0x"):
            current = frames.setdefault(int(line, 16), [])
        else:
            current.append(line)
    return [_first_users(frames, q, root, include, out) for q in queries]


def _first_users(frames: dict[int, list[str]], addresses: Sequence[int], root: Path,
                 include: Sequence[Path], out: str) -> Site | None:
    for address in addresses:
        for line in frames.get(address, []):
            path, _, number = line.rpartition(":")
            number = number.split(" ")[0]
            if not path or path == "??" or not number.isdigit():
                continue
            shown = shown_path(path, root, include, out)
            if shown is not None:
                return Site(shown, int(number))
    return None


def _array(f: Footprint) -> str:
    if f.access == "shared":
        return f"shared `{f.name}` ({f.what})"
    return f"`{f.name}` ({f.what})"


def _thread(fields: dict[str, str]) -> str:
    return f"block {fields.get('block', '?')}, thread {fields.get('thread', '?')}"


def finding_place(fields: dict[str, str]) -> tuple[str, str, bool]:
    """Where a finding was made, for :func:`user_sites`: its pc, the calls around it, and whether the pc is a
    return address (every finding's is, AddressSanitizer's reports included, but a crash's: the faulting
    instruction). A return address can lie on the next line, so its line is that of the address before it."""
    return fields.get("pc", ""), fields.get("calls", ""), fields["kind"] != "crash"


def finding_diagnostic(program: HostProgram, fields: dict[str, str], found: Site | None,
                       site: Site | None) -> Diagnostic:
    """One finding of ``program`` as a diagnostic at the user's line ``found`` (else at the kernel's binding)."""
    kind = fields["kind"]
    kernel = program.kernel
    where = found or site
    if kind in ("footprint", "pointer"):  # AddressSanitizer's finding, or a checked pointer's (the same words)
        f = program.footprints[int(fields["region"])]
        verb = {"0": "read", "1": "wrote"}.get(fields["write"], "accessed")
        row, col = int(fields["row"]), int(fields["col"])
        if f.access == "shared":  # the debug build's LG611 on the GPU, for a pointer taken from a tile: word for word
            tile_row = row % f.layout_rows if f.row_stride != f.width or f.layout_rows > 1 else None
            return tile_fault("LG650", kernel, _array(f), verb, tile_row, col, f.width, f.row_stride,
                              (fields.get("block", "?"), fields.get("thread", "?")), where)
        return footprint_fault("LG650", kernel, f.name, f.what, verb, row, col, int(fields["field_row"]), f.offset,
                               f.width, f.row_stride, (int(fields["block"]), int(fields["thread"])), where)
    if kind == "crash":
        return Diagnostic("LG532", f"`{kernel}` crashed on the CPU ({fields.get('what', '').strip()}), in "
                          f"{_thread(fields)}", where, hint="the line is where it stopped; the inputs are random "
                          "finite values at the sizes `check --execute` chooses")
    if kind == "address":
        message = (f"`{kernel}` accessed memory of no parameter ({fields.get('description', '')}, "
                   f"{fields.get('bytes', '?')} bytes), in {_thread(fields)}")
        return Diagnostic("LG650", message, where, hint="a pointer went past the array of the parameter it came from")
    if kind == "field":  # a view's or tile's own check: the debug build's report on the GPU, word for word
        params = [(f.name, f.what) for f in program.footprints[:program.params]]
        shared = [f.name for f in program.footprints[program.params:]]
        return field_fault("LG651", kernel, params, shared, int(fields["param"]), int(fields["row"]),
                           int(fields["col"]), int(fields["rows"]), int(fields["width"]),
                           (int(fields["block"]), int(fields["thread"])), where)
    if kind in ("barrier", "barrier-exit", "divergent"):  # the debug build's LG642 on the GPU, word for word
        return barrier_fault("LG652", kernel, kind, fields.get("what", "a barrier"),
                             (fields.get("block", "?"), fields.get("thread", "?")), where)
    f = program.footprints[int(fields["region"])]
    row, col = int(fields["field_row"]), int(fields["col"]) - f.offset
    if kind == "unheld":
        return _unheld(program, fields, f, row, col, where)
    if kind in ("unwritten-read", "race"):
        return _shadow_finding(program, fields, f, row, col, where)
    if kind == "unwritten":
        return Diagnostic("LG653", f"`{kernel}` left {_array(f)} unwritten at row {row}, column {col} "
                          f"({program.blocks} blocks of {program.threads} threads)", site,
                          hint="every element of an output's field must be written: a short last tile, warp or "
                          "block, or a loop bound of another field's width, leaves some out")
    return nan_fault("LG654", kernel, _array(f), row, col, site)  # the debug build's LG612 on the GPU, word for word


def _unheld(program: HostProgram, fields: dict[str, str], out: Footprint, row: int, col: int,
            where: Site | None) -> Diagnostic:
    """A NaN in an output after a read of a shared tile's row past those it holds (LG655), at the read's line: the
    debug build's LG612 on the GPU, word for word."""
    tile = program.footprints[program.params + int(fields["tile"])]
    return unheld_fault("LG655", program.kernel, _array(tile), fields["tile_row"], fields["tile_col"],
                        int(fields["held"]), fields["capacity"], (fields.get("block", "?"), fields.get("thread", "?")),
                        _array(out), row, col, where)


def _shadow_finding(program: HostProgram, fields: dict[str, str], f: Footprint, row: int, col: int,
                    where: Site | None) -> Diagnostic:
    """A read of an output element nothing wrote yet (LG656) or two plain writes of one that nothing orders (LG657),
    from the CPU run's shadow of outputs (lg/host/shadow.h), at the access's line."""
    kernel = program.kernel
    if fields["kind"] == "unwritten-read":
        how = {"3": " (a compound assignment such as `+=` reads it first)",
               "4": " (an atomic such as atomicAdd reads it first)"}.get(fields.get("access", "0"), "")
        return Diagnostic("LG656", f"`{kernel}` read {_array(f)} at row {row}, column {col} before anything wrote "
                          f"it{how}, in {_thread(fields)}", where,
                          hint="an Out parameter holds nothing until the kernel writes it: write each element before "
                          "reading it or accumulating into it (zero it first, a barrier between where other threads "
                          "read it), or declare the parameter InOut where its values come in")
    between = ("with no barrier between" if fields.get("other_block") == fields.get("block")
               else "(nothing orders two blocks)")
    return Diagnostic("LG657", f"`{kernel}` wrote {_array(f)} at row {row}, column {col} in {_thread(fields)} after "
                      f"block {fields.get('other_block', '?')}, thread {fields.get('other_thread', '?')} wrote it "
                      f"{between}: plain writes of one element race", where,
                      hint="let one thread write each element (`if (lane == 0)` after a warp's reduction), put a "
                      "barrier between the writers, or accumulate with an atomic into an output zeroed before")
