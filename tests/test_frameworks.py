"""One entry per array framework (``runtime/arrays.py``'s ``FRAMEWORKS``), asked by every place that reads arrays.

Which framework an array belongs to was decided by module-name prefix in three places (the full read, the fast
readers that key a plan, the stream readers), which disagreed: a ``cupy.ndarray`` subclass defined in ``cupyx``
got CuPy's fast reader but was validated through ``__cuda_array_interface__``, and one defined in a user's module
was never read fast. Now each asks the table, so for any type the full read, the fast read (and its
ArrayInfo) and the compiled path's own read are one framework's.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from layoutgen.runtime import arrays, driver, fastpath, readers, torch_streams
from layoutgen.runtime.arrays import CUPY, DLPACK, FRAMEWORKS, INTERFACE, JAX, TORCH, Framework, framework_of

cupy = pytest.importorskip("cupy")
torch = pytest.importorskip("torch")


class Interface:
    """A ``__cuda_array_interface__`` producer of no framework layoutgen knows."""

    __cuda_array_interface__ = {"version": 3, "shape": (4,), "typestr": "<f4", "data": (0x7F00_0000_0000, False),
                                "strides": None}


class DLPack:
    """A producer of DLPack capsules only."""

    def __dlpack__(self, **kw: Any) -> Any:
        raise NotImplementedError

    def __dlpack_device__(self) -> tuple[int, int]:
        return (2, 0)


MODULES = ["cupy", "cupy.foo", "cupyx.foo", "torch.foo", "jax", "jax.foo", "jaxlib.xla", "numba.cuda", "mylib"]


def drawn_type(base: type, module: str) -> type:
    return type("Drawn", (base,), {"__module__": module})


@settings(max_examples=60, deadline=None)
@given(st.sampled_from([cupy.ndarray, torch.Tensor, Interface, DLPack]), st.sampled_from(MODULES))
def test_every_place_reads_an_array_type_as_one_framework(base: type, module: str) -> None:
    kind = drawn_type(base, module)
    a = kind() if base in (Interface, DLPack) else None
    framework = framework_of(kind, a)
    assert framework is not None
    expected = {cupy.ndarray: CUPY, torch.Tensor: TORCH}.get(base)
    if expected is not None:  # a subclass of a framework's array type is that framework's, wherever defined
        assert framework is expected
    else:  # another type: its module's framework (by the package's name, not a prefix: cupyx is not CuPy)
        package = module.split(".")[0]
        if base is Interface:
            assert framework is {"cupy": CUPY, "torch": TORCH, "jax": JAX, "jaxlib": JAX}.get(package, INTERFACE)
        else:  # jax's own objects are its arrays only with an interface; any other producer is DLPack's
            assert framework is {"cupy": CUPY, "torch": TORCH}.get(package, DLPACK)
    assert arrays._reader(kind, a) is framework.info  # the full read
    fast = readers.FAST_READERS.get(kind)  # the read that keys a plan, and its ArrayInfo
    assert fast is (framework.fast_reader if framework.array_types(kind) else None)
    if fast is not None:
        assert readers.INFOS[fast] is framework.read


def test_the_table_has_a_row_per_framework_and_the_compiled_path_reads_two_of_them_itself() -> None:
    assert [f.name for f in FRAMEWORKS] == ["cupy", "torch", "jax", "cuda_array_interface", "dlpack"]
    assert {name: f.name for name, f in fastpath.C_READS.items()} == {"fields": "cupy", "dlpack": "torch"}
    assert [f.name for f in FRAMEWORKS if f.fast_reader is not None] == ["cupy", "torch", "jax"]
    assert all(readers.INFOS[f.fast_reader] is f.read for f in (CUPY, TORCH, JAX))  # (tests add their fakes')


@pytest.mark.parametrize("row", FRAMEWORKS, ids=lambda f: f.name)
def test_every_row_is_complete(row: Framework) -> None:
    """Each row says all a launch needs of its framework, and its parts agree with each other."""
    assert re.fullmatch(r"[a-z_]+", row.name)
    assert callable(row.array_types) and callable(row.owns) and callable(row.info) and callable(row.owns_stream)
    assert (row.fast_reader is None) == (row.fast_info is None)  # a fast read comes with the ArrayInfo it says
    if row.fast_reader is None:  # validated on every call: nothing to refuse on a fast read, nothing for C to read
        assert row.refuse is None and row.c_read is None and row.read is None
    else:
        assert callable(row.read)
    if row.c_read is not None:  # the compiled path reads it itself: it has a stream reader for C to compare with
        assert row.stream_handle is not None
    assert (row.stream_handle is None) == (row.owns_stream is arrays._never)
    if row.written is not None:  # a rule for written arrays: checked before, recorded after, maybe in C too
        for member in ("check", "record", "in_c"):
            assert hasattr(row.written, member), f"{row.name}'s written rule has no `{member}`"
        assert not row.written.in_c or row.c_read is not None  # C applies only the rules of rows it reads
    assert framework_of(type(None), None) is None


def test_the_c_sides_rows_are_the_frameworks_it_reads_itself() -> None:
    """runtime/fastlaunch/readers.c's fl_c_reads, one row per framework whose ``c_read`` names it."""
    source = (Path(arrays.__file__).parent / "fastlaunch" / "readers.c").read_text(encoding="utf-8")
    rows = re.findall(r'\[C_READ_\w+\] = \{"(\w+)"', source)
    assert rows == ["fields", "dlpack"] and set(rows) == {f.c_read for f in FRAMEWORKS if f.c_read is not None}


@pytest.mark.parametrize(("stream", "framework"), [
    (lambda: cupy.cuda.Stream.null, CUPY),
    (lambda: torch_streams.TorchCurrentStream(5), TORCH),
])
def test_a_streams_handle_is_read_as_its_framework_reads_it(stream: Any, framework: Any) -> None:
    assert driver._stream_reader(type(stream())) is framework.stream_handle
