"""Programs: named buffers and an ordered list of launches over their fields.

A program is the unit of dataflow checking and of CUDA-graph capture::

    window = Buffer("window", Window)
    market = Buffer("market", Market, input=True)
    y = Buffer("y", Features, output=True)
    step = Program("vsn_step", [
        Launch(snap_feature_assemble, raw=market, snap=window.snap, ...),
        Launch(variable_selection_fwd, x=window.snap, y=y, ...),
    ])

A launch ties each kernel parameter to a buffer or to one field of it
(``window.snap``). Given a :class:`~layoutgen.kernels.Kernel`, the launch binds
it to the views of those buffers (and the binding checks apply); given a
:class:`~layoutgen.kernels.Binding`, every buffer must be of the layout the
binding was made for. :mod:`layoutgen.checks.dataflow` then follows the
launches in order, column range by column range.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..schema import DType, Layout, View
from ..schema.diagnostics import Diagnostic, LayoutgenError, Site, caller_site
from ..schema.dtypes import resolve_dtype
from ..schema.names import name_problem
from ..schema.reserved import Reserver, reserve_attributes
from ..schema.scalars import SCALAR_DTYPES, ScalarValueError, pack_scalar
from ..schema.words import with_article
from .kernels import LAUNCHER_KEYWORDS, Binding, Kernel, Scalar

if TYPE_CHECKING:  # NumPy's scalar types, for annotations only: declaring imports no NumPy
    import numpy as np


class ProgramError(LayoutgenError):
    """A program, buffer or launch declaration is malformed (LG305)."""


def _program_error(message: str, site: Site | None, hint: str | None = None) -> ProgramError:
    return ProgramError(Diagnostic("LG305", message, site, hint))


#: Names the generated runner takes next to its buffer arguments.
BUFFER_RESERVED = frozenset(LAUNCHER_KEYWORDS)


@dataclass(frozen=True, eq=False)
class Buffer:
    """A named array of one layout that a program's launches read and write.

    ``input=True``: the caller fills it before the program runs, so reading it
    needs no earlier launch. ``output=True``: the caller reads it afterwards,
    so writing it without a later reader is not a warning. ``window.snap`` is
    the ``snap`` field of this buffer.
    """

    name: str
    layout: Layout
    input: bool
    output: bool
    site: Site | None

    def __init__(self, name: str, layout: Layout, *, input: bool = False, output: bool = False) -> None:
        site = caller_site()
        problem = name_problem(name)
        if problem:
            raise _program_error(f"a buffer name {problem[1]}", site)
        if name in BUFFER_RESERVED:  # the generated runner takes buffers by keyword next to these
            raise _program_error(f"a buffer may not be named `{name}`: the generated runner uses that name", site,
                                 hint="rename the buffer")
        if not isinstance(layout, Layout):
            raise _program_error(f"buffer `{name}` needs a layout, got {layout!r}", site)
        for flag, value in (("input", input), ("output", output)):
            if not isinstance(value, bool):
                raise _program_error(f"`{flag}` of buffer `{name}` must be True or False, got {value!r}", site)
        for attr, given in (("name", name), ("layout", layout), ("input", input), ("output", output),
                            ("site", site)):
            object.__setattr__(self, attr, given)

    def __repr__(self) -> str:
        return f"<Buffer {self.name}: {self.layout.name}>"

    @property
    def role(self) -> str:
        """``"input"``, ``"output"``, ``"input and output"``, or ``""`` for a scratch buffer."""
        return " and ".join(r for r, on in (("input", self.input), ("output", self.output)) if on)

    @property
    def whole(self) -> BufferView:
        """The whole buffer as a view."""
        return BufferView(self, self.layout.view)

    def __getattr__(self, name: str) -> BufferView:
        if name.startswith("_"):
            raise AttributeError(name)
        return BufferView(self, self.layout.view._child(name, caller_site()))

    def __getitem__(self, path: str) -> BufferView:
        return BufferView(self, self.layout.view[path])


@dataclass(frozen=True, eq=False)
class BufferView:
    """One field of one buffer: ``window.snap``."""

    buffer: Buffer
    view: View

    @property
    def name(self) -> str:
        """``window.snap``; ``window`` for the whole buffer."""
        return _field_name(self.buffer, self.view)

    def __getattr__(self, name: str) -> BufferView:
        if name.startswith("_"):
            raise AttributeError(name)
        return BufferView(self.buffer, self.view._child(name, caller_site()))

    def __repr__(self) -> str:
        return f"<BufferView {self.name}>"


#: What `window.<name>` and `window.snap.<name>` find before a field of that name (`window.whole`): a
#: field so named is refused where it is declared (LG106), whatever the attributes of these classes become.
BUFFER_ATTRIBUTES = reserve_attributes(Reserver(
    "program buffers", "Buffer and BufferView", "in a program, `<buffer>.{name}` would be the buffer's `{name}`, "
    "not the field"), Buffer, BufferView)


def _field_name(buffer: Buffer, view: View) -> str:
    return f"{buffer.name}.{view.path}" if view.path else buffer.name


@dataclass(frozen=True, eq=False)
class Value:
    """A scalar the caller gives each run of a program: ``lr = Value("lr", f32)``.

    ``Launch(sgd_update, ..., lr=lr)`` hands it to a scalar parameter of the
    same dtype; the generated runner takes it by keyword next to the buffers
    (``vsn_step(..., lr=0.05)``), checks it as the launcher checks a scalar,
    and a captured graph keeps the value it was captured with.
    """

    name: str
    dtype: DType
    site: Site | None

    def __init__(self, name: str, dtype: DType | str) -> None:
        site = caller_site()
        problem = name_problem(name)
        if problem:
            raise _program_error(f"a value name {problem[1]}", site)
        if name in BUFFER_RESERVED:
            raise _program_error(f"a value may not be named `{name}`: the generated runner uses that name", site,
                                 hint="rename the value")
        resolved = resolve_dtype(dtype, f"the dtype of value `{name}`", site, SCALAR_DTYPES)  # LG107: unknown
        if resolved.name not in SCALAR_DTYPES:
            raise _program_error(f"value `{name}` must be one of {', '.join(SCALAR_DTYPES)}, got {resolved}", site)
        for attr, given in (("name", name), ("dtype", resolved), ("site", site)):
            object.__setattr__(self, attr, given)

    def __repr__(self) -> str:
        return f"<Value {self.name}: {self.dtype}>"


#: What a launch may give a scalar parameter: a program's value, or a constant.
ScalarGiven = Value | bool | int | float


@dataclass(frozen=True)
class LaunchScalar:
    """One scalar parameter of a launch: the program value it gets, or its constant and the constant's slot."""

    param: str
    given: ScalarGiven  # a Value, or the constant as a plain Python bool, int or float
    slot: int | None  # the constant's 8-byte launch value; None for a Value

    @property
    def text(self) -> str:
        """What the launch gives it, as the program listing shows it: ``lr`` (a value) or ``0.05``."""
        return self.given.name if isinstance(self.given, Value) else repr(self.given)

    @property
    def launch_value(self) -> int | str:
        """What the generated runner is told: the constant's 8-byte launch value, or the value's name."""
        return self.given.name if isinstance(self.given, Value) else (self.slot or 0)


def _launch_scalar(kernel: str, scalar: Scalar, given: object, site: Site | None) -> LaunchScalar:
    """LG305 unless ``given`` is a Value of the scalar's dtype or a constant the scalar can take."""
    who = f"`{kernel}.{scalar.name}` ({scalar.described})"
    if isinstance(given, Value):
        if given.dtype != scalar.dtype:
            raise _program_error(f"{who} must be given {with_article(str(scalar.dtype))} value, got value `{given.name}` of "
                                 f"{given.dtype} (declared at {given.site})", site,
                                 hint=f"declare Value(\"{given.name}\", {scalar.dtype})")
        return LaunchScalar(scalar.name, given, None)
    if isinstance(given, (Buffer, BufferView)):
        raise _program_error(f"{who} must be given a constant or a Value, got {given!r}", site,
                             hint="a scalar is passed by value: declare Value(\"name\", dtype) for one given each run")
    try:
        slot = pack_scalar(scalar.dtype, scalar.finite, given)
    except ScalarValueError as exc:
        raise _program_error(f"{who} {exc.problem}", site, hint=exc.hint) from None
    # A NumPy scalar is kept as its Python value: what the program listing shows.
    plain: ScalarGiven = given if isinstance(given, (bool, int, float)) else getattr(given, "item")()
    return LaunchScalar(scalar.name, plain, slot)


@dataclass(frozen=True)
class LaunchArg:
    """One parameter of a launch: the buffer it gets and the columns of it the kernel touches."""

    param: str
    buffer: Buffer
    view: View  # the view of the buffer's layout the launch names (or the binding's, for a whole buffer)

    @property
    def name(self) -> str:
        """What the launch gives the parameter: ``window.snap``."""
        return _field_name(self.buffer, self.view)


@dataclass(frozen=True, eq=False)
class Launch:
    """One kernel launch of a program: ``Launch(kernel, x=window.snap, y=y)``.

    ``overwrites`` names the parameters whose writes may cover columns an
    earlier launch wrote (LG302 otherwise); ``name`` names the binding made
    for a :class:`Kernel` (its name by default).
    """

    binding: Binding
    args: tuple[LaunchArg, ...]  # in parameter order
    overwrites: frozenset[str]
    site: Site | None
    scalars: tuple[LaunchScalar, ...]  # in the order of the kernel's scalars

    def __init__(self, kernel: Kernel | Binding, /, *, name: str | None = None, overwrites: Collection[str] = (),
                 **args: Buffer | BufferView | ScalarGiven | np.number[Any] | np.bool_) -> None:
        site = caller_site()
        if not isinstance(kernel, (Kernel, Binding)):
            raise _program_error(f"a launch needs a kernel or a binding, got {kernel!r}", site)
        declared = kernel if isinstance(kernel, Kernel) else kernel.kernel
        missing_scalars = [s.name for s in declared.scalars if s.name not in args]
        if missing_scalars:
            raise _program_error(
                f"a launch of `{declared.name}` must give its scalar " + ", ".join(f"`{m}`" for m in missing_scalars)
                + " a value", site, hint="give each a constant (`lr=0.01`) or a program's Value (`lr=Value(\"lr\", "
                "f32)`), which the runner then takes each run")
        scalars = tuple(_launch_scalar(declared.name, s, args[s.name], site) for s in declared.scalars)
        arrays: dict[str, Buffer | BufferView] = {}
        for key, value in args.items():
            if key in declared.scalar_names:
                continue
            if not isinstance(value, (Buffer, BufferView)):
                raise _program_error(
                    f"`{declared.name}.{key}` must be given a buffer or a field of one (`window.snap`), "
                    f"got {value!r}", site, hint="declare it with Buffer(\"name\", Layout)",
                )
            arrays[key] = value
        if (isinstance(overwrites, (str, bytes)) or not isinstance(overwrites, Collection)
                or not all(isinstance(o, str) for o in overwrites)):
            raise _program_error(f"`overwrites` of a launch of `{declared.name}` must be a list of parameter "
                                 f"names, got {overwrites!r}", site)
        replacing = [p.name for p in declared.params if p.access == "out"]
        for o in overwrites:
            if o not in replacing:
                raise _program_error(
                    f"`overwrites` names `{o}`, which is not an Out parameter of `{declared.name}` (an InOut "
                    f"reads what it updates, so it never needs it)", site,
                    hint="list Out parameters: " + (", ".join(replacing) or "it has none"),
                )
        if isinstance(kernel, Kernel):
            views = {k: (v.view if isinstance(v, BufferView) else v.layout.view) for k, v in arrays.items()}
            binding = replace(kernel.bind(name, **views), by_launch=True)  # LG207 for a missing or unknown parameter
        else:
            if name is not None:
                raise _program_error(f"`name=` names a new binding; `{kernel.name}` is already bound", site)
            binding = kernel
            known = [p.name for p in binding.kernel.params]
            unknown = [k for k in arrays if k not in known]
            missing = [p for p in known if p not in arrays]
            if unknown or missing:
                raise _program_error(
                    f"a launch of `{binding.name}` must give every parameter a buffer"
                    + (f"; unknown: {', '.join(unknown)}" if unknown else "")
                    + (f"; missing: {', '.join(missing)}" if missing else ""), site,
                    hint="give each of " + ", ".join(f"{p.name}=..." for p in binding.kernel.params),
                )
        resolved = []
        for p in binding.kernel.params:
            value = arrays[p.name]
            if isinstance(value, BufferView):
                resolved.append(LaunchArg(p.name, value.buffer, value.view))
            else:  # a whole buffer handed to a binding: the binding's columns of it
                resolved.append(LaunchArg(p.name, value, binding.view(p.name)))
        for attr, val in (("binding", binding), ("args", tuple(resolved)), ("overwrites", frozenset(overwrites)),
                          ("site", site), ("scalars", scalars)):
            object.__setattr__(self, attr, val)

    def __repr__(self) -> str:
        return f"<Launch {self.binding.name}>"

    def arg(self, param: str) -> LaunchArg:
        return next(a for a in self.args if a.param == param)

    def call_text(self, kernel: str) -> str:
        """The launch as it reads in a program listing: ``kernel(x=window.snap, y=y)``."""
        given = {a.param: a.name for a in self.args} | {s.param: s.text for s in self.scalars}
        return f"{kernel}({', '.join(f'{p.name}={given[p.name]}' for p in self.binding.kernel.signature)})"


@dataclass(frozen=True, eq=False)
class Program:
    """Named buffers and the launches that run over them, in order."""

    name: str
    launches: tuple[Launch, ...]
    buffers: tuple[Buffer, ...]  # in order of first use
    doc: str
    site: Site | None
    values: tuple[Value, ...]  # the values the caller gives each run, in order of first use

    def __init__(self, name: str, launches: Sequence[Launch], *, doc: str = "") -> None:
        site = caller_site()
        problem = name_problem(name)
        if problem:
            raise _program_error(f"a program name {problem[1]}", site)
        if isinstance(launches, (str, bytes)) or not isinstance(launches, Sequence) or not launches:
            raise _program_error(f"program `{name}` needs a non-empty list of launches", site)
        if not isinstance(doc, str):
            raise _program_error(f"the doc of program `{name}` must be a string, got {doc!r}", site)
        buffers: dict[str, Buffer] = {}
        for launch in launches:
            if not isinstance(launch, Launch):
                raise _program_error(f"the launches of `{name}` must be Launch(...), got {launch!r}", site)
            for a in launch.args:
                first = buffers.setdefault(a.buffer.name, a.buffer)
                if first is not a.buffer:
                    raise _program_error(
                        f"program `{name}` has two buffers named `{a.buffer.name}` (the other declared at "
                        f"{first.site})", a.buffer.site, hint="declare each buffer once and reuse it",
                    )
        values = _values(name, launches, buffers)
        for attr, value in (("name", name), ("launches", tuple(launches)), ("buffers", tuple(buffers.values())),
                            ("doc", doc), ("site", site), ("values", values)):
            object.__setattr__(self, attr, value)

    def __repr__(self) -> str:
        return f"<Program {self.name}>"


def _values(program: str, launches: Sequence[Launch], buffers: dict[str, Buffer]) -> tuple[Value, ...]:
    """The program's values in order of first use; LG305 for two of one name, or one named like a buffer
    (the generated runner takes both by keyword)."""
    values: dict[str, Value] = {}
    for launch in launches:
        for s in launch.scalars:
            if not isinstance(s.given, Value):
                continue
            first = values.setdefault(s.given.name, s.given)
            if first is not s.given:
                raise _program_error(f"program `{program}` has two values named `{first.name}` (the other declared "
                                     f"at {first.site})", s.given.site, hint="declare each value once and reuse it")
            if first.name in buffers:
                raise _program_error(f"program `{program}` has a value and a buffer named `{first.name}` (the buffer "
                                     f"declared at {buffers[first.name].site}): its runner takes both by name",
                                     first.site, hint="rename one of them")
    return tuple(values.values())
