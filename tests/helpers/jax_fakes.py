"""Fake JAX arrays for the tests, without jax: what the JAX row of ``runtime/arrays.py`` reads.

:class:`JaxArray` stands for ``jax.Array`` (a test puts a module named ``jax`` whose ``Array`` it is in
``sys.modules``); :class:`FakeJaxArray` subclasses it as jaxlib's ``ArrayImpl`` does, defined in a
``jaxlib`` module, with a shape, a numpy dtype, a hashable single-device sharding (equal where the device,
its platform, and the memory kind are, as jaxlib's), a hashable device layout and ``unsafe_buffer_pointer()``.
"""

from __future__ import annotations

import numpy as np

class JaxArray:
    """Stands for ``jax.Array`` (the fake ``jax`` module's ``Array``)."""


class JaxDevice:
    def __init__(self, id: int, platform: str = "gpu") -> None:
        self.id, self.platform = id, platform


class JaxSharding:
    """Like ``SingleDeviceSharding``: hashable, one device, a memory kind."""

    def __init__(self, device: JaxDevice, memory_kind: str = "device") -> None:
        self.device_set = frozenset({device})
        self.memory_kind = memory_kind

    def __hash__(self) -> int:  # as jaxlib's: equal where the devices (a platform's, an id) and memory kind are
        return hash((tuple((d.platform, d.id) for d in self.device_set), self.memory_kind))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, JaxSharding) and hash(self) == hash(other)


class XlaLayout:
    def __init__(self, minor_to_major: tuple[int, ...]) -> None:
        self._minor_to_major = minor_to_major

    def minor_to_major(self) -> tuple[int, ...]:
        return self._minor_to_major


class PjRtLayout:
    """Like jaxlib's ``PjRtLayout``: hashable, equal where the layouts are, its XLA layout's dimension order."""

    def __init__(self, major_to_minor: tuple[int, ...]) -> None:
        self.major_to_minor = major_to_minor

    def _xla_layout(self) -> XlaLayout:
        return XlaLayout(self.major_to_minor[::-1])

    def __hash__(self) -> int:
        return hash(self.major_to_minor)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PjRtLayout) and other.major_to_minor == self.major_to_minor


class FakeJaxArray(JaxArray):
    """Reads like a jaxlib ``ArrayImpl``: shape, numpy dtype, sharding, device layout (``_pjrt_layout``: row-major
    unless ``major_to_minor`` says otherwise), ``unsafe_buffer_pointer()``."""

    __module__ = "jaxlib.xla_extension"

    def __init__(self, shape: tuple[int, ...], ptr: int, dtype: str = "float32", device: int = 0,
                 platform: str = "gpu", memory_kind: str = "device", deleted: bool = False,
                 major_to_minor: tuple[int, ...] | None = None) -> None:
        self.shape, self.dtype = shape, np.dtype(dtype)
        self.sharding = JaxSharding(JaxDevice(device, platform), memory_kind)
        self._pjrt_layout = PjRtLayout(tuple(range(len(shape))) if major_to_minor is None else major_to_minor)
        self._ptr, self._deleted = ptr, deleted

    def unsafe_buffer_pointer(self) -> int:
        if self._deleted:
            raise RuntimeError("Array has been deleted with shape=float32[40].")
        return self._ptr

    def devices(self) -> set[JaxDevice]:
        return set(self.sharding.device_set)
