"""json.stream.parsers: each leaf parser against json.dumps / json.loads and brute force."""

from __future__ import annotations

import itertools
import json

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from genlm_lab.control.constraint.json.stream import (
    FLOAT_PARSER,
    INTEGER_PARSER,
    STRING_LITERAL_PARSER,
    WHITESPACE_PARSER,
    ConstParser,
    FixedSetParser,
    Incomplete,
    Input,
    ParseError,
    RegexParser,
    StringLiteralMatchingPatternParser,
)
from genlm_lab.control.potential import AsyncSource


class Pieces(AsyncSource):
    def __init__(self, pieces):
        self.pieces = iter(pieces)

    async def more(self):
        try:
            return next(self.pieces)
        except StopIteration:
            raise StopAsyncIteration from None


async def outcome(parser, text):
    """The value, or the class of the error, of parsing `text`."""
    try:
        return await parser.parse_string(text)
    except (ParseError, Incomplete) as error:
        return type(error)


numbers = st.integers(-(10**20), 10**20) | st.floats(allow_nan=False, allow_infinity=False)


@settings(max_examples=80, deadline=None)
@given(numbers, st.integers(0, 30))
async def test_float_parser_reads_what_json_dumps_wrote_and_waits_on_its_prefixes(x, cut):
    text = json.dumps(x)
    assert await FLOAT_PARSER.parse_string(text) == json.loads(text)
    split = Input(Pieces([text[:cut], text[cut:]]))
    assert await split.parse(FLOAT_PARSER) == json.loads(text)
    prefix = text[: min(cut, len(text) - 1)]
    got = await outcome(FLOAT_PARSER, prefix)  # a prefix never fails: it waits or is a number
    assert got is Incomplete or got == json.loads(prefix)


@pytest.mark.parametrize(
    "text,want",
    [("0.", Incomplete), ("", Incomplete), ("-", Incomplete), ("1e+", Incomplete)]
    + [("12", 12), ("1.5]", 1.5), ("-0", 0), ("01", 0), ("x", ParseError), ("-x", ParseError)],
)
async def test_float_parser_on_edges(text, want):
    assert await outcome(FLOAT_PARSER, text) == want


@pytest.mark.parametrize(
    "text,want",
    [("12", 12), ("1e5", 1e5), ("1E+2,", 100.0), ("-3]", -3)]
    + [("1.", ParseError), ("1.5", ParseError), ("1e-5", ParseError), ("1e-", ParseError)]
    + [("-", Incomplete), ("1e", Incomplete)],
)
async def test_integer_parser_refuses_a_fraction_as_soon_as_it_shows(text, want):
    assert await outcome(INTEGER_PARSER, text) == want


@settings(max_examples=80, deadline=None)
@given(st.text(max_size=12), st.booleans())
async def test_string_literal_reads_what_json_dumps_wrote_and_waits_on_prefixes(s, ascii):
    text = json.dumps(s, ensure_ascii=ascii)
    assert await STRING_LITERAL_PARSER.parse_string(text) == s
    outcomes = {await outcome(STRING_LITERAL_PARSER, text[:i]) for i in range(len(text))}
    assert outcomes == {Incomplete}


@pytest.mark.parametrize("text", ['"a\nb"', '"\\0"', '"\\x41"', "'a'", '"\\ud801"'])
async def test_string_literal_refuses_what_json_forbids(text):
    assert await outcome(STRING_LITERAL_PARSER, text) is ParseError


#: A pattern, and the alphabet over which brute force decides it.
PATTERNS = [("^[ab]{2}c$", "abc"), ("b+", "ab"), ("^a*$", "ab"), ("ab$", "abx")]


@pytest.mark.parametrize("pattern,alphabet", PATTERNS)
async def test_pattern_parser_refuses_a_prefix_exactly_when_no_extension_matches(pattern, alphabet):
    parser = StringLiteralMatchingPatternParser(pattern)
    strings = ["".join(p) for n in range(5) for p in itertools.product(alphabet, repeat=n)]
    matching = {s for s in strings if regex.search(pattern, s)}
    checked = 0
    for s in (s for s in strings if len(s) <= 2):  # every extension needed is in `strings`
        extends = any(m.startswith(s) for m in matching)
        got = await outcome(parser, json.dumps(s)[:-1])
        assert got is (Incomplete if extends else ParseError), (pattern, s)
        whole = await outcome(parser, json.dumps(s))
        assert whole == (s if s in matching else ParseError)
        checked += 1
    assert checked == sum(len(alphabet) ** n for n in range(3))


async def test_pattern_parser_waits_through_escapes_and_surrogate_pairs():
    parser = StringLiteralMatchingPatternParser("^[A-Z]{2}\\d{5}$")
    literal = json.dumps("AA\U000104a00000")  # an Osmanya digit: a surrogate pair in ASCII JSON
    assert await parser.parse_string(literal) == "AA\U000104a00000"
    assert {await outcome(parser, literal[:i]) for i in range(len(literal))} == {Incomplete}
    assert await outcome(parser, json.dumps("AA\ud801")) is ParseError
    split = Input(Pieces(['"\\', '""']))
    assert await split.parse(StringLiteralMatchingPatternParser('"*')) == '"'


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.text("ab", max_size=3), min_size=1, max_size=4, unique=True),
    st.text("abc", max_size=4),
)
async def test_fixed_set_parser_takes_the_longest_value_the_text_starts_with(values, text):
    got = await outcome(FixedSetParser(values), text)
    starts = [v for v in values if text.startswith(v)]
    if starts:
        assert got == max(starts, key=len)
    elif any(v.startswith(text) for v in values):
        assert got is Incomplete
    else:
        assert got is ParseError


def test_fixed_set_parser_needs_a_value():
    with pytest.raises(ValueError, match="at least one"):
        FixedSetParser([])


async def test_alternatives_first_success_wins_else_incomplete_before_error():
    null, true = RegexParser("null"), RegexParser("true")
    assert await (null // true).parse_string("true") == "true"
    assert await outcome(null // true, "tr") is Incomplete
    assert await outcome(null // true, "x") is ParseError
    assert await outcome(null.map(len).filter(lambda n: n > 4), "null") is ParseError


async def test_const_parser_takes_leading_whitespace_and_fails_at_the_first_wrong_character():
    parser = ConstParser("Hello world")
    assert await parser.parse_string(' "Hello world"') == "Hello world"
    assert await outcome(parser, '"Hello') is Incomplete
    assert await outcome(parser, '"Hi') is ParseError


async def test_whitespace_parser_refuses_unicode_spaces():
    assert await WHITESPACE_PARSER.parse_string(" \n\t") == " \n\t"
    assert await outcome(WHITESPACE_PARSER, "\u3000") is ParseError
