"""No name the compiled launch path's extension exports can crash the process or make it leak.

Initialising a ``Launcher`` or ``Steps`` runs Python code (a scalar's
``finite`` is asked its ``__bool__``, a buffer index its ``__index__``),
which may initialise the same object again: the first initialisation must
then refuse, taking nothing, so that the counts a call reads agree with the
plans it holds and no inner launch object is lost. ``use_torch_reader`` takes
the torch reader's capsule, never an address. Run under ASan/UBSan as well
(see the report of issue 29): these are the calls that overflowed and leaked.
"""

from __future__ import annotations

import gc
import subprocess
import sys
import tracemalloc
import weakref
from typing import Any

import pytest

from tests.helpers.compiled import EXT  # the test build of the extension, installed on import
from tests.helpers.launch import BASE, Dev, dev_reader

from layoutgen.runtime import launch


class Launch:
    """A stand-in launch object: what a plan or a step holds (weakly referenced, to see it let go)."""

    handle = 0xF00D

    def __call__(self, *args: Any) -> None:
        pass


def test_a_launcher_initialised_again_from_python_code_its_init_runs_keeps_the_first_whole(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(launch._FAST_READERS, Dev, dev_reader)
    one = Dev((4,), ptr=BASE)
    fast = EXT.Launcher.__new__(EXT.Launcher)

    class Finite:  # its __bool__ initialises the launcher with one array, and teaches it a one-array plan
        def __bool__(self) -> bool:
            fast.__init__("inner", 1, (), print, print)
            signature, ptr = dev_reader(one)
            fast.add(0, (one,), (signature,), (ptr,), (3,), (), 1, 64, 0, (4,), (), Launch(), 0xF00D)
            return False

    with pytest.raises(TypeError) as again:
        fast.__init__("outer", 5, (("f32", Finite()),), print, print)
    assert str(again.value) == "a Launcher is initialised once"
    assert repr(fast) == "<layoutgen compiled launcher of kernel inner>" and fast.plans == 1
    five = tuple(Dev((4,), ptr=BASE + 0x1000 * i) for i in range(5))
    assert fast.attempt(*five, 1.0) is False  # five arrays and a scalar: not this launcher's call (one array)


class Index:
    """A buffer index whose ``__index__`` initialises ``steps`` (with ``launch``) first."""

    def __init__(self, steps: Any, launch: Any) -> None:
        self.steps, self.launch = steps, launch

    def __index__(self) -> int:
        self.steps.__init__("inner", 1, ((self.launch, 0xF00D, 1, 64, 0, (0,), ()),))
        return 0


def steps_init_reentered(launches: list[Any]) -> None:
    """``Steps.__init__`` whose buffer index's ``__index__`` initialises the same Steps first."""
    steps = EXT.Steps.__new__(EXT.Steps)
    inner, outer = Launch(), Launch()
    launches += [weakref.ref(inner), weakref.ref(outer)]
    try:
        steps.__init__("outer", 1, ((outer, 0xF00D, 1, 64, 0, (Index(steps, inner),), ()),))
    except TypeError as again:
        assert str(again) == "Steps are initialised once"
    else:
        raise AssertionError("initialised twice")


def test_steps_initialised_again_from_python_code_their_init_runs_let_every_launch_go() -> None:
    launches: list[Any] = []
    steps_init_reentered(launches)
    gc.collect()
    assert [ref() for ref in launches] == [None, None]  # neither the inner steps' launch nor the outer's leaked


def test_steps_initialised_again_many_times_leak_nothing() -> None:
    steps_init_reentered([])  # warm: every type and code object made
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(5000):
            steps_init_reentered([])
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 16 * 1024, f"{grown} bytes kept after 5000 re-entered initialisations"  # 5 MB before


@pytest.mark.parametrize("given", ["8", "0", "2**64 - 1", "object()", "b'x' * 64", "'address'"])
def test_use_torch_reader_takes_no_address(given: str) -> None:
    """An int (any address) or any other object is refused: a segfault before, in a process of its own here."""
    script = (f"from layoutgen.runtime import _fastlaunch\n"
              f"try:\n    _fastlaunch.use_torch_reader({given}, False)\n"
              f"except TypeError as exc:\n    print('refused:', exc)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ("refused: use_torch_reader() takes the torch reader's capsule "
                           "(\"layoutgen.runtime._torch_cxx_reader.TorchReader\") or None\n")


def test_a_capsule_of_another_name_is_refused() -> None:
    import datetime

    with pytest.raises(TypeError, match=r"takes the torch reader's capsule"):
        EXT.use_torch_reader(datetime.datetime_CAPI, False)  # a real capsule, of another module
