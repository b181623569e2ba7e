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


class Stage(enum.Enum):
    """When a code is raised: what the user was doing (docs/architecture.md, "Where to add": a check)."""

    DECLARATION = "declaration"  # a spec module's declarations were built: Layout, Kernel, Grid, Program, Spec
    BINDING = "binding"  # a kernel was checked against the views bound to it, a program's dataflow
    RENDER = "render"  # a kernel's templates were rendered and linted
    PROJECT = "project"  # a command ran over the project: files, drift, compile, build, execute on the CPU
    LAUNCH = "launch"  # a generated launcher or program ran, before or around the kernel


@dataclass(frozen=True)
class Raised:
    """Where a code is raised: its stages, and the files under ``layoutgen/`` whose code names it (a string
    that is the code alone, ``"LG208"``); ``tests/test_diagnostic_homes.py`` keeps the files exact."""

    stages: tuple[Stage, ...]
    files: tuple[str, ...]


def _at(stages: Stage | tuple[Stage, ...], *files: str) -> Raised:
    return Raised(stages if isinstance(stages, tuple) else (stages,), files)


@dataclass(frozen=True)
class Code:
    """One entry of the registry: a stable code and what it means."""

    code: str
    name: str
    severity: Severity
    summary: str
    #: Where it may be turned off; None: by its severity (an error nowhere, a warning or note anywhere).
    off: Off | None = None
    #: Where it is raised (every code says; None only keeps a code added without it importable until the
    #: test names it).
    raised: Raised | None = None

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
_DECL, _BIND, _RENDER, _PROJECT, _LAUNCH = Stage.DECLARATION, Stage.BINDING, Stage.RENDER, Stage.PROJECT, Stage.LAUNCH

#: Every diagnostic code layoutgen can emit, in one place.
CODES: dict[str, Code] = _registry(
    # LG1xx: a layout declaration is invalid.
    Code("LG101", "overlapping-fields", _E, "two fields of one record cover the same columns", raised=_at(_DECL, "schema/record.py")),
    Code("LG102", "field-out-of-range", _E, "a field ends past its row or its enclosing group", raised=_at(_DECL, "schema/record.py")),
    Code("LG103", "non-positive-width", _E, "a field, padding or dimension has width zero or less", raised=_at(_DECL, "schema/dims.py", "schema/record.py")),
    Code("LG104", "duplicate-name", _E, "two fields of one record share a name", raised=_at(_DECL, "schema/layout.py", "schema/record.py")),
    Code("LG105", "invalid-name", _E, "a name is not a C identifier", raised=_at(_DECL, "schema/names.py")),
    Code("LG106", "reserved-name", _E, "a name is a C/C++/CUDA keyword or reserved by layoutgen", raised=_at(_DECL, "schema/names.py", "schema/record.py")),
    Code("LG107", "unknown-dtype", _E, "a dtype name is not one layoutgen knows", raised=_at(_DECL, "schema/dtypes.py")),
    Code("LG108", "width-mismatch", _E, "a declared width disagrees with the fields", raised=_at(_DECL, "schema/record.py")),
    Code("LG109", "uncovered-columns", _E, "columns belong to no field and are not declared padding", raised=_at(_DECL, "schema/record.py")),
    Code("LG110", "invalid-declaration", _E, "an argument of a declaration has the wrong type or form",
         raised=_at(_DECL, "schema/dims.py", "schema/layout.py", "schema/record.py", "schema/view.py")),
    Code("LG111", "unknown-field", _E, "a view names a field the layout does not have", raised=_at(_DECL, "schema/view.py")),
    Code("LG112", "symbolic-extent", _E, "fields of symbolic shape whose offsets layoutgen cannot express", raised=_at(_DECL, "schema/record.py")),
    Code("LG113", "invalid-named-axis", _E, "a named axis (Axis) is misplaced or its names clash with fields", raised=_at(_DECL, "schema/layout.py")),
    Code("LG114", "too-large-for-views", _E, "a layout bound to a kernel has rows of 2^31 columns or 2^63 elements or more", raised=_at(_DECL, "declare/kernels.py")),
    # LG2xx: a kernel parameter is bound to a view that does not fit.
    Code("LG201", "not-contiguous", _E, "a parameter needs contiguous rows but the view is strided", raised=_at(_BIND, "checks/bindings.py")),
    Code("LG202", "symbol-conflict", _E, "a shape symbol takes two different values across parameters", raised=_at(_BIND, "checks/bindings.py")),
    Code("LG203", "dtype-mismatch", _E, "a parameter's dtype differs from the view's", raised=_at(_BIND, "checks/bindings.py")),
    Code("LG204", "misaligned-vector", _E, "a vector access width is not allowed by the view's byte alignment", raised=_at(_BIND, "checks/bindings.py")),
    Code("LG205", "read-only-output", _E, "an Out or InOut parameter is bound to a read-only view", raised=_at(_BIND, "checks/bindings.py")),
    Code("LG206", "rank-mismatch", _E, "a parameter's rank differs from the view's", raised=_at(_BIND, "checks/bindings.py")),
    Code("LG207", "bad-binding", _E, "a binding names an unknown parameter or leaves one unbound", raised=_at(_DECL, "declare/kernels.py")),
    Code("LG208", "invalid-kernel", _E, "a kernel declaration is malformed",
         raised=_at(_DECL, "declare/copies.py", "declare/grids.py", "declare/kernels.py", "declare/source_kernels.py", "declare/spec.py")),
    Code("LG209", "duplicate-kernel", _E, "two bindings generate a kernel of the same name", raised=_at(_BIND, "checks/bindings.py")),
    Code("LG210", "symbolic-grid", _E, "a grid per vector follows a view whose row width is symbolic", raised=_at(_BIND, "checks/bindings.py")),
    Code("LG211", "unusable-file-name", _E, "a kernel or spec name cannot name its generated files (too long, a device)",
         raised=_at(_DECL, "declare/kernels.py", "declare/spec.py", "schema/names.py")),
    Code("LG212", "generated-name-clash", _E, "two declarations of a spec would generate one file, view or class", raised=_at((_DECL, _RENDER), "codegen/facts.py", "declare/spec.py")),
    Code("LG216", "block-not-warp-multiple", _E, "a grid of warps has a block that is not a whole number of warps", raised=_at(_DECL, "declare/grids.py")),
    Code("LG217", "shared-memory-too-large", _E, "a kernel's static shared memory is more than its target arch allows a block", raised=_at(_BIND, "checks/grids.py")),
    Code("LG218", "invalid-grid", _E, "a grid's arguments are malformed, or it counts blocks in a symbol its kernel lacks", raised=_at(_DECL, "declare/grids.py")),
    Code("LG219", "invalid-shared-memory", _E, "a shared-memory array is malformed, clashes with a name, or its size is unknown",
         raised=_at((_DECL, _BIND), "checks/grids.py", "declare/shared.py")),
    Code("LG220", "invalid-torch-option", _E, "a spec's `torch` or `autograd` is malformed, or pairs bindings it does not have", raised=_at(_DECL, "declare/spec.py")),
    Code("LG221", "invalid-autograd-pair", _E, "an Autograd pair's forward or backward is no binding, one binding, or updates in place", raised=_at(_DECL, "declare/autograd.py")),
    Code("LG222", "autograd-saves-mismatch", _E, "a value an Autograd pair saves is no forward parameter, or fits no backward one", raised=_at(_DECL, "declare/autograd.py")),
    Code("LG223", "autograd-grads-mismatch", _E, "an Autograd gradient pairs the wrong parameters, or a backward parameter gets no value", raised=_at(_DECL, "declare/autograd.py")),
    Code("LG224", "source-entry-not-found", _E, "a SourceKernel's file is missing, or defines no usable `__device__` entry function", raised=_at(_RENDER, "codegen/source_shim.py")),
    Code("LG225", "entry-arity-mismatch", _E, "a SourceKernel's entry takes another number of parameters than the kernel declares", raised=_at(_RENDER, "codegen/source_shim.py")),
    Code("LG226", "entry-type-mismatch", _E, "a parameter of a SourceKernel's entry is not the type of the view or scalar bound to it", raised=_at(_RENDER, "codegen/source_shim.py")),
    Code("LG227", "warp-tile-needs-whole-warps", _E, "a shared tile scoped to a warp is declared in a grid whose warps may lose lanes", raised=_at(_DECL, "declare/shared.py")),
    # LG231..LG239: an ExistingKernel's declaration against the `__global__` its file writes.
    Code("LG231", "invalid-existing-kernel", _E, "an ExistingKernel's argument list is malformed or names what the kernel does not declare",
         raised=_at(_DECL, "declare/existing_kernels.py")),
    Code("LG232", "global-not-found", _E, "an ExistingKernel's file is missing, or does not define its `__global__` exactly once", raised=_at(_BIND, "checks/existing_kernels.py")),
    Code("LG233", "global-arity-mismatch", _E, "an ExistingKernel declares another number of arguments than its `__global__` takes", raised=_at(_BIND, "checks/existing_kernels.py")),
    Code("LG234", "pointer-value-mismatch", _E, "an ExistingKernel declares an array where its `__global__` takes a value, or a value where it takes a pointer",
         raised=_at(_BIND, "checks/existing_kernels.py")),
    Code("LG235", "pointer-const-mismatch", _E, "an In of an ExistingKernel is a pointer to non-const elements, or an Out or InOut a pointer to const ones",
         raised=_at(_BIND, "checks/existing_kernels.py")),
    Code("LG236", "integer-too-narrow", _E, "an integer parameter of an ExistingKernel cannot hold the dim, stride, pitch or offset it carries",
         raised=_at(_BIND, "checks/existing_kernels.py")),
    Code("LG237", "element-type-mismatch", _E, "a pointer of an ExistingKernel points to another element type than its bound layout's", raised=_at(_BIND, "checks/existing_kernels.py")),
    Code("LG238", "scalar-type-mismatch", _E, "a Scalar of an ExistingKernel is declared with another C type than its `__global__` takes", raised=_at(_BIND, "checks/existing_kernels.py")),
    Code("LG239", "global-symbol-unknown", _E, "an ExistingKernel's `__global__` is a template or takes a type whose symbol layoutgen cannot name",
         raised=_at(_RENDER, "codegen/existing_kernel.py")),
    # LG3xx: a program's launches disagree about who writes and reads what.
    Code("LG301", "read-before-write", _E, "a launch reads columns that no earlier launch wrote and no input provides", raised=_at(_BIND, "checks/dataflow.py")),
    Code("LG302", "overlapping-writers", _E, "two writes cover the same columns of one buffer without `overwrites=`", raised=_at(_BIND, "checks/dataflow.py")),
    Code("LG303", "unread-output", _W, "a launch writes columns that nothing later reads and no output returns", raised=_at(_BIND, "checks/dataflow.py")),
    Code("LG304", "buffer-layout-mismatch", _E, "a buffer is bound to a parameter of another layout or view", raised=_at(_BIND, "checks/dataflow.py")),
    Code("LG305", "invalid-program", _E, "a program or launch declaration is malformed", raised=_at(_DECL, "declare/program.py", "declare/spec.py")),
    Code("LG306", "unlisted-program", _W, "a program declared in a spec module is not listed in its Spec, so nothing checks it", raised=_at(_PROJECT, "project/specload.py")),
    # LG4xx: a kernel template does something it should not.
    # LG401 and LG403 are about how a template spells its indexing: it still renders and compiles, and whether a
    # literal 40 is a stride is the author's call, so they may be turned off.
    Code("LG401", "literal-stride", _E, "an integer literal in an index into a view equals its row stride, width or offset",
         Off.ANYWHERE, raised=_at(_RENDER, "checks/lint.py", "checks/raw_kernels.py")),
    Code("LG402", "template-error", _E, "a kernel template failed to render", raised=_at(_RENDER, "codegen/render.py")),
    Code("LG403", "raw-name", _E, "a kernel template uses an `lg_` name: a raw pointer or launch value behind a view",
         Off.ANYWHERE, raised=_at(_RENDER, "checks/lint.py")),
    Code("LG404", "unused-suppression", _W, "a `// layoutgen: ignore` comment in a template suppresses nothing", raised=_at(_RENDER, "checks/suppress.py")),
    Code("LG405", "column-out-of-range", _E, "a constant index of a field's own axis in a kernel template is negative or past its width", raised=_at(_RENDER, "checks/lint.py")),
    Code("LG406", "barrier-after-return", _W, "a kernel template calls __syncthreads() in a grid that returns threads before the body", raised=_at(_RENDER, "checks/barriers.py")),
    Code("LG407", "barrier-in-warp-loop", _W, "a kernel template calls __syncthreads() in the loop over the tiles of Grid.persistent_warps", raised=_at(_RENDER, "checks/lint.py")),
    Code("LG408", "barrier-in-warp-grid", _E, "a kernel template calls __syncthreads() in Grid.warps, whose warps with no rows return before the body",
         raised=_at(_RENDER, "checks/barriers.py")),
    Code("LG409", "loop-past-width", _E, "a loop whose counter indexes a field's columns runs past the field's width", raised=_at(_RENDER, "checks/loops.py")),
    Code("LG410", "foreign-row-step", _E, "an index into one view steps its rows by another view's row stride or width", raised=_at(_RENDER, "checks/lint.py", "checks/raw_kernels.py")),
    Code("LG411", "barrier-in-divergent-branch", _E, "a kernel template calls __syncthreads() where only some threads of the block arrive", raised=_at(_RENDER, "checks/barriers.py")),
    # LG5xx: compile and drift.
    Code("LG501", "compile-error", _E, "NVRTC rejected a generated kernel", raised=_at((_PROJECT, _LAUNCH), "project/compile_all.py", "runtime/nvrtc.py", "runtime/nvrtc_log.py")),
    Code("LG502", "stale-generated", _E, "committed generated code differs from what the spec generates", raised=_at(_PROJECT, "project/process.py")),
    Code("LG503", "foreign-file", _E, "a file in the output folder was not generated by layoutgen and is in the way", raised=_at(_PROJECT, "project/files.py")),
    Code("LG504", "spec-error", _E, "a spec module could not be loaded", raised=_at(_PROJECT, "project/specload.py")),
    Code("LG505", "compile-report", _N, "registers and spills of a compiled kernel (with --report)", raised=_at((_PROJECT, _LAUNCH), "project/compile_all.py", "runtime/nvrtc.py")),
    Code("LG506", "no-specs", _E, "the project names no spec module and none was given on the command line", raised=_at(_PROJECT, "project/process.py")),
    Code("LG507", "duplicate-spec", _E, "two spec modules define specs of one name, which would share an output folder", raised=_at(_PROJECT, "project/process.py")),
    Code("LG508", "output-locked", _E, "another layoutgen process kept the output folder locked past the timeout", raised=_at(_PROJECT, "project/outlock.py")),
    Code("LG509", "edited-generated", _E, "a generated file was edited by hand; generate keeps it unless --force", raised=_at(_PROJECT, "project/files.py")),
    Code("LG510", "output-outside-project", _E, "the output folder resolves (through a link) outside the project", raised=_at(_PROJECT, "project/files.py")),
    Code("LG511", "output-io-error", _E, "the output folder cannot be read or written (permissions, disk full)", raised=_at(_PROJECT, "project/aot.py", "project/files.py")),
    Code("LG512", "unsafe-cache", _E, "the compile cache is writable by others, owned by another user, or has a link", raised=_at(_LAUNCH, "runtime/cachefiles.py")),
    Code("LG513", "cache-unusable", _E, "the compile cache has a file where a folder belongs, or the reverse, or fails", raised=_at(_LAUNCH, "runtime/cache.py", "runtime/cachefiles.py")),
    Code("LG514", "missing-folder", _E, "a folder that `include` or `templates` of [tool.layoutgen] names is not there",
         raised=_at((_PROJECT, _LAUNCH), "project/folders.py", "runtime/project_headers.py")),
    Code("LG515", "unknown-block", _E, "a kernel template defines a Jinja block other than `preamble`", raised=_at(_RENDER, "codegen/render.py")),
    Code("LG516", "shadowed-header", _E, "a project header has the name of the spec's views header, which kernels get instead", raised=_at(_PROJECT, "project/folders.py")),
    Code("LG517", "output-link", _E, "a folder layoutgen writes into is a link it will not follow: a loop, or a link inside a generated package", raised=_at(_PROJECT, "project/files.py")),
    Code("LG518", "output-in-vcs", _E, "the output folder is, or lies in, a version control system's own folder (`.git`)", raised=_at(_PROJECT, "project/files.py")),
    Code("LG520", "stale-prebuilt", _E, "cubins that `layoutgen build` wrote are not of the kernels the spec generates now", raised=_at(_PROJECT, "project/aot.py")),
    Code("LG521", "no-build-archs", _E, "`layoutgen build` was given no architectures to build for", raised=_at(_PROJECT, "project/aot.py")),
    # LG530..LG539: `layoutgen check --execute` could not run a kernel on the CPU.
    Code("LG541", "no-kernels-imported", _E, "`layoutgen import` could not read a file it was given, or found no `__global__` kernel in them",
         raised=_at(_PROJECT, "project/import_kernels.py")),
    Code("LG530", "no-host-compiler", _E, "`check --execute` found no host C++ compiler (g++ or clang++) with AddressSanitizer", raised=_at(_PROJECT, "project/execute.py")),
    # A kernel not executed was not checked: an error, so that it never passes in silence; a team that accepts it
    # for one kernel says why on the kernel's binding line (`# layoutgen: ignore[LG531]: why`), never project-wide.
    Code("LG531", "not-executed", _E, "`check --execute` could not build a kernel for the host runtime: it was not executed",
         Off.LINE, raised=_at(_PROJECT, "project/execute.py")),
    Code("LG532", "execution-failed", _E, "a kernel run on the CPU by `check --execute` crashed or did not finish",
         raised=_at(_PROJECT, "project/execute.py", "project/execute_findings.py")),
    # LG6xx: a launch was refused before the kernel ran.
    Code("LG601", "wrong-shape", _E, "an array's shape does not match its layout",
         raised=_at(_LAUNCH, "runtime/launch.py", "runtime/program.py", "runtime/typed.py", "runtime/validate.py", "templates/module.py.j2")),
    Code("LG602", "wrong-dtype", _E, "an array's dtype does not match its layout", raised=_at(_LAUNCH, "runtime/validate.py")),
    Code("LG603", "dim-conflict", _E, "a symbolic dim has two sizes across the arguments of one launch", raised=_at(_LAUNCH, "runtime/validate.py")),
    Code("LG604", "wrong-strides", _E, "an array is not packed as its layout says (transposed, sliced, broadcast)", raised=_at(_LAUNCH, "runtime/validate.py")),
    Code("LG605", "wrong-device", _E, "an array is on another device than the launch", raised=_at(_LAUNCH, "runtime/validate.py")),
    Code("LG606", "misaligned-array", _E, "an array's base pointer is not aligned as the kernel needs", raised=_at(_LAUNCH, "runtime/validate.py")),
    Code("LG607", "read-only-array", _E, "an output array is read-only", raised=_at(_LAUNCH, "runtime/validate.py")),
    Code("LG608", "not-a-device-array", _E, "an argument is a host array or not an array", raised=_at(_LAUNCH, "runtime/launch.py", "runtime/typed.py")),
    Code("LG609", "launch-failed", _E, "the CUDA driver refused the launch itself", raised=_at(_LAUNCH, "runtime/driver.py")),
    Code("LG610", "overlapping-output", _E, "an array written by the kernel has a zero or overlapping stride", raised=_at(_LAUNCH, "runtime/validate.py")),
    Code("LG611", "out-of-field", _E, "a debug-build kernel indexed outside one of its fields", raised=_at(_LAUNCH, "runtime/debug.py")),
    Code("LG612", "non-finite-output", _E, "a debug-build kernel wrote NaN or Inf into an output field", raised=_at(_LAUNCH, "runtime/debug.py")),
    Code("LG613", "aliased-buffers", _E, "two buffers of a program run were given the same memory", raised=_at(_LAUNCH, "runtime/program.py")),
    Code("LG614", "aliased-arguments", _E, "two arguments of a launch share memory and the kernel writes one of them", raised=_at(_LAUNCH, "runtime/validate.py")),
    Code("LG615", "no-device", _E, "no CUDA device was found (after every argument was checked)", raised=_at(_LAUNCH, "runtime/driver.py")),
    Code("LG616", "bad-stream", _E, "`stream` is not a CUDA stream object or None", raised=_at(_LAUNCH, "runtime/driver.py")),
    Code("LG617", "grid-too-large", _E, "a launch needs more blocks than a CUDA grid can have", raised=_at(_LAUNCH, "runtime/launch_plan.py")),
    Code("LG618", "autograd-write", _E, "the kernel would write in place into a torch tensor that requires grad", raised=_at(_LAUNCH, "runtime/torch_writes.py")),
    Code("LG620", "wrong-scalar-type", _E, "a scalar parameter's value is not of its kind (a bool for a number, a float for an integer)", raised=_at(_LAUNCH, "schema/scalars.py")),
    Code("LG621", "scalar-out-of-range", _E, "a scalar parameter's value is outside what its C type holds", raised=_at(_LAUNCH, "schema/scalars.py")),
    Code("LG622", "non-finite-scalar", _E, "a scalar parameter declared finite was given NaN or Inf", raised=_at(_LAUNCH, "schema/scalars.py")),
    Code("LG623", "graph-scalar-mismatch", _E, "a graph replay was given a value other than the one it was captured with", raised=_at(_LAUNCH, "runtime/program.py")),
    Code("LG624", "shared-memory-over-device-limit", _E, "a launch needs more shared memory a block than its device allows", raised=_at(_LAUNCH, "runtime/occupancy.py")),
    Code("LG625", "no-resident-block", _E, "a persistent grid's kernel cannot keep one block resident on the device", raised=_at(_LAUNCH, "runtime/occupancy.py")),
    Code("LG626", "jit-forbidden", _E, "no shipped cubin fits the device and LAYOUTGEN_NO_JIT forbids compiling one", raised=_at(_LAUNCH, "runtime/prebuilt.py")),
    Code("LG627", "prebuilt-fallback", _N, "a launcher compiles with NVRTC although its package ships cubins: none fits", raised=_at(_LAUNCH, "runtime/prebuilt.py")),
    Code("LG629", "torch-unavailable", _E, "a generated torch module is imported where torch 2.5 or newer is not", raised=_at(_LAUNCH, "runtime/torch_ops.py")),
    Code("LG630", "torch-namespace-taken", _E, "another generated module already registered torch operators in this namespace", raised=_at(_LAUNCH, "runtime/torch_ops.py")),
    Code("LG631", "negative-size-argument", _E, "a functional torch operator was given a negative size for a symbol", raised=_at(_LAUNCH, "runtime/torch_ops.py")),
    Code("LG632", "no-double-backward", _E, "a generated autograd pair was differentiated twice (create_graph=True)", raised=_at(_LAUNCH, "runtime/torch_autograd.py")),
    Code("LG633", "pointer-out-of-range", _E, "an array's data pointer is negative or past 64 bits (a wrong `__cuda_array_interface__`)", raised=_at(_LAUNCH, "runtime/validate.py")),
    Code("LG634", "null-pointer", _E, "an array with elements has a null data pointer (no memory, e.g. torch's `_efficientzerotensor`)", raised=_at(_LAUNCH, "runtime/validate.py")),
    Code("LG635", "inference-tensor-write", _E, "the kernel would write in place into a torch inference tensor outside inference mode", raised=_at(_LAUNCH, "runtime/torch_writes.py")),
    Code("LG636", "no-cupy", _E, "a launch needs CuPy, which is not installed", raised=_at(_LAUNCH, "runtime/driver.py")),
    Code("LG640", "mixed-generation", _E, "a kernel or header a launcher would compile is of another `layoutgen generate` run than its module", raised=_at(_LAUNCH, "runtime/stamps.py")),
    Code("LG641", "carried-value-overflow", _E, "an integer an existing kernel's launcher fills from the layouts does not fit the kernel's parameter type",
         raised=_at(_LAUNCH, "runtime/raw_launch.py")),
    Code("LG642", "barrier-not-reached", _E, "a debug-build kernel left threads of a block at a barrier that others never reach",
         raised=_at(_LAUNCH, "runtime/debug.py")),
    # LG650..LG669: the footprint sanitizer of `check --execute` found a kernel breaking its declarations.
    Code("LG650", "outside-footprint", _E, "a kernel run on the CPU accessed memory outside the footprint of the parameter it came from",
         raised=_at(_PROJECT, "project/execute_findings.py")),
    Code("LG651", "accessor-outside-field", _E, "a kernel run on the CPU indexed a view or shared tile outside its field", raised=_at(_PROJECT, "project/execute_findings.py")),
    Code("LG652", "divergent-barrier", _E, "a barrier that some threads of the block (or lanes of the warp) never reach", raised=_at(_PROJECT, "project/execute_findings.py")),
    Code("LG653", "unwritten-output", _E, "a kernel run on the CPU left an element of an output's field unwritten", raised=_at(_PROJECT, "project/execute_findings.py")),
    Code("LG654", "output-from-unwritten", _E, "an output computed from memory nothing wrote (NaN from finite inputs)", raised=_at(_PROJECT, "project/execute_findings.py")),
    Code("LG655", "read-past-tile-rows", _E, "a read of a shared tile's row past those it holds reached an output", raised=_at(_PROJECT, "project/execute_findings.py")),
    Code("LG656", "read-of-unwritten-output", _E, "a kernel run on the CPU read an output element before anything wrote it (a read, `+=`, or an atomic)",
         raised=_at(_PROJECT, "project/execute_findings.py")),
    Code("LG657", "racing-writes", _E, "two threads of a kernel run on the CPU wrote one output element with plain writes that nothing orders",
         raised=_at(_PROJECT, "project/execute_findings.py")),
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
