"""One escaper per place where spec text lands in a generated file.

A spec says things in free text (a kernel's ``doc``) and in paths (the spec
module, each template, each declaration's file): any character can be in
them. Each function below turns such text into something that is inert where
it lands, and is the only way text reaches a generated file (the skeleton
templates refuse a string that did not pass through one, see
:mod:`layoutgen.codegen.env`):

==================  =====================================================
``py_literal``      a Python literal (``repr``): strings, numbers, tuples
``py_docstring``    the inside of a ``\"\"\"`` docstring: reads back as the text
``py_docline``      a name or path on one line of a docstring
``py_comment``      the text of a ``#`` comment
``cpp_comment``     the text of a ``//`` comment
``c_string``        a C string literal, quotes included: ``#line`` paths
``c_include``       the name in ``#include "..."``: a generated header
``c_ident``         a C/C++ or Python identifier, checked
``cpp_code``        C++ that the models assemble from identifiers and numbers
==================  =====================================================

Each returns :class:`Escaped`, the one type the skeletons place. The
functions that check rather than escape (``c_include``, ``c_ident``,
``cpp_code``) raise ``ValueError``: their input comes from names validated at
declaration, so a failure is layoutgen's bug, never the user's.
"""

from __future__ import annotations

import re

__all__ = [
    "Escaped", "c_ident", "c_include", "c_string", "cpp_code", "cpp_comment", "py_comment", "py_docline", "py_docstring",
    "py_literal",
]


class Escaped(str):
    """Text made safe for the place it is written to, by one of this module's functions."""

    __slots__ = ()


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_HEADER = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.]*\Z")
# Generated C++ fragments are made of identifiers, numbers, operators and brackets: never a quote, a
# backslash, a `#`, a comment or a line break, so nothing in one can start a directive or end a line.
_CODE = re.compile(r"[A-Za-z0-9_ ,.*+\-()<>:{}\[\]]*\Z")
_CONTROL_NAMES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _visible(ch: str) -> str:
    """``ch`` as Python would escape it in a string: ``\\n``, ``\\x00``, ``\\u2028``, ``\\udcff``."""
    if ch in _CONTROL_NAMES:
        return _CONTROL_NAMES[ch]
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _line_text(text: str) -> str:
    """``text`` on one line: backslashes doubled, every character that is not printable escaped.

    No line break survives (``\\n``, ``\\r``, ``\\u2028`` and the other separators are not printable),
    nor a character that cannot be written as UTF-8 (a lone surrogate, from a file name that is not UTF-8).
    """
    return "".join("\\\\" if ch == "\\" else ch if ch.isprintable() else _visible(ch) for ch in text)


def cpp_comment(text: object) -> Escaped:
    """``text`` for a ``//`` comment: one line that cannot end it early or continue it.

    A backslash at the end of a line would splice the next line into the comment, so a final one is
    written ``\\x5c``.
    """
    line = _line_text(str(text))
    return Escaped(line[:-2] + "\\x5c" if line.endswith("\\\\") else line)


# Python reads `coding:` or `coding=` in a comment on the first two lines as the file's encoding.
_CODING = re.compile(r"(coding)([:=])")


def py_comment(text: object) -> Escaped:
    """``text`` for a ``#`` comment: one line, and never an encoding declaration (``coding=...``)."""
    return Escaped(_CODING.sub(lambda m: m[1] + _visible(m[2]), _line_text(str(text))))


def _quotes_broken(pieces: list[str]) -> str:
    """``pieces`` joined, with each quote that follows a quote, or ends the text, escaped: no ``\"\"\"``."""
    out: list[str] = []
    for piece in pieces:
        out.append('\\"' if piece == '"' and out and out[-1].endswith('"') else piece)
    if out and out[-1] == '"':
        out[-1] = '\\"'
    return "".join(out)


def py_docstring(text: object) -> Escaped:
    """``text`` for the inside of a ``\"\"\"...\"\"\"`` literal, so that the literal's value is ``text``.

    Backslashes are doubled (``\\N``, ``\\x``, ``\\u`` stay text), line breaks stay (a docstring is
    read on several lines), every other character that is not printable is escaped (a NUL, a tab,
    ``\\r``, which Python would read as a line break), and a quote that follows a quote, or ends the
    text, is escaped: no ``\"\"\"`` can close the literal early.
    """
    return Escaped(_quotes_broken([
        "\\\\" if ch == "\\" else ch if ch == "\n" or ch.isprintable() else _visible(ch) for ch in str(text)
    ]))


def py_docline(text: object) -> Escaped:
    """``text`` (a name or a path) on one line of a docstring: as :func:`py_docstring`, line breaks escaped."""
    return Escaped(_quotes_broken(list(_line_text(str(text)).replace("\\", "\\\\"))))


_LITERALS = (str, int, type(None))


def py_literal(value: object) -> Escaped:
    """A Python literal of ``value``: a string, an integer, None, or a tuple or list of them."""
    def check(v: object) -> None:
        if isinstance(v, (tuple, list)):
            for item in v:
                check(item)
        elif not isinstance(v, _LITERALS):
            raise ValueError(f"no Python literal for {type(v).__name__} {v!r}")

    check(value)
    return Escaped(repr(value))


def c_string(text: object) -> Escaped:
    """A C string literal of ``text``, quotes included: ``"examples/k.cu.j2"``.

    Quotes and backslashes are escaped; every character that is not printable becomes octal
    escapes of its UTF-8 bytes (three digits: a hex escape would run into the digits after it),
    and a lone surrogate (one byte of a file name that is not UTF-8) the octal escape of that byte.
    """
    out: list[str] = []
    for ch in str(text):
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch.isprintable():
            out.append(ch)
        else:
            try:
                data = ch.encode("utf-8", "surrogateescape")
            except UnicodeEncodeError:  # a lone surrogate that stands for no byte: its UTF-16 code unit
                data = ch.encode("utf-8", "surrogatepass")
            out.extend(f"\\{byte:03o}" for byte in data)
    return Escaped('"' + "".join(out) + '"')


def c_include(name: object) -> Escaped:
    """The file name of a generated header, checked: letters, digits, ``_`` and dots only."""
    text = str(name)
    if not _HEADER.match(text):
        raise ValueError(f"a generated header's name must be letters, digits, `_` and dots, got {text!r}")
    return Escaped(text)


def c_ident(name: object) -> Escaped:
    """An identifier, checked: names reach generated code only after :func:`~layoutgen.schema.names.name_problem`."""
    text = str(name)
    if not _IDENTIFIER.match(text):
        raise ValueError(f"a generated identifier must be a C identifier, got {text!r}")
    return Escaped(text)


def cpp_code(code: object) -> Escaped:
    """A fragment of generated C++, checked: no quote, backslash, ``#``, comment or line break."""
    text = str(code)
    if not _CODE.match(text):
        raise ValueError(f"generated C++ must be identifiers, numbers and operators on one line, got {text!r}")
    return Escaped(text)
