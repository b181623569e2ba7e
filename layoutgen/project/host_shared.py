"""Static ``__shared__`` arrays in the host programs of ``layoutgen check --execute``: one per block.

On the host every thread of a block is a thread of the process and ``__shared__`` is no storage class, so
``__shared__ float part[128];`` in a kernel would be an array of each thread's own, and a block reduction
through it would read what no other thread wrote. The files of a host program are therefore rewritten
(columns may move, lines never do, so the ``#line`` directives and findings' lines hold): a ``__shared__``
declaration that is not ``extern`` becomes ``static`` (``LG_STATIC_SHARED``, lg/host/runtime.h), one array per
kernel for the whole process, which is one per block because the blocks of a launch run one after another;
and each array it declares is registered (``LG_SHARED_RESET``) to be filled with all-ones bytes (NaN) when
first reached and before every later block, as the dynamic shared buffer is, so that a read of an element no
thread of the block wrote shows in the outputs. CUDA allows no initializer on a ``__shared__`` variable, so
no initialization is lost. ``extern __shared__`` (the dynamic buffer) is left as it is.
"""

from __future__ import annotations

import re

from ..checks.cxx import scan

_SHARED = re.compile(r"\b__shared__\b")
_GROUP = re.compile(r"\([^()]*\)|\[[^\[\]]*\]|\{[^{}]*\}")  # innermost brackets: sizes, attributes, alignments
_TEMPLATE_ARGS = re.compile(r"<[^<>]*>")
_NAME = re.compile(r"[A-Za-z_]\w*")
_OPEN, _CLOSE = "([{", ")]}"


def static_shared(text: str) -> str:
    """``text`` (C++ or CUDA) with each ``__shared__`` declaration that is not ``extern`` made one per block."""
    code = "\n".join(scan(text, jinja=False).code)  # comments and literals blanked, columns kept
    out = text
    for match in reversed(list(_SHARED.finditer(code))):  # from the end: earlier offsets stay valid
        line_start = code.rfind("\n", 0, match.start()) + 1
        if code[line_start:match.start()].lstrip().startswith("#"):  # in a macro: its uses are not rewritten
            continue
        start = max(code.rfind(c, 0, match.start()) for c in ";{}") + 1
        specifiers = code[start:match.start()]
        end = _statement_end(code, match.end())
        if re.search(r"\bextern\b", specifiers) or end is None:
            continue
        names = _declared(code[match.end():end])
        if not names:
            continue
        resets = "".join(f" LG_SHARED_RESET({name});" for name in names)
        static = "" if re.search(r"\bstatic\b", specifiers) else "LG_STATIC_SHARED"
        out = out[:end + 1] + resets + out[end + 1:]
        out = out[:match.start()] + static + out[match.end():]
    return out


def _statement_end(code: str, at: int) -> int | None:
    """The ``;`` that ends the declaration going on at ``at`` (outside brackets), or None."""
    depth = 0
    for i in range(at, len(code)):
        ch = code[i]
        if ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth -= 1
            if depth < 0:
                return None
        elif ch == ";" and depth == 0:
            return i
    return None


def _declared(declaration: str) -> list[str]:
    """The names a declaration's declarators declare (``float a[4], b[N]`` -> a, b)."""
    text, previous = declaration, None
    while previous != text:  # brackets hold no names of their own (sizes, alignments, attributes)
        previous, text = text, _TEMPLATE_ARGS.sub(" ", _GROUP.sub(" ", text))
    names = []
    for part in text.split(","):
        found = _NAME.findall(part.split("=", 1)[0])
        if found:
            names.append(found[-1])
    return names
