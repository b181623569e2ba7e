"""A generated launcher called with an argument missing: which one the message names.

A kernel that declares a scalar between arrays (``step(w, lr, g)``) takes its arguments in that order.
A call that leaves the scalar out (``step(w, g)``) gives the scalar the next array and leaves the last
parameter empty, so Python's own ``TypeError`` would name ``g``, which was given. The generated
launcher gives its parameters after such a scalar a marker default instead, and asks
:func:`missing_argument` what to say: the first scalar given an array is the one left out.
"""

from __future__ import annotations

from collections.abc import Sequence

from .scalars import _array_shape


def missing_argument(kernel: str, params: Sequence[tuple[str, str]], given: Sequence[object],
                     missing: object) -> tuple[str, str]:
    """(message, hint) for a call of ``kernel`` that gave no value for a parameter (its value is ``missing``).

    ``params``: (name, what it is: ``array`` or ``scalar f32``) in the launcher's order; ``given``: the
    values the call bound to them, in that order."""
    order = ", ".join(name for name, _ in params)
    hint = f"give every argument, in order or by name: {kernel}({order})"
    shifted = [name for (name, what), value in zip(params, given)
               if what != "array" and value is not missing and _array_shape(value) is not None]
    empty = [name for (name, _), value in zip(params, given) if value is missing]
    if shifted:
        what = dict(params)[shifted[0]]
        return (f"`{kernel}` was called without {what} `{shifted[0]}`: it takes ({order}); the call gave "
                f"`{shifted[0]}` an array and nothing to `{empty[0]}`"), hint
    return f"`{kernel}` was called without `{empty[0]}`: it takes ({order})", hint
