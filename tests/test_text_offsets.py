"""The line of an offset and the bracket that closes another, in a body's joined lines: one implementation
(layoutgen/checks/text_offsets.py) for the barrier check and the helper reader, held to what they mean."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from layoutgen.checks.text_offsets import closing, line_at, line_starts

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
