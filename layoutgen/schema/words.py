"""Counts and articles in messages: ``1 column``, ``2 columns``, ``an f32 view``.

Every message that puts a number before a noun, or ``a``/``an`` before a
name, builds those words here, so the grammar is right for 0, 1 and many in
one place instead of at each message ("1 columns", "0 spec(s)", "a f32").
"""

from __future__ import annotations

import re

#: Letters whose name starts with a vowel sound ("eff", "ell", "ess"): an f32, an sm_90, an LG201.
_VOWEL_LETTERS = frozenset("aefhilmnorsx")
#: Words that start with a vowel letter but a consonant sound (a unit, a one-line doc).
_CONSONANT_SOUND = re.compile(r"(?:uni|use|usu|uti|ure|one\b|once\b)", re.I)
#: A token read letter by letter: dtype, arch and code names (f32, bf16, u8, sm_90, LG201), and initialisms.
_SPELLED = re.compile(r"[A-Za-z]{1,3}_?\d|[A-Z]{2,}\b|[A-Za-z](?![A-Za-z])")


def plural_noun(count: object, noun: str, nouns: str | None = None) -> str:
    """``noun`` for a count of 1, otherwise its plural: ``nouns`` if given, else the regular one
    (column -> columns, entry -> entries, launch -> launches). ``count`` may be a symbolic size or dim
    (``D*48``, ``K``): counted as it prints, so only one that prints as ``1`` is singular."""
    if str(count) == "1":
        return noun
    if nouns is not None:
        return nouns
    if re.search(r"[^aeiou]y$", noun):
        return noun[:-1] + "ies"
    if re.search(r"(?:s|x|z|ch|sh)$", noun):
        return noun + "es"
    return noun + "s"


def plural(count: object, noun: str, nouns: str | None = None) -> str:
    """``count`` and the noun that agrees with it: ``0 columns``, ``1 column``, ``2 columns``."""
    return f"{count} {plural_noun(count, noun, nouns)}"


def article(word: str) -> str:
    """``a`` or ``an``, as ``word`` is read aloud: an f32, a bf16, a u8, an 8-byte, an output, a unit."""
    text = word.lstrip("`'\"([")
    if not text:
        return "a"
    if text[0].isdigit():  # eight, eleven, eighteen (thousand ...) start with a vowel sound
        digits = re.match(r"\d+", text)
        number = digits.group(0) if digits else text
        return "an" if number.startswith("8") or (number[:2] in ("11", "18") and len(number) % 3 == 2) else "a"
    if _CONSONANT_SOUND.match(text):
        return "a"
    if _SPELLED.match(text):
        return "an" if text[0].lower() in _VOWEL_LETTERS else "a"
    return "an" if text[0].lower() in "aeiou" else "a"


def with_article(word: str) -> str:
    """``word`` after its article: ``an f32``, ``a writable``."""
    return f"{article(word)} {word}"
