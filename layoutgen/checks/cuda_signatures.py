"""The ``__global__`` functions of a ``.cu`` file and their parameters, read without a compiler.

Enough C++ for kernel signatures as teams write them: comments and literals blanked (:func:`.cxx.scan`),
object-like macros expanded (``#define F 40``, ``#define KERNEL extern "C" __global__``), ``template <...>``,
``__launch_bounds__(...)``, ``extern "C"`` (on the function or a block), namespaces, default arguments, several
kernels a file. Function-like macros and conditional compilation are not evaluated: a signature built by them
is read as written. ``layoutgen import`` lists what this finds; an ``ExistingKernel``'s declaration is
compared with it (LG232..LG238).

Why not libclang: it is a 40 MB wheel and needs the CUDA headers to parse a ``.cu`` file as CUDA; the
signatures of kernels need none of that, and the lint already reads C++ this way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .cxx import scan
from .text_offsets import closing, line_at, line_starts, split_params

# `extern "C"` is replaced by this mark (padded to its length) before the literals are blanked, so that the
# blanked text still says which functions have C linkage.
_EXTERN_C = re.compile(r'\bextern[ \t]*"C"')
_MARK = "__lgXC"
_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)(\(?)(.*)$")
_NAME = re.compile(r"[A-Za-z_]\w*")
_GLOBAL = re.compile(r"\b__global__\b")
_NAMESPACE = re.compile(r"\bnamespace\s+([A-Za-z_]\w*(?:\s*::\s*[A-Za-z_]\w*)*)\s*\{")
_QUALIFIERS = {"const", "volatile", "__restrict__", "__restrict", "restrict", "struct", "class", "typename"}


@dataclass(frozen=True)
class GlobalParam:
    """One parameter of a ``__global__``: its type as written (macros expanded), its name, what it points to."""

    type_text: str  # "const float *"
    name: str  # "" where unnamed
    pointer: bool  # a pointer (or an array parameter `float x[]`)
    const: bool  # a pointer to const elements (`const float*`); for a value: a const value
    base: str  # the element (or value) type, qualifiers dropped: "float", "unsigned int", "int64_t"
    default: str | None  # the default argument's text, or None
    line: int  # 1-based

    @property
    def text(self) -> str:
        """``const float* x``: the parameter as a message shows it."""
        return f"{self.type_text} {self.name}".strip()


@dataclass(frozen=True)
class GlobalKernel:
    """A ``__global__`` function of a file."""

    name: str
    namespace: tuple[str, ...]  # the enclosing namespaces, outermost first
    line: int  # the line of its name
    params: tuple[GlobalParam, ...]
    template: str | None  # the template parameter list's text (`int N, typename T`), or None
    extern_c: bool
    defined: bool  # a definition (a body follows), not only a declaration

    @property
    def qualified(self) -> str:
        return "::".join((*self.namespace, self.name))


def _macros(lines: list[str]) -> dict[str, str]:
    """Object-like macros of the file (the last definition wins), by name; bodies as blanked code."""
    macros: dict[str, str] = {}
    i = 0
    while i < len(lines):
        m = _DEFINE.match(lines[i])
        body_lines = [m.group(3)] if m else []
        while lines[i].rstrip().endswith("\\") and i + 1 < len(lines):  # a continued directive
            i += 1
            if m:
                body_lines[-1] = body_lines[-1].rstrip()[:-1]
                body_lines.append(lines[i])
        if m and not m.group(2):  # `#define F(x)`: a function-like macro, not expanded
            macros[m.group(1)] = " ".join(body_lines).strip()
        i += 1
    return macros


def _expand(line: str, macros: dict[str, str]) -> str:
    """``line`` with its object-like macros replaced by their bodies, nested ones too (not recursively into
    themselves)."""
    for _ in range(16):
        changed = False

        def sub(m: re.Match[str]) -> str:
            nonlocal changed
            body = macros.get(m.group(0))
            if body is None or m.group(0) in body.split():
                return m.group(0)
            changed = True
            return body

        line = _NAME.sub(sub, line)
        if not changed:
            break
    return line


def _code_lines(text: str) -> list[str]:
    """The file's code, one entry per line: comments and literals blanked, preprocessor lines emptied, macros
    expanded (line numbers kept; columns not)."""
    marked = _EXTERN_C.sub(lambda m: _MARK.ljust(len(m.group(0))), text)
    lines = list(scan(marked, jinja=False).code)
    macros = _macros(lines)
    out: list[str] = []
    directive = False
    for line in lines:
        if directive or line.lstrip().startswith("#"):
            directive = line.rstrip().endswith("\\")
            out.append("")
            continue
        out.append(_expand(line, macros))
    return out


def _param(text: str, line: int) -> GlobalParam:
    declared, _, default = text.partition("=")
    declared = re.sub(r"\b__attribute__\s*\(\(.*?\)\)", " ", declared)
    array = "[" in declared
    declared = re.sub(r"\[.*?\]", " ", declared)
    tokens = re.findall(r"[A-Za-z_]\w*|::|\*|&|<[^<>]*>|\S", declared)
    name = ""
    if len(tokens) >= 2 and _NAME.fullmatch(tokens[-1]) and tokens[-1] not in _QUALIFIERS and tokens[-2] != "::":
        name = tokens.pop()
    pointer = array or "*" in tokens
    first_star = tokens.index("*") if "*" in tokens else len(tokens)
    const = "const" in tokens[:first_star] or (array and "const" in tokens)
    base = " ".join(t for t in tokens[:first_star] if t not in _QUALIFIERS and t != "&").replace(" :: ", "::")
    type_text = " ".join(tokens).replace(" *", "*").replace(" :: ", "::")
    if array:
        type_text += "*"
    return GlobalParam(type_text, name, pointer, const, base, default.strip() or None, line)


def _scopes(code: str) -> tuple[list[tuple[int, int, str]], list[tuple[int, int]]]:
    """The namespaces (start, end, name) and ``extern "C" { }`` blocks (start, end) of the code."""
    spaces = []
    for m in _NAMESPACE.finditer(code):
        brace = m.end() - 1
        spaces.append((brace, closing(code, brace, "{}", missing=-1), re.sub(r"\s+", "", m.group(1))))
    blocks = []
    for m in re.finditer(re.escape(_MARK) + r"\s*\{", code):
        brace = m.end() - 1
        blocks.append((brace, closing(code, brace, "{}", missing=-1)))
    return spaces, blocks


def read_kernels(text: str) -> tuple[GlobalKernel, ...]:
    """Every ``__global__`` function ``text`` defines or declares, in file order; a declaration that a
    definition follows is given once, as the definition."""
    lines = _code_lines(text)
    code = "\n".join(lines)
    starts = line_starts(lines)

    def line_of(index: int) -> int:
        return line_at(starts, index) + 1  # 1-based

    spaces, blocks = _scopes(code)
    found: dict[str, GlobalKernel] = {}
    order: list[str] = []
    for m in _GLOBAL.finditer(code):
        head = code[m.end() :]
        # the declarator up to the parameter list: skip `__launch_bounds__(...)` and other attribute calls
        i, name, name_at = 0, "", -1
        while i < len(head):
            ch = head[i]
            if ch.isspace():
                i += 1
                continue
            word = _NAME.match(head, i)
            if word:
                after = head[word.end() :].lstrip()
                if after.startswith("(") and word.group(0) in ("__launch_bounds__", "__attribute__",
                                                                 "__maxnreg__", "__cluster_dims__"):
                    close = closing(head, head.index("(", word.end()), "()", missing=-1)
                    i = close + 1 if close > 0 else len(head)
                    continue
                name, name_at = word.group(0), m.end() + word.start()
                i = word.end()
                continue
            if ch == "(":
                break
            if ch in ";{}":
                name = ""
                break
            i += 1
        if not name or i >= len(head):
            continue
        open_at = m.end() + i
        close = closing(code, open_at, "()", missing=-1)
        if close < 0:
            continue
        rest = code[close + 1 :].lstrip()
        params_text = code[open_at + 1 : close]
        params = tuple(_param(p, line_of(open_at + 1 + offset + len(p) - len(p.lstrip())))
                       for p, offset in split_params(params_text, shifts=True)
                       if p.strip() and p.strip() != "void")
        before = code[: m.start()].rstrip()
        extern_c = before.endswith(_MARK) or any(s < m.start() < e for s, e in blocks)
        if extern_c:
            before = before[: -len(_MARK)].rstrip() if before.endswith(_MARK) else before
        for qualifier in ("static", "inline", "__forceinline__", "__noinline__"):
            if before.endswith(qualifier):
                before = before[: -len(qualifier)].rstrip()
        template = None
        if before.endswith(">"):
            depth, j = 0, len(before) - 1
            while j >= 0:
                depth += {">": 1, "<": -1}.get(before[j], 0)
                if depth == 0:
                    break
                j -= 1
            if before[:j].rstrip().endswith("template"):
                template = " ".join(before[j + 1 : -1].split())
        namespace = tuple(n for s, e, names in spaces if s < m.start() < e for n in names.split("::"))
        kernel = GlobalKernel(name, namespace, line_of(name_at), params, template, extern_c, rest.startswith("{"))
        key = kernel.qualified
        if key not in found:
            order.append(key)
            found[key] = kernel
        elif kernel.defined or not found[key].defined:
            found[key] = kernel
    return tuple(found[k] for k in order)


#: Integer types a kernel parameter may have: bits and signedness (LP64, as NVRTC and nvcc on Linux).
INTEGER_TYPES: dict[str, tuple[int, bool]] = {
    "bool": (1, False), "char": (8, True), "signed char": (8, True), "unsigned char": (8, False),
    "short": (16, True), "short int": (16, True), "signed short": (16, True), "unsigned short": (16, False),
    "unsigned short int": (16, False), "int": (32, True), "signed": (32, True), "signed int": (32, True),
    "unsigned": (32, False), "unsigned int": (32, False), "long": (64, True), "long int": (64, True),
    "signed long": (64, True), "unsigned long": (64, False), "unsigned long int": (64, False),
    "long long": (64, True), "long long int": (64, True), "signed long long": (64, True),
    "unsigned long long": (64, False), "unsigned long long int": (64, False),
    "int8_t": (8, True), "uint8_t": (8, False), "int16_t": (16, True), "uint16_t": (16, False),
    "int32_t": (32, True), "uint32_t": (32, False), "int64_t": (64, True), "uint64_t": (64, False),
    "size_t": (64, False), "ptrdiff_t": (64, True), "intptr_t": (64, True), "uintptr_t": (64, False),
    "index_t": (64, True),
}
#: Floating-point types a kernel parameter may have.
FLOAT_TYPES = frozenset({"float", "double", "__half", "half", "__nv_bfloat16", "nv_bfloat16"})


def plain_type(base: str) -> str:
    """``std::int64_t`` -> ``int64_t``: the name the tables above use."""
    return base[5:] if base.startswith("std::") else base
