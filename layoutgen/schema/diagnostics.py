"""Diagnostics: one model for every message layoutgen gives.

Every problem layoutgen finds, at declaration, generation, CI or launch time,
is a :class:`Diagnostic`: a stable code from :data:`CODES`, a severity, a
message, the user's declaration site and a hint. Exceptions carry one.

Codes are grouped by the stage that finds them: LG1xx declaration, LG2xx
binding, LG3xx program dataflow, LG4xx template lint, LG5xx compile and drift,
LG6xx launch. ``docs/diagnostics.md`` documents each one; a test keeps the two
in step.
"""

from __future__ import annotations

import enum
import functools
import os
import sys
from dataclasses import dataclass
from pathlib import Path


class Severity(enum.Enum):
    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"  # information only (a --report): shown, never counted, never fails a command


class Off(enum.Enum):
    """Where diagnostics of a code may be turned off."""

    NEVER = "never"  # an error that stops generation: turned off, wrong code would be written or pass
    LINE = "line"  # only on the line it is reported at, by a comment there that says why; never for a project
    ANYWHERE = "anywhere"  # on its line, and for a project or a run (`select`, `ignore`)


@dataclass(frozen=True)
class Code:
    """One entry of the registry: a stable code and what it means."""

    code: str
    name: str
    severity: Severity
    summary: str
    #: Where it may be turned off; None: by its severity (an error nowhere, a warning or note anywhere).
    off: Off | None = None

    @property
    def turned_off(self) -> Off:
        """Where diagnostics of this code may be turned off."""
        if self.off is not None:
            return self.off
        return Off.NEVER if self.severity is Severity.ERROR else Off.ANYWHERE


def _registry(*codes: Code) -> dict[str, Code]:
    registry: dict[str, Code] = {}
    for c in codes:
        if c.code in registry:  # a code means one thing forever: two entries would silently shadow
            raise ValueError(f"diagnostic code {c.code} is registered twice ({registry[c.code].name}, {c.name})")
        registry[c.code] = c
    return registry


_E, _W, _N = Severity.ERROR, Severity.WARNING, Severity.NOTE

#: Every diagnostic code layoutgen can emit, in one place.
CODES: dict[str, Code] = _registry(
    # LG1xx: a layout declaration is invalid.
    Code("LG101", "overlapping-fields", _E, "two fields of one record cover the same columns"),
    Code("LG102", "field-out-of-range", _E, "a field ends past its row or its enclosing group"),
    Code("LG103", "non-positive-width", _E, "a field, padding or dimension has width zero or less"),
    Code("LG104", "duplicate-name", _E, "two fields of one record share a name"),
    Code("LG105", "invalid-name", _E, "a name is not a C identifier"),
    Code("LG106", "reserved-name", _E, "a name is a C/C++/CUDA keyword or reserved by layoutgen"),
    Code("LG107", "unknown-dtype", _E, "a dtype name is not one layoutgen knows"),
    Code("LG108", "width-mismatch", _E, "a declared width disagrees with the fields"),
    Code("LG109", "uncovered-columns", _E, "columns belong to no field and are not declared padding"),
    Code("LG110", "invalid-declaration", _E, "an argument of a declaration has the wrong type or form"),
    Code("LG111", "unknown-field", _E, "a view names a field the layout does not have"),
    Code("LG112", "symbolic-extent", _E, "fields of symbolic shape whose offsets layoutgen cannot express"),
    Code("LG113", "invalid-named-axis", _E, "a named axis (Axis) is misplaced or its names clash with fields"),
    Code("LG114", "too-large-for-views", _E, "a layout bound to a kernel has rows of 2^31 columns or 2^63 elements or more"),
    # LG2xx: a kernel parameter is bound to a view that does not fit.
    Code("LG201", "not-contiguous", _E, "a parameter needs contiguous rows but the view is strided"),
    Code("LG202", "symbol-conflict", _E, "a shape symbol takes two different values across parameters"),
    Code("LG203", "dtype-mismatch", _E, "a parameter's dtype differs from the view's"),
    Code("LG204", "misaligned-vector", _E, "a vector access width is not allowed by the view's byte alignment"),
    Code("LG205", "read-only-output", _E, "an Out or InOut parameter is bound to a read-only view"),
    Code("LG206", "rank-mismatch", _E, "a parameter's rank differs from the view's"),
    Code("LG207", "bad-binding", _E, "a binding names an unknown parameter or leaves one unbound"),
    Code("LG208", "invalid-kernel", _E, "a kernel declaration is malformed"),
    Code("LG209", "duplicate-kernel", _E, "two bindings generate a kernel of the same name"),
    Code("LG210", "symbolic-grid", _E, "a grid per vector follows a view whose row width is symbolic"),
    Code("LG211", "unusable-file-name", _E, "a kernel or spec name cannot name its generated files (too long, a device)"),
    Code("LG212", "generated-name-clash", _E, "two declarations of a spec would generate one file, view or class"),
    Code("LG216", "block-not-warp-multiple", _E, "a grid of warps has a block that is not a whole number of warps"),
    Code("LG217", "shared-memory-too-large", _E, "a kernel's static shared memory is more than its target arch allows a block"),
    Code("LG218", "invalid-grid", _E, "a grid's arguments are malformed, or it counts blocks in a symbol its kernel lacks"),
    Code("LG219", "invalid-shared-memory", _E, "a shared-memory array is malformed, clashes with a name, or its size is unknown"),
    Code("LG220", "invalid-torch-option", _E, "a spec's `torch` or `autograd` is malformed, or pairs bindings it does not have"),
    Code("LG221", "invalid-autograd-pair", _E, "an Autograd pair's forward or backward is no binding, one binding, or updates in place"),
    Code("LG222", "autograd-saves-mismatch", _E, "a value an Autograd pair saves is no forward parameter, or fits no backward one"),
    Code("LG223", "autograd-grads-mismatch", _E, "an Autograd gradient pairs the wrong parameters, or a backward parameter gets no value"),
    Code("LG224", "source-entry-not-found", _E, "a SourceKernel's file is missing, or defines no usable `__device__` entry function"),
    Code("LG225", "entry-arity-mismatch", _E, "a SourceKernel's entry takes another number of parameters than the kernel declares"),
    Code("LG226", "entry-type-mismatch", _E, "a parameter of a SourceKernel's entry is not the type of the view or scalar bound to it"),
    Code("LG227", "warp-tile-needs-whole-warps", _E, "a shared tile scoped to a warp is declared in a grid whose warps may lose lanes"),
    # LG231..LG239: an ExistingKernel's declaration against the `__global__` its file writes.
    Code("LG231", "invalid-existing-kernel", _E, "an ExistingKernel's argument list is malformed or names what the kernel does not declare"),
    Code("LG232", "global-not-found", _E, "an ExistingKernel's file is missing, or does not define its `__global__` exactly once"),
    Code("LG233", "global-arity-mismatch", _E, "an ExistingKernel declares another number of arguments than its `__global__` takes"),
    Code("LG234", "pointer-value-mismatch", _E, "an ExistingKernel declares an array where its `__global__` takes a value, or a value where it takes a pointer"),
    Code("LG235", "pointer-const-mismatch", _E, "an In of an ExistingKernel is a pointer to non-const elements, or an Out or InOut a pointer to const ones"),
    Code("LG236", "integer-too-narrow", _E, "an integer parameter of an ExistingKernel cannot hold the dim, stride, pitch or offset it carries"),
    Code("LG237", "element-type-mismatch", _E, "a pointer of an ExistingKernel points to another element type than its bound layout's"),
    Code("LG238", "scalar-type-mismatch", _E, "a Scalar of an ExistingKernel is declared with another C type than its `__global__` takes"),
    Code("LG239", "global-symbol-unknown", _E, "an ExistingKernel's `__global__` is a template or takes a type whose symbol layoutgen cannot name"),
    # LG3xx: a program's launches disagree about who writes and reads what.
    Code("LG301", "read-before-write", _E, "a launch reads columns that no earlier launch wrote and no input provides"),
    Code("LG302", "overlapping-writers", _E, "two writes cover the same columns of one buffer without `overwrites=`"),
    Code("LG303", "unread-output", _W, "a launch writes columns that nothing later reads and no output returns"),
    Code("LG304", "buffer-layout-mismatch", _E, "a buffer is bound to a parameter of another layout or view"),
    Code("LG305", "invalid-program", _E, "a program or launch declaration is malformed"),
    Code("LG306", "unlisted-program", _W, "a program declared in a spec module is not listed in its Spec, so nothing checks it"),
    # LG4xx: a kernel template does something it should not.
    # LG401 and LG403 are about how a template spells its indexing: it still renders and compiles, and whether a
    # literal 40 is a stride is the author's call, so they may be turned off.
    Code("LG401", "literal-stride", _E, "an integer literal in an index into a view equals its row stride, width or offset",
         Off.ANYWHERE),
    Code("LG402", "template-error", _E, "a kernel template failed to render"),
    Code("LG403", "raw-name", _E, "a kernel template uses an `lg_` name: a raw pointer or launch value behind a view",
         Off.ANYWHERE),
    Code("LG404", "unused-suppression", _W, "a `// layoutgen: ignore` comment in a template suppresses nothing"),
    Code("LG405", "column-out-of-range", _E, "a constant index of a field's own axis in a kernel template is negative or past its width"),
    Code("LG406", "barrier-after-return", _W, "a kernel template calls __syncthreads() in a grid that returns threads before the body"),
    Code("LG407", "barrier-in-warp-loop", _W, "a kernel template calls __syncthreads() in the loop over the tiles of Grid.persistent_warps"),
    Code("LG408", "barrier-in-warp-grid", _E, "a kernel template calls __syncthreads() in Grid.warps, whose warps with no rows return before the body"),
    Code("LG409", "loop-past-width", _E, "a loop whose counter indexes a field's columns runs past the field's width"),
    Code("LG410", "foreign-row-step", _E, "an index into one view steps its rows by another view's row stride or width"),
    Code("LG411", "barrier-in-divergent-branch", _E, "a kernel template calls __syncthreads() where only some threads of the block arrive"),
    # LG5xx: compile and drift.
    Code("LG501", "compile-error", _E, "NVRTC rejected a generated kernel"),
    Code("LG502", "stale-generated", _E, "committed generated code differs from what the spec generates"),
    Code("LG503", "foreign-file", _E, "a file in the output folder was not generated by layoutgen and is in the way"),
    Code("LG504", "spec-error", _E, "a spec module could not be loaded"),
    Code("LG505", "compile-report", _N, "registers and spills of a compiled kernel (with --report)"),
    Code("LG506", "no-specs", _E, "the project names no spec module and none was given on the command line"),
    Code("LG507", "duplicate-spec", _E, "two spec modules define specs of one name, which would share an output folder"),
    Code("LG508", "output-locked", _E, "another layoutgen process kept the output folder locked past the timeout"),
    Code("LG509", "edited-generated", _E, "a generated file was edited by hand; generate keeps it unless --force"),
    Code("LG510", "output-outside-project", _E, "the output folder resolves (through a link) outside the project"),
    Code("LG511", "output-io-error", _E, "the output folder cannot be read or written (permissions, disk full)"),
    Code("LG512", "unsafe-cache", _E, "the compile cache is writable by others, owned by another user, or has a link"),
    Code("LG513", "cache-unusable", _E, "the compile cache has a file where a folder belongs, or the reverse, or fails"),
    Code("LG514", "missing-folder", _E, "a folder that `include` or `templates` of [tool.layoutgen] names is not there"),
    Code("LG515", "unknown-block", _E, "a kernel template defines a Jinja block other than `preamble`"),
    Code("LG516", "shadowed-header", _E, "a project header has the name of the spec's views header, which kernels get instead"),
    Code("LG517", "output-link", _E, "a folder layoutgen writes into is a link it will not follow: a loop, or a link inside a generated package"),
    Code("LG518", "output-in-vcs", _E, "the output folder is, or lies in, a version control system's own folder (`.git`)"),
    Code("LG520", "stale-prebuilt", _E, "cubins that `layoutgen build` wrote are not of the kernels the spec generates now"),
    Code("LG521", "no-build-archs", _E, "`layoutgen build` was given no architectures to build for"),
    # LG530..LG539: `layoutgen check --execute` could not run a kernel on the CPU.
    Code("LG541", "no-kernels-imported", _E, "`layoutgen import` could not read a file it was given, or found no `__global__` kernel in them"),
    Code("LG530", "no-host-compiler", _E, "`check --execute` found no host C++ compiler (g++ or clang++) with AddressSanitizer"),
    # A kernel not executed was not checked: an error, so that it never passes in silence; a team that accepts it
    # for one kernel says why on the kernel's binding line (`# layoutgen: ignore[LG531]: why`), never project-wide.
    Code("LG531", "not-executed", _E, "`check --execute` could not build a kernel for the host runtime: it was not executed",
         Off.LINE),
    Code("LG532", "execution-failed", _E, "a kernel run on the CPU by `check --execute` crashed or did not finish"),
    # LG6xx: a launch was refused before the kernel ran.
    Code("LG601", "wrong-shape", _E, "an array's shape does not match its layout"),
    Code("LG602", "wrong-dtype", _E, "an array's dtype does not match its layout"),
    Code("LG603", "dim-conflict", _E, "a symbolic dim has two sizes across the arguments of one launch"),
    Code("LG604", "wrong-strides", _E, "an array is not packed as its layout says (transposed, sliced, broadcast)"),
    Code("LG605", "wrong-device", _E, "an array is on another device than the launch"),
    Code("LG606", "misaligned-array", _E, "an array's base pointer is not aligned as the kernel needs"),
    Code("LG607", "read-only-array", _E, "an output array is read-only"),
    Code("LG608", "not-a-device-array", _E, "an argument is a host array or not an array"),
    Code("LG609", "launch-failed", _E, "the CUDA driver refused the launch itself"),
    Code("LG610", "overlapping-output", _E, "an array written by the kernel has a zero or overlapping stride"),
    Code("LG611", "out-of-field", _E, "a debug-build kernel indexed outside one of its fields"),
    Code("LG612", "non-finite-output", _E, "a debug-build kernel wrote NaN or Inf into an output field"),
    Code("LG613", "aliased-buffers", _E, "two buffers of a program run were given the same memory"),
    Code("LG614", "aliased-arguments", _E, "two arguments of a launch share memory and the kernel writes one of them"),
    Code("LG615", "no-device", _E, "no CUDA device was found (after every argument was checked)"),
    Code("LG616", "bad-stream", _E, "`stream` is not a CUDA stream object or None"),
    Code("LG617", "grid-too-large", _E, "a launch needs more blocks than a CUDA grid can have"),
    Code("LG618", "autograd-write", _E, "the kernel would write in place into a torch tensor that requires grad"),
    Code("LG620", "wrong-scalar-type", _E, "a scalar parameter's value is not of its kind (a bool for a number, a float for an integer)"),
    Code("LG621", "scalar-out-of-range", _E, "a scalar parameter's value is outside what its C type holds"),
    Code("LG622", "non-finite-scalar", _E, "a scalar parameter declared finite was given NaN or Inf"),
    Code("LG623", "graph-scalar-mismatch", _E, "a graph replay was given a value other than the one it was captured with"),
    Code("LG624", "shared-memory-over-device-limit", _E, "a launch needs more shared memory a block than its device allows"),
    Code("LG625", "no-resident-block", _E, "a persistent grid's kernel cannot keep one block resident on the device"),
    Code("LG626", "jit-forbidden", _E, "no shipped cubin fits the device and LAYOUTGEN_NO_JIT forbids compiling one"),
    Code("LG627", "prebuilt-fallback", _N, "a launcher compiles with NVRTC although its package ships cubins: none fits"),
    Code("LG629", "torch-unavailable", _E, "a generated torch module is imported where torch 2.5 or newer is not"),
    Code("LG630", "torch-namespace-taken", _E, "another generated module already registered torch operators in this namespace"),
    Code("LG631", "negative-size-argument", _E, "a functional torch operator was given a negative size for a symbol"),
    Code("LG632", "no-double-backward", _E, "a generated autograd pair was differentiated twice (create_graph=True)"),
    Code("LG633", "pointer-out-of-range", _E, "an array's data pointer is negative or past 64 bits (a wrong `__cuda_array_interface__`)"),
    Code("LG634", "null-pointer", _E, "an array with elements has a null data pointer (no memory, e.g. torch's `_efficientzerotensor`)"),
    Code("LG635", "inference-tensor-write", _E, "the kernel would write in place into a torch inference tensor outside inference mode"),
    Code("LG636", "no-cupy", _E, "a launch needs CuPy, which is not installed"),
    Code("LG640", "mixed-generation", _E, "a kernel or header a launcher would compile is of another `layoutgen generate` run than its module"),
    Code("LG641", "carried-value-overflow", _E, "an integer an existing kernel's launcher fills from the layouts does not fit the kernel's parameter type"),
    # LG650..LG669: the footprint sanitizer of `check --execute` found a kernel breaking its declarations.
    Code("LG650", "outside-footprint", _E, "a kernel run on the CPU accessed memory outside the footprint of the parameter it came from"),
    Code("LG651", "accessor-outside-field", _E, "a kernel run on the CPU indexed a view or shared tile outside its field"),
    Code("LG652", "divergent-barrier", _E, "a barrier that some threads of the block (or lanes of the warp) never reach"),
    Code("LG653", "unwritten-output", _E, "a kernel run on the CPU left an element of an output's field unwritten"),
    Code("LG654", "output-from-unwritten", _E, "an output computed from memory nothing wrote (NaN from finite inputs)"),
    Code("LG655", "read-past-tile-rows", _E, "a read of a shared tile's row past those it holds reached an output"),
)


@dataclass(frozen=True)
class Site:
    """Where the user declared something: a file and a 1-based line."""

    path: str
    line: int

    def __str__(self) -> str:
        return f"{display_path(self.path)}:{self.line}"


def display_path(path: str) -> str:
    """A path relative to the working directory when it lies under it."""
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive on Windows
        return path
    return path if rel.startswith("..") else rel.replace(os.sep, "/")


_PACKAGE_DIR = str(Path(__file__).resolve().parent.parent)


def caller_site() -> Site | None:
    """The first stack frame outside layoutgen: the user's declaration."""
    frame = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        # Skip layoutgen itself, the import machinery, and the __init__ that
        # dataclasses generate (compiled from a "<string>").
        synthetic = code.co_filename.startswith("<frozen") or (
            code.co_filename == "<string>" and code.co_name in ("__init__", "__post_init__")
        )
        if not synthetic and not _inside_package(code.co_filename):
            return Site(code.co_filename, frame.f_lineno)
        frame = frame.f_back  # type: ignore[assignment]
    return None


def _inside_package(filename: str) -> bool:
    if filename.startswith(_PACKAGE_DIR + os.sep) or filename.startswith("<"):
        return filename.startswith(_PACKAGE_DIR + os.sep)
    # A relative name depends on the working directory: resolve it each time.
    return _resolves_inside(filename) if os.path.isabs(filename) else _resolves_inside.__wrapped__(filename)


@functools.lru_cache(maxsize=1024)  # one resolve() per file, not one per declaration
def _resolves_inside(filename: str) -> bool:
    return str(Path(filename).resolve()).startswith(_PACKAGE_DIR + os.sep)


@dataclass(frozen=True)
class Diagnostic:
    """A problem found in the user's declarations, with where and how to fix it."""

    code: str
    message: str
    site: Site | None = None
    hint: str | None = None
    as_error: bool = False  # a warning that counts as an error (warnings as errors); no effect on the others

    def __post_init__(self) -> None:
        if self.code not in CODES:
            raise ValueError(f"diagnostic code {self.code!r} is not in the registry")

    @property
    def severity(self) -> Severity:
        severity = CODES[self.code].severity
        return Severity.ERROR if self.as_error and severity is Severity.WARNING else severity

    def __str__(self) -> str:
        where = f"{self.site}: " if self.site else ""
        text = f"{where}{self.severity.value}[{self.code}]: {self.message}"
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text


class LayoutgenError(Exception):
    """Base of layoutgen's errors; carries the :class:`Diagnostic`."""

    def __init__(self, diagnostic: Diagnostic) -> None:
        super().__init__(str(diagnostic))
        self.diagnostic = diagnostic

    @property
    def code(self) -> str:
        return self.diagnostic.code

    @property
    def site(self) -> Site | None:
        return self.diagnostic.site

    @property
    def hint(self) -> str | None:
        return self.diagnostic.hint


class LayoutError(LayoutgenError):
    """A layout declaration is invalid (codes LG1xx)."""


class UnknownFieldError(LayoutError, AttributeError):
    """A view names a field its layout does not have (LG111).

    Also an AttributeError, so that ``hasattr(Window, "nope")`` is False.
    """


def layout_error(code: str, message: str, site: Site | None, hint: str | None = None) -> LayoutError:
    return LayoutError(Diagnostic(code, message, site, hint))
