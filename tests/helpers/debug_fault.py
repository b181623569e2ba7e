"""A debug build's fault record (``lg::Fault`` of lg/fault.cuh) built from the runtime's own description of it.

:class:`layoutgen.runtime.debug.FaultRecord` names the record's words in order; a record built here follows it,
so a word added to the record changes the runtime and these records together, never a count typed in a test.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from layoutgen.runtime import debug


def fault_words(file: bytes = b"", **words: int) -> np.ndarray[Any, np.dtype[np.int64]]:
    """The record's 64-bit words as the device holds them: each of ``words`` by its name in
    :class:`~layoutgen.runtime.debug.FaultRecord` (the others 0), then ``file`` padded to its bytes."""
    names = debug.FaultRecord._fields
    unknown = sorted(set(words) - set(names))
    if unknown:
        raise TypeError(f"the fault record has no word {', '.join(unknown)}; its words: {', '.join(names)}")
    if len(file) >= debug.FAULT_FILE_BYTES:
        raise ValueError(f"`file` must be shorter than {debug.FAULT_FILE_BYTES} bytes, got {len(file)}")
    values = np.zeros(len(names) + debug.FAULT_FILE_BYTES // 8, np.int64)
    values[:len(names)] = [words.get(name, 0) for name in names]
    values[len(names):] = np.frombuffer(file.ljust(debug.FAULT_FILE_BYTES, b"\0"), np.int64)
    return values


class FaultRecord:
    """The device array of the fault record, as ``check_fault`` reads and clears it."""

    def __init__(self, values: np.ndarray[Any, np.dtype[np.int64]]) -> None:
        self.values, self.nbytes = values, values.nbytes

    def get(self) -> np.ndarray[Any, np.dtype[np.int64]]:
        return self.values

    def fill(self, value: int) -> None:
        self.values[:] = value


def install_fault(monkeypatch: pytest.MonkeyPatch, file: bytes = b"", **words: int) -> FaultRecord:
    """Make the next ``check_fault`` read a record of ``words`` and ``file`` (no device, no synchronization)."""
    record = FaultRecord(fault_words(file, **words))
    monkeypatch.setattr(debug, "_fault_record", lambda module: record)
    monkeypatch.setattr(debug, "_synchronize", lambda stream: None)
    return record
