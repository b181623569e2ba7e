"""``layoutgen import``: a starting spec for a team's existing ``.cu`` files.

Reads every ``__global__`` of the files given (a folder: its ``.cu`` and ``.cuh`` files, sorted) and writes a
spec module declaring each as an :class:`~layoutgen.declare.existing_kernels.ExistingKernel`: one entry per
parameter, in order. A pointer becomes ``In`` (``const``) or ``Out`` with a ``TODO`` shape; an integer a
``TODO`` carried value (``Rows``, ``RowStride``, ``Pitch``, ``Offset`` or a dim, guessed from its name where a
name says it, else a ``Dim``); a floating-point value a ``Scalar`` of its type. The user fills the shapes,
the layouts and the bindings; ``layoutgen check`` then compares the declaration with the file (LG231..LG239).
A file that cannot be read, or files with no ``__global__`` at all, are LG541.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..checks.cuda_signatures import INTEGER_TYPES, GlobalKernel, GlobalParam, plain_type, read_kernels
from ..schema.diagnostics import Diagnostic, LayoutgenError

#: Suffixes of the files a folder is searched for.
SUFFIXES = (".cu", ".cuh")
_SCALARS = {"float": "f32", "double": "f64", "bool": "bool"}
_INTEGER_DTYPES = {(32, True): "i32", (32, False): "u32", (64, True): "i64", (64, False): "u64",
                   (16, True): "i16", (16, False): "u16", (8, True): "i8", (8, False): "u8"}
# What an integer's name suggests it carries, checked in order (the first match wins).
_GUESSES = (
    (re.compile(r"pitch", re.I), "Pitch"),
    (re.compile(r"stride|ld[a-z]?$|lead", re.I), "RowStride"),
    (re.compile(r"offset|off$|start", re.I), "Offset"),
    (re.compile(r"^(n_?)?rows?$|num_?rows|rows$", re.I), "Rows"),
)


class ImportError_(LayoutgenError):  # noqa: N801 - `ImportError` is Python's
    """``layoutgen import`` could not read its files, or found no kernel in them (LG541)."""


@dataclass(frozen=True)
class Found:
    """A kernel and the file (as given) that defines it."""

    path: Path
    kernel: GlobalKernel


def cu_files(paths: list[Path]) -> list[Path]:
    """The files to read: each file given, and each folder's ``.cu``/``.cuh`` files (sorted, recursively)."""
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            out.extend(sorted(f for f in p.rglob("*") if f.suffix in SUFFIXES and f.is_file()))
        else:
            out.append(p)
    return out


def read_all(paths: list[Path]) -> list[Found]:
    """Every ``__global__`` of ``paths`` (files, folders), in order; LG541 for a file that cannot be read, or
    where there is none."""
    found: list[Found] = []
    files = cu_files(paths)
    for f in files:
        try:
            text = f.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ImportError_(Diagnostic("LG541", f"`layoutgen import` must read `{f}`, got {type(exc).__name__}: "
                                          f"{exc}", None, hint="give .cu files or folders holding them")) from None
        found.extend(Found(f, k) for k in read_kernels(text) if k.defined)
    if not found:
        read = ", ".join(f"`{f}`" for f in files) or "no .cu or .cuh file"
        raise ImportError_(Diagnostic("LG541", f"`layoutgen import` must find a `__global__` function, got none in "
                                      f"{read}", None, hint="a kernel defined by a function-like macro is not read"))
    return found


def _entry(p: GlobalParam, n: int) -> str:
    name = p.name or f"arg{n}"
    base = plain_type(p.base)
    if p.pointer:
        access = "In" if p.const else "Out"  # a pointer the kernel may write: Out, or InOut if it reads it too
        return f'{access}("{name}", [TODO]),'
    if base in _SCALARS:
        return f'Scalar("{name}", "{_SCALARS[base]}"),'
    for pattern, carried in _GUESSES:
        if pattern.search(name):
            return f'{carried}("TODO"),'
    if base in INTEGER_TYPES:
        dtype = _INTEGER_DTYPES.get(INTEGER_TYPES[base], "i64")
        return f'Dim("TODO"),  # {p.text}: a dim, Rows/RowStride/Pitch/Offset("array"), or Scalar("{name}", "{dtype}")'
    return f"TODO,  # {p.text}: In/Out for an array, Scalar for a value"


def spec_text(found: list[Found], relative_to: Path) -> str:
    """The starting spec module of ``found``, its file paths relative to ``relative_to`` (the spec's folder)."""
    lines = [
        '"""Existing kernels, declared as they are: fill in each TODO, bind the kernels, run `layoutgen check`.',
        "",
        "Written by `layoutgen import`. One entry per parameter of each `__global__`, in its order:",
        "In/Out/InOut (a pointer: give its shape), Rows/RowStride/Pitch/Offset(\"array\") or a Dim (an integer",
        "the launcher fills from the layouts), Scalar (a value the caller gives). docs/existing-kernels.md.",
        '"""',
        "",
        "from layoutgen import (Dim, ExistingKernel, Grid, In, InOut, Layout, Offset, Out, Pitch, Rows, RowStride,",
        "                       Scalar, Spec, dims, f32)",
        "",
        "# TODO: the dims and layouts of the buffers these kernels take, e.g.",
        '# B, K = dims("B K")',
        '# Window = Layout("Window", [B, K], f32, width=56)',
    ]
    names: dict[str, int] = {}
    variables = []
    for f in found:
        k = f.kernel
        try:
            shown = f.path.resolve().relative_to(relative_to.resolve()).as_posix()
        except ValueError:
            shown = f.path.resolve().as_posix()
        var = k.name if k.name not in names else f"{k.name}_{names[k.name] + 1}"
        names[k.name] = names.get(k.name, 0) + 1
        variables.append(var)
        where = f"{shown}:{k.line}"
        template = f"template <{k.template}> " if k.template is not None else ""
        linkage = 'extern "C" ' if k.extern_c else ""
        signature = ", ".join(p.text for p in k.params)
        lines += ["", f"# {where}: {template}{linkage}__global__ void {k.qualified}({signature})"]
        if k.template is not None:
            lines.append("# TODO: a template kernel is launched once instantiated: give the instance its own "
                         "extern \"C\" __global__ (LG239)")
        function = "" if k.qualified == var else f", function={k.qualified!r}".replace("'", '"')
        lines.append(f'{var} = ExistingKernel("{var}", "{shown}", [')
        for n, p in enumerate(k.params, start=1):
            default = f"  (default: {p.default})" if p.default else ""
            entry = _entry(p, n)
            lines.append(f"    {entry}{default}" if "#" in entry else f"    {entry}  # {p.text}{default}")
        first = next((p.name or "arg1" for p in k.params if p.pointer), "TODO")
        lines.append(f'], grid=Grid.rows("{first}", block=128){function})  # TODO: the threads the launch needs')
    lines += ["", "spec = Spec(\"existing\", kernels=[",
              *(f"    # {v}.bind(...),  # TODO: each array parameter's view" for v in variables), "])", ""]
    return "\n".join(lines)
