"""The line of an offset, the bracket that closes another and a parameter list's top-level commas, in a body's
joined lines: one implementation (layoutgen/checks/text_offsets.py) for the barrier check, the helper reader,
the signature reader, the raw-kernel lint and the source-kernel entry reader, held to what they mean."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from layoutgen.checks.text_offsets import closing, line_at, line_starts, split_params

_LINES = st.lists(st.text(alphabet="ab(){};\t ", max_size=12), min_size=1, max_size=8)


@settings(max_examples=200, deadline=None)
@given(lines=_LINES, data=st.data())
def test_the_line_of_every_offset_is_the_number_of_newlines_before_it(lines: list[str], data: st.DataObject) -> None:
    text = "\n".join(lines)
    at = data.draw(st.integers(0, len(text)))
    starts = line_starts(lines)
    assert starts[-1] == len(text) + 1
    assert line_at(starts, at) == text.count("\n", 0, at)


@settings(max_examples=200, deadline=None)
@given(lines=_LINES, pair=st.sampled_from(["()", "{}"]), data=st.data())
def test_the_closing_bracket_is_the_first_that_balances_the_opening_one(lines: list[str], pair: str,
                                                                         data: st.DataObject) -> None:
    text = "\n".join(lines)
    opens = [n for n, ch in enumerate(text) if ch == pair[0]]
    at = data.draw(st.sampled_from(opens)) if opens else 0
    end = closing(text, at, pair)
    depth = [text[at : n + 1].count(pair[0]) - text[at : n + 1].count(pair[1]) for n in range(at, len(text))]
    balanced = [at + k for k, d in enumerate(depth) if d == 0 and text[at + k] == pair[1]]
    assert end == (balanced[0] if opens and balanced else len(text) - 1)


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet="ab(){}\n", max_size=30), pair=st.sampled_from(["()", "{}"]), data=st.data())
def test_an_unclosed_bracket_is_the_missing_value_where_one_is_given(text: str, pair: str,
                                                                     data: st.DataObject) -> None:
    at = data.draw(st.integers(0, max(len(text) - 1, 0)))
    end = closing(text, at, pair)
    found = 0 <= end < len(text) and text[end] == pair[1] and \
        text[at : end + 1].count(pair[0]) == text[at : end + 1].count(pair[1])
    assert closing(text, at, pair, missing=-1) == (end if found else -1)


def _depths(text: str, shifts: bool) -> list[int | None]:
    """The bracket depth before each character; None for the characters of a shift operator (``shifts``)."""
    out: list[int | None] = []
    depth, n = 0, 0
    while n < len(text):
        if shifts and text[n : n + 2] in ("<<", ">>"):
            out += [None, None]
            n += 2
            continue
        out.append(depth)
        depth += (text[n] in "([{<") - (text[n] in ")]}>")
        n += 1
    return out


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet="ab,<>()[]{} ", max_size=30), shifts=st.booleans())
def test_parameters_are_split_at_exactly_the_commas_outside_brackets(text: str, shifts: bool) -> None:
    parts = split_params(text, shifts)
    assert ",".join(part for part, _ in parts) == text
    assert all(text[at : at + len(part)] == part for part, at in parts)
    depths = _depths(text, shifts)
    cuts = [at - 1 for _, at in parts[1:]]
    assert cuts == [n for n, ch in enumerate(text) if ch == "," and depths[n] == 0]


def test_shifts_are_operators_in_a_signature_and_closers_in_a_template_argument() -> None:
    assert split_params("int n = 1 << 4, int m", shifts=True) == [("int n = 1 << 4", 0), (" int m", 15)]
    assert split_params("int n = 1 << 4, int m", shifts=False) == [("int n = 1 << 4, int m", 0)]
    assert split_params("Foo<Bar<int>> v, int m", shifts=False) == [("Foo<Bar<int>> v", 0), (" int m", 16)]
    assert split_params("", shifts=True) == [("", 0)]
    assert split_params("int a,", shifts=False) == [("int a", 0), ("", 6)]
