"""torch's rules for a tensor a kernel writes in place: the row's ``written`` rule (``arrays.TORCH``).

Before a launch, torch's own refusals of an in-place write (LG635: an
inference tensor outside inference mode; LG618: a tensor that requires grad,
in grad mode); after it, the written tensors' version counters, as torch's
in-place operations bump them. The compiled path applies the same rule in C
(``fastlaunch/torch.c``: ``fl_writes_allowed``, ``fl_bump_versions``), so
:attr:`TorchWrites.in_c` is true. This module imports nothing of the framework table: a row refers to it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import Any

from .errors import LaunchError, launch_error


class TorchWrites:
    """The written parameters of a launch that got torch tensors: autograd's rules before, its record after.

    Built once per plan (the arrays' types are part of its key), so a launch
    with no torch output pays one truth test. torch refuses an in-place write
    to a leaf that requires grad (and to a view of one) in grad mode; it allows
    one to other tensors that require grad because it records the operation
    for backward. A kernel launch is not recorded, so the gradient through it
    would be silently wrong: refused as well (LG618). Under ``torch.no_grad()``,
    how optimizers update parameters, torch allows both and so does this.
    After the launch each written tensor's version counter is bumped, as
    torch's in-place operations do, so that a tensor saved for backward and
    then overwritten is reported by ``backward()`` instead of giving wrong
    gradients.
    """

    __slots__ = ("indices", "_who", "_pick", "_grad_enabled", "_inference_enabled", "_increment_version")

    #: The compiled path applies this rule itself (fastlaunch/torch.c): a plan with it may be taught to C.
    in_c = True

    def __init__(self, indices: tuple[int, ...], who: Callable[[str, Any], str]) -> None:
        """``indices``: the written parameters that got torch tensors; ``who(kernel, param)`` names one."""
        import torch

        self.indices = indices
        self._who = who
        # a tuple of the written tensors (itemgetter of one index gives the tensor itself)
        self._pick = itemgetter(*indices) if len(indices) > 1 else lambda arrays, i=indices[0]: (arrays[i],)
        self._grad_enabled = torch.is_grad_enabled
        self._inference_enabled = torch.is_inference_mode_enabled
        self._increment_version = version_bump()

    def check(self, kernel: str, params: Sequence[Any], arrays: Sequence[Any]) -> None:
        """LG635 when one of them is an inference tensor and inference mode is off (torch refuses that write),
        LG618 when one of them requires grad in grad mode."""
        who = self._who
        for i in self.indices:
            t = arrays[i]
            if t.is_inference() and not self._inference_enabled():
                raise launch_error(
                    "LG635", f"{who(kernel, params[i])} is written in place by the kernel, but the tensor is an "
                    f"inference tensor and inference mode is off, which torch refuses (\"Inplace update to inference "
                    f"tensor outside InferenceMode is not allowed\"); got a torch tensor of shape "
                    f"[{', '.join(map(str, t.shape))}]",
                    hint="launch under `torch.inference_mode()`, or write into a tensor made outside it (`t.clone()` "
                    "outside inference mode)")
        if not self._grad_enabled():
            return
        for i in self.indices:
            t = arrays[i]
            if t.requires_grad:
                raise _autograd_error(who(kernel, params[i]), t)

    def record(self, arrays: Sequence[Any]) -> None:
        """Tell autograd that the kernel wrote them in place (their version counters)."""
        self._increment_version(self._pick(arrays))


#: ``torch.autograd.graph.increment_version``'s names as torch 2.8 to 2.13 write it: ``tensor = (tensor,)``
#: for one tensor, then ``torch._C._increment_version(tensor)``.
_INCREMENT_VERSION_NAMES = ("isinstance", "torch", "Tensor", "_C", "_increment_version")


def version_bump() -> Any:
    """What bumps the version counters of a tuple of torch tensors, as ``increment_version`` (documented for
    kernels that write through ``data_ptr()``) does: ``torch._C._increment_version`` itself, where
    ``increment_version`` is that call and nothing else (half the cost, ~110 against ~220 ns for two
    tensors), else ``increment_version``."""
    import torch
    from torch.autograd.graph import increment_version

    code = getattr(increment_version, "__code__", None)
    direct = getattr(torch._C, "_increment_version", None)
    if direct is not None and code is not None and code.co_names == _INCREMENT_VERSION_NAMES:
        return direct
    return increment_version


def _autograd_error(named: str, t: Any) -> LaunchError:
    got = f"got a torch tensor of shape [{', '.join(map(str, t.shape))}]"
    if t.is_leaf:
        return launch_error(
            "LG618", f"{named} is written in place by the kernel, but the tensor is a leaf that requires "
            f"grad, which torch refuses (\"a leaf Variable that requires grad is being used in an in-place "
            f"operation\"); {got}",
            hint="update it under `torch.no_grad()` (as an optimizer does), or write into a tensor that does not "
            "require grad")
    return launch_error(
        "LG618", f"{named} is written in place by the kernel, but the tensor requires grad and autograd "
        f"does not record the kernel's write: gradients through it would be wrong; {got}",
        hint="write into a tensor that does not require grad (a new one, or `.detach()`), or launch under "
        "`torch.no_grad()`")
