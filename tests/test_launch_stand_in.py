"""The compiled path standing in a generated launcher function's name (KernelLauncher.public).

On the compiled path a module's `variable_selection_fwd` is the kernel's C
launcher itself, so that a call by position reaches C with no Python frame
between; the generated function it wraps binds every other call. These
tests hold it to that function: the same name, docstring, signature and
help, the same outcome for every way of passing the arguments (a property
test over positions, keywords, unknown and repeated names), and the Python
path keeps the function itself.
"""

from __future__ import annotations

import inspect
import pydoc
from types import FunctionType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import generated.vsn as vsn
from layoutgen.runtime import fastpath, launch
from layoutgen.runtime.launch import KernelLauncher, LaunchError
from tests.fake_device import Recorded, fake_device
from tests.launch_paths import launch_path, take_path  # noqa: F401  (launch_path: the fixture of both paths)
from tests.helpers.launch import B, K, Dev, dev_reader, fwd_args, launcher_of

NAMES = ("x", "W", "b", "gates", "y")


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """Device 0 faked, the fake arrays read at C level; each launch recorded as (blocks, block, values)."""
    made: list[tuple[Any, ...]] = []
    monkeypatch.setattr(launch, "find_device", lambda: 0)
    monkeypatch.setattr(launch, "device_arch", lambda device: "sm_90")
    monkeypatch.setitem(launch._FAST_READERS, Dev, dev_reader)
    monkeypatch.setattr(KernelLauncher, "function", lambda self, device, arch: Recorded(
        lambda blocks, block, values, stream: made.append((blocks, block, list(values)))))
    fake_device(monkeypatch)
    return made


def test_the_compiled_path_stands_in_the_functions_name_and_the_python_path_keeps_it(launch_path: str) -> None:
    fwd = launcher_of(vsn, "variable_selection_fwd")
    public = vsn.variable_selection_fwd
    if launch_path == "python":
        assert isinstance(public, FunctionType) and fwd.signature is public
        return
    function = public.__wrapped__
    assert public is fwd._fast and fwd.signature is function and isinstance(function, FunctionType)
    assert (public.__name__, public.__qualname__, public.__module__, public.__doc__) == (
        function.__name__, function.__qualname__, function.__module__, function.__doc__)
    assert inspect.signature(public) == inspect.signature(function)
    assert str(inspect.signature(public)).startswith("(x: '_lg_Array[Window] | _lg_DeviceArray', W: ")
    shown = pydoc.render_doc(public, renderer=pydoc.plaintext)
    assert "variable_selection_fwd(x: '_lg_Array[Window] | _lg_DeviceArray'" in shown
    assert "gates = softmax(W x + b); y = gates * x" in shown
    assert repr(public) == "<layoutgen compiled launcher of kernel variable_selection_fwd>"


def test_a_kernel_with_a_scalar_before_an_array_keeps_its_function(monkeypatch: pytest.MonkeyPatch) -> None:
    """``entry`` takes the arrays, then the scalars: a call by position in the declaration's order is the
    function's to reorder."""
    module, why = fastpath.extension()
    assert module is not None, why
    take_path(monkeypatch, "compiled")
    spec = launcher_of(vsn, "sgd_update").spec
    k = KernelLauncher(spec, launcher_of(vsn, "sgd_update").folder, "vsn.cuh")
    assert k._fast is not None

    def scalar_first(lr: float, W: Any, b: Any, grad_W: Any, grad_b: Any, *, stream: Any = None) -> None:
        k.entry(W, b, grad_W, grad_b, lr, stream=stream)

    def in_order(W: Any, b: Any, grad_W: Any, grad_b: Any, lr: float, *, stream: Any = None) -> None:
        k.entry(W, b, grad_W, grad_b, lr, stream=stream)

    assert k.public(scalar_first) is scalar_first
    assert k.public(in_order) is k._fast


def outcome(call: Any, made: list[tuple[Any, ...]]) -> tuple[Any, ...]:
    """What a call did: its exception (type, code where a LaunchError, message) or the launches it made."""
    made.clear()
    try:
        call()
    except LaunchError as exc:
        return ("LaunchError", exc.code, str(exc))
    except TypeError as exc:
        return ("TypeError", str(exc))
    return ("launched", list(made))


@st.composite
def call_forms(draw: st.DrawFn) -> tuple[list[Any], dict[str, Any]]:
    """A way of passing variable_selection_fwd's arguments: the first n by position, some of the rest by
    keyword in any order, maybe one missing, an unknown keyword, a name given twice, an argument too many,
    `stream`, a bad array."""
    given_args = dict(zip(NAMES, fwd_args()))
    if draw(st.booleans()):
        given_args["gates"] = Dev((B, K, 41))  # LG602: refused by the Python path whichever way it came
    n = draw(st.integers(0, 5))
    positional = [given_args[name] for name in NAMES[:n]]
    rest = list(NAMES[n:])
    keywords = {name: given_args[name] for name in draw(st.permutations(rest))}
    if rest and draw(st.booleans()):
        keywords.pop(draw(st.sampled_from(rest)))  # missing
    extra = draw(st.sampled_from(["none", "unknown", "twice", "too many", "stream"]))
    if extra == "unknown":
        keywords["z"] = Dev((40,))
    elif extra == "twice" and n:
        keywords[NAMES[0]] = given_args[NAMES[0]]
    elif extra == "too many":
        positional = [given_args[name] for name in NAMES] + [Dev((40,))]
        keywords = {}
    elif extra == "stream":
        keywords["stream"] = None
    return positional, keywords


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(form=call_forms())
def test_every_way_of_passing_the_arguments_binds_as_the_generated_function_binds_it(
        launch_path: str, recorded: list[tuple[Any, ...]], form: tuple[list[Any], dict[str, Any]]) -> None:
    positional, keywords = form
    public = vsn.variable_selection_fwd
    function = getattr(public, "__wrapped__", public)  # the generated function: the reference of binding
    got = outcome(lambda: public(*positional, **keywords), recorded)
    assert got == outcome(lambda: function(*positional, **keywords), recorded)
    if got[0] == "launched":
        assert got[1] == [((B * K + 127) // 128, 128, [a.__cuda_array_interface__["data"][0]
                                                       for a in fwd_args()] + [B, K])]


def test_a_call_by_position_is_launched_by_the_compiled_path_itself(
        launch_path: str, recorded: list[tuple[Any, ...]]) -> None:
    fwd = launcher_of(vsn, "variable_selection_fwd")
    vsn.variable_selection_fwd(*fwd_args())  # planned by the Python path, taught to the compiled one
    if launch_path == "compiled":
        hits = fwd._fast.hits
        vsn.variable_selection_fwd(*fwd_args())
        vsn.variable_selection_fwd(*fwd_args(), stream=None)
        assert fwd._fast.hits == hits + 2
    assert len(recorded) == 3 if launch_path == "compiled" else len(recorded) == 1
