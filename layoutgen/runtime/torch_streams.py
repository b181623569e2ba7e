"""torch's current stream: the torch row's ``current_stream`` (``arrays.TORCH``).

A launch over torch tensors given no stream runs on torch's current stream of
the launch's device, as DLPack's exchange API asks of a library that reads a
framework's tensors: so the kernel is ordered after the torch work that made
its inputs. The handle is read raw (``torch._C._cuda_getCurrentRawStream``):
no ``torch.cuda.Stream`` is made per launch. This module imports nothing of
the framework table: the row refers to it.
"""

from __future__ import annotations

import sys
from typing import Any


class TorchCurrentStream:
    """torch's current stream on a device, as the raw handle torch gives (no ``torch.cuda.Stream`` made a
    launch): what a launch over torch tensors runs on when it is given no stream. It speaks the CUDA stream
    protocol, and has ``cuda_stream`` as a torch stream has (its handle is read as a torch stream's)."""

    __slots__ = ("cuda_stream",)

    #: How a user names this stream, for a hint that asks for one (LG616).
    spelled = "torch.cuda.current_stream()"

    def __init__(self, handle: int) -> None:
        self.cuda_stream = handle

    def __cuda_stream__(self) -> tuple[int, int]:
        return 0, self.cuda_stream

    def __repr__(self) -> str:
        return f"TorchCurrentStream(0x{self.cuda_stream:x})"


#: torch's current raw stream of a device (``torch._C._cuda_getCurrentRawStream``), found on first use.
_RAW_STREAM: Any = None


def torch_stream(device: int) -> TorchCurrentStream:
    """torch's current stream on ``device`` (``torch.cuda.current_stream(device)``, read as a handle)."""
    global _RAW_STREAM
    if _RAW_STREAM is None:
        torch = sys.modules["torch"]  # a torch tensor was given: torch is imported
        _RAW_STREAM = getattr(torch._C, "_cuda_getCurrentRawStream", None) or (
            lambda index: torch.cuda.current_stream(index).cuda_stream)
    return TorchCurrentStream(int(_RAW_STREAM(device)))
