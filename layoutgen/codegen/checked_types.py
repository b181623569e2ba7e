"""The debug build's pointer types: each raw pointer the user's C++ declares over an element type becomes an
``lg::checked_ptr``, so that a pointer taken from a parameter stays checked wherever the user stores or passes it.

In the debug build ``&x.at(r, c)``, ``x.raw_pointer()`` and ``&x.row(r)[c]`` are an ``lg::checked_ptr``
(lg/checked.cuh); written into a raw pointer type (``const float* base = &x.at(0, 0);``, a helper taking
``const float*``, ``(const float4*)p``, ``static_cast<const float*>(p)``) it would be a plain pointer from there
on, unchecked on the GPU. :func:`checked_pointer_types` rewrites those types in the user's text (a template's
rendered preamble and body, a ``SourceKernel``'s file, an ``ExistingKernel``'s copy), in the debug build only:

- a declarator ``[cv] T [cv] * [cv|__restrict__] name`` whose pointee ``T`` is an element type (:data:`ELEMENTS`)
  becomes ``lg::checked_ptr<[const] T> [const] name`` (``__restrict__`` dropped: it promises nothing to a class):
  a local declaration (``= ...``, ``;``, ``(...)``, ``{...}``, an array of them, a ``for``/``if`` head), a
  parameter of a ``__device__`` function or of a lambda inside code, a ``__device__`` function's return type;
- a C-style cast ``(const float4*)e`` and ``static_cast<const float4*>(e)`` cast to ``lg::checked_ptr<...>``,
  which keeps a checked pointer's footprint; ``const_cast<float*>(e)`` is ``lg::const_checked<float*>(e)``
  (the language's ``const_cast`` cannot take a class); ``reinterpret_cast`` is lg/checked_cast.cuh's already;
- ``const auto* p =`` and ``auto* p =`` are ``auto p =`` (``auto*`` cannot be deduced from a class).

What stays raw, on purpose: a ``__global__`` function's signature (its ABI is the launcher's), a declaration with
several declarators (``float *a, *b;``, ``float* a = ..., b;``), a ``volatile`` pointee (the footprint's check
reads through a ``const void*``), ``const char*`` (a string, which printf's ``%s`` takes raw), a ``static``,
``extern``, ``__shared__``, ``__constant__``, ``constexpr`` or ``typedef`` variable, a variable at file or class
scope, a host function's parameters, a pointer to a pointer, and anything in a comment, a string or a
preprocessor line (read with :func:`~layoutgen.checks.cxx.scan`, which blanks them keeping
columns). A replacement holds no line break, and one that replaces text across lines keeps its line breaks, so
every line keeps its number (the ``#line`` directives and the findings' lines depend on it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..checks.cxx import Token, scan, tokens

#: Builtin arithmetic type keywords: any run of them names one type (`unsigned long long`). A plain `char`
#: alone is not an element type here: `const char*` is a string (printf's format, its `%s` arguments).
ARITHMETIC = frozenset("bool char short int long signed unsigned float double".split())
#: Element types that are one name: CUDA's vector types, its 16-bit floats, the fixed-width integers.
ELEMENTS = frozenset({
    *(f"{t}{n}" for t in ("char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "longlong",
                          "ulonglong", "float", "double") for n in (1, 2, 3, 4)),
    "__half", "half", "__half2", "half2", "__nv_bfloat16", "nv_bfloat16", "__nv_bfloat162", "nv_bfloat162",
    *(f"{u}int{b}_t" for u in ("", "u") for b in (8, 16, 32, 64)), "size_t", "ptrdiff_t",
})
_CV = frozenset({"const", "volatile"})
_RESTRICT = frozenset({"__restrict__", "__restrict"})
_QUALIFIERS = _CV | _RESTRICT
# Specifiers that may open a declaration and leave its type alone; and those that keep it raw (see the docstring).
_SPECIFIERS = frozenset({"inline", "__inline__", "__forceinline__", "__noinline__", "__device__", "__host__",
                         "register", "template", "typename"})
_KEEP_RAW = frozenset({"static", "extern", "__shared__", "__constant__", "__managed__", "constexpr", "typedef",
                       "thread_local", "__global__"})
_OPENING = _SPECIFIERS | _KEEP_RAW
# Names before a `(` that still leave it a cast's: the other names make it a call, a declarator or `sizeof(T*)`.
_BEFORE_CAST = frozenset({"return", "case", "throw", "co_return", "co_yield", "else", "do"})
# What may start a cast's operand.
_OPERAND = frozenset({"(", "&", "*", "-", "+", "!", "~", "::", "++", "--"})
_HEADS = frozenset({"for", "if", "while", "switch"})
# Text that may hold a pointer type over an element type: a type word, then a `*` on or after it. Most kernels
# have none, and then the whole reading is skipped.
_MAY_POINT = re.compile(r"\b(?:%s)\b[\w\s]*\*" % "|".join(sorted(ARITHMETIC | ELEMENTS | {"auto"})))
_CLASS_KEYS = frozenset({"struct", "class", "union", "enum", "namespace"})


@dataclass(frozen=True)
class _Frame:
    """An open bracket: ``kind`` is "scope" (file, namespace, class), "code" (a function's body or a block in
    one), "init" (a brace initializer), "head" (a ``for``/``if`` head), "params" (a parameter list whose pointers
    are rewritten: a ``__device__`` function's or a lambda's), "other" (any other parameter list or expression)."""

    close: str
    kind: str


@dataclass(frozen=True)
class _Type:
    """A pointer type spelled from token ``first`` to token ``last`` (its ``*`` and what qualifies the pointer)."""

    first: int
    last: int
    text: str  # lg::checked_ptr<...>, or `auto`
    after: int  # the token after it


def checked_pointer_types(text: str, *, in_function: bool = False) -> str:
    """``text`` (C++, no Jinja) with its pointer types over element types made ``lg::checked_ptr`` (the module
    docstring says which). ``in_function``: the text is a function's body (a kernel template's), else a file."""
    if not _MAY_POINT.search(text):
        return text
    code = _without_directives(scan(text, jinja=False).code)
    toks = tokens(code)
    edits = _Rewriter(toks, code, in_function).edits()
    out = text
    for start, end, new in sorted(edits, reverse=True):
        out = out[:start] + new + "\n" * text.count("\n", start, end) + out[end:]
    return out


def _without_directives(lines: tuple[str, ...]) -> str:
    """The code lines joined, each preprocessor line (and its continuations) blanked, columns kept."""
    out = []
    directive = False
    for line in lines:
        directive = directive or line.lstrip().startswith("#")
        out.append(" " * len(line) if directive else line)
        directive = directive and line.rstrip().endswith("\\")
    return "\n".join(out)


class _Rewriter:
    """One pass over the tokens: the brackets open around each one, and the edits (start, end, new text)."""

    def __init__(self, toks: list[Token], code: str, in_function: bool) -> None:
        self.toks = toks
        self.code = code
        self.stack = [_Frame("", "code" if in_function else "scope")]
        self.code_frames = int(in_function)  # how many "code" frames are open
        self.start = 0  # the token that started the current statement (of the innermost code or scope frame)
        self.pending_if = False  # `?` seen in the statement: its `:` is the conditional's

    def text(self, i: int) -> str:
        return self.toks[i].text if 0 <= i < len(self.toks) else ""

    def edits(self) -> list[tuple[int, int, str]]:
        out: list[tuple[int, int, str]] = []
        for i in range(len(self.toks)):
            out.extend(self._at(i))
            self._bracket(i)
        return out

    def _in_code(self) -> bool:
        return self.code_frames > 0

    # What the token at `i` starts: a declaration, a cast, a static_cast or const_cast.
    def _at(self, i: int) -> list[tuple[int, int, str]]:
        frame, prev, tok = self.stack[-1], self.text(i - 1), self.toks[i]
        found: list[tuple[int, int, str]] = []
        if frame.kind in ("code", "scope") and i == self.start:
            found = self._declaration(i, frame.kind)
        elif frame.kind == "head" and prev == "(":
            found = self._declaration(i, "head")
        elif frame.kind == "params" and prev in ("(", ","):
            found = self._declaration(i, "params")
        if found or not self._in_code():
            return found
        if tok.text == "(" and prev not in (")", "]") and (i == 0 or self.toks[i - 1].kind != "name"
                                                          or prev in _BEFORE_CAST):
            return self._cast(i)
        if tok.text in ("static_cast", "const_cast") and self.text(i + 1) == "<":
            return self._named_cast(i)
        return []

    def _bracket(self, i: int) -> None:
        """Open or close the bracket at ``i``, and move the statement's start."""
        tok, frame = self.toks[i], self.stack[-1]
        t = tok.text
        if tok.kind != "op":
            return
        if t == "{":
            self.stack.append(_Frame("}", self._brace_kind(i)))
            self.code_frames += self.stack[-1].kind == "code"
            self.start, self.pending_if = i + 1, False
        elif t == "(":
            self.stack.append(_Frame(")", self._paren_kind(i)))
        elif t == "[":
            self.stack.append(_Frame("]", "other"))
        elif t in ("}", ")", "]"):
            if len(self.stack) > 1 and frame.close == t:
                self.stack.pop()
                self.code_frames -= frame.kind == "code"
                if (t == "}" and frame.kind in ("code", "scope") and self.stack[-1].kind in ("code", "scope")) \
                        or frame.kind == "head":  # `if (c) float* p = ...;` is a statement of its own
                    self.start, self.pending_if = i + 1, False
        elif frame.kind in ("code", "scope"):
            if t == ";":
                self.start, self.pending_if = i + 1, False
            elif t == "?":
                self.pending_if = True
            elif t == ":" and not self.pending_if:  # a label, `case 1:`, `public:`
                self.start = i + 1

    def _brace_kind(self, i: int) -> str:
        frame, prev = self.stack[-1], self.text(i - 1)
        words = {t.text for t in self.toks[self.start : i] if t.kind == "name"}
        if words & _CLASS_KEYS or (frame.kind == "scope" and prev == "extern"):
            return "scope"  # `extern "C" {` (its string blanked), a class or namespace body
        if prev in (")", "const", "noexcept", "override", "final", "mutable") or (prev == "]" and self._in_code()):
            return "code"  # a function's body, a lambda's (`[&] {`), a statement's (`if (c) {`)
        if frame.kind == "code" and prev in ("", ";", "{", "}", ":", "else", "do", "try"):
            return "code"
        return "init"

    def _paren_kind(self, i: int) -> str:
        frame, prev = self.stack[-1], self.text(i - 1)
        if prev in _HEADS and frame.kind == "code":
            return "head"
        if prev == "]" and self._in_code():
            return "params"  # a lambda's
        if frame.kind == "scope" and i > 0 and self.toks[i - 1].kind == "name":
            words = {t.text for t in self.toks[self.start : i] if t.kind == "name"}
            if "__device__" in words and "__global__" not in words:
                return "params"
        return "other"

    # The pieces: a pointer type, then what it is part of.
    def _pointer_type(self, i: int, *, auto: bool) -> _Type | None:
        """The pointer type whose first token is ``i`` (cv and type words, a ``*``, what qualifies the pointer),
        where its pointee is an element type (or ``auto``, where ``auto``)."""
        j = i
        cv: set[str] = set()
        words: list[str] = []
        while True:
            w = self.text(j)
            if w in _CV:
                cv.add(w)
            elif w in ARITHMETIC and all(x in ARITHMETIC for x in words):
                words.append(w)
            elif not words and (w in ELEMENTS or (auto and w == "auto")):
                words.append(w)
            elif w not in _RESTRICT:
                break
            j += 1
        if not words or words == ["char"] or self.text(j) != "*" or "volatile" in cv:
            return None
        j += 1
        after_cv: set[str] = set()
        while self.text(j) in _QUALIFIERS:
            if self.text(j) in _CV:
                after_cv.add(self.text(j))
            j += 1
        if self.text(j) == "*" or "volatile" in after_cv:
            return None
        suffix = " const" if "const" in after_cv else ""
        if words == ["auto"]:
            return _Type(i, j - 1, f"auto{suffix}", j)
        pointee = ("const " if "const" in cv else "") + " ".join(words)
        return _Type(i, j - 1, f"lg::checked_ptr<{pointee}>{suffix}", j)

    def _edit(self, t: _Type) -> list[tuple[int, int, str]]:
        end = self.toks[t.last].end
        apart = " " if self.code[end : end + 1].isalnum() or self.code[end : end + 1] == "_" else ""  # `float*p`
        return [(self.toks[t.first].start, end, t.text + apart)]

    def _declaration(self, i: int, where: str) -> list[tuple[int, int, str]]:
        j, words = i, set[str]()
        while self.text(j) in _OPENING:
            words.add(self.text(j))
            if self.text(j) == "template" and self.text(j + 1) == "<":
                j = self._matching_angle(j + 1)
            j += 1
        t = self._pointer_type(j, auto=where != "scope")
        if t is None or t.after >= len(self.toks) or self.toks[t.after].kind != "name":
            return []
        end = self.text(t.after + 1)
        if where == "scope":  # a __device__ function's return type (`static` or not); variables stay raw
            device = "__device__" in words and not words & {"__global__", "constexpr", "typedef"}
            return self._edit(t) if end == "(" and device else []
        if words & _KEEP_RAW:
            return []
        if where == "params":
            return self._edit(t) if end in (",", ")", "=", "[") else []
        if end not in ("=", ";", "(", "{", "[") and not (where == "head" and end == ":"):
            return []
        return self._edit(t) if self._one_declarator(t.after + 1) else []

    def _one_declarator(self, k: int) -> bool:
        """Whether the declaration from token ``k`` to its end declares one name (no `,` outside brackets)."""
        depth = 0
        for j in range(k, len(self.toks)):
            t = self.text(j)
            if t in ("(", "[", "{"):
                depth += 1
            elif t in (")", "]", "}"):
                depth -= 1
                if depth < 0:
                    return True  # a head's end
            elif depth == 0 and t == ";":
                return True
            elif depth == 0 and t == ",":
                return False
        return True

    def _matching_angle(self, j: int) -> int:
        """The ``>`` that closes the ``<`` at ``j`` (``template <...>``)."""
        depth = 0
        for k in range(j, len(self.toks)):
            t = self.text(k)
            depth += t == "<"
            depth -= 2 if t == ">>" else t == ">"
            if depth <= 0 or t in (";", "{"):
                return k
        return len(self.toks) - 1

    def _cast(self, i: int) -> list[tuple[int, int, str]]:
        """``(T*)e``: the cast's type, where what follows its ``)`` starts an operand."""
        t = self._pointer_type(i + 1, auto=False)
        if t is None or self.text(t.after) != ")" or t.after + 1 >= len(self.toks):
            return []
        nxt = self.toks[t.after + 1]
        return self._edit(t) if nxt.kind in ("name", "num") or nxt.text in _OPERAND else []

    def _named_cast(self, i: int) -> list[tuple[int, int, str]]:
        t = self._pointer_type(i + 2, auto=False)
        if t is None or self.text(t.after) not in (">", ">>"):
            return []
        if self.text(i) == "const_cast":  # the type stays: lg::const_checked returns a checked pointer for one
            return [(self.toks[i].start, self.toks[i].end, "lg::const_checked")]
        return self._edit(t)
