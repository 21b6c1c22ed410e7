"""json.stream.text_input: UTF-8 re-chunking, sources, and the reading position."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genlm_lab.control.constraint.json.stream import (
    Incomplete,
    Input,
    ParseError,
    StringSource,
    TrivialSource,
    chunk_to_complete_utf8,
)
from genlm_lab.control.potential import AsyncSource


class Pieces(AsyncSource):
    """A source of fixed pieces that counts how many were asked for."""

    def __init__(self, pieces):
        self.pieces = list(pieces)
        self.pulled = 0

    async def more(self):
        if self.pulled == len(self.pieces):
            raise StopAsyncIteration
        self.pulled += 1
        return self.pieces[self.pulled - 1]


@st.composite
def split_bytes(draw):
    data = draw(st.text(min_size=1, max_size=30)).encode("utf-8")
    cuts = sorted(draw(st.sets(st.integers(1, max(1, len(data) - 1)), max_size=8)) | {0, len(data)})
    return data, [data[a:b] for a, b in zip(cuts, cuts[1:], strict=False) if b > a]


@settings(max_examples=60, deadline=None)
@given(split_bytes())
def test_chunk_to_complete_utf8_rejoins_into_whole_characters(case):
    data, blocks = case
    out = list(chunk_to_complete_utf8(blocks))
    assert b"".join(out) == data
    assert all(block.decode("utf-8") for block in out)
    assert len(out) <= len(blocks)


@pytest.mark.parametrize("bad", [b"\xc0", b"\xe3\x86\x8c\x80", b"ok\xff"])
def test_chunk_to_complete_utf8_raises_at_the_bad_block_not_later(bad):
    pulled = []

    def blocks():
        pulled.append(1)
        yield bad
        pulled.append(2)
        yield b"never read"

    with pytest.raises(UnicodeDecodeError):
        list(chunk_to_complete_utf8(blocks()))
    assert pulled == [1]


def test_chunk_to_complete_utf8_raises_on_an_unfinished_last_character():
    with pytest.raises(UnicodeDecodeError):
        list(chunk_to_complete_utf8([b"a\xe2\x98"]))


@settings(max_examples=60, deadline=None)
@given(split_bytes())
async def test_string_source_decodes_what_its_byte_source_sends(case):
    data, blocks = case
    source = StringSource(Pieces(blocks))
    texts = []
    with pytest.raises(StopAsyncIteration):
        while True:
            texts.append(await source.more())
    assert "".join(texts) == data.decode("utf-8")
    assert all(texts)


async def test_expect_fails_at_the_first_wrong_character_before_the_rest_arrives():
    source = Pieces(["tr", "x", "ue"])
    text = Input(source)
    with pytest.raises(ParseError, match="'u'"):
        await text.expect("true")
    assert source.pulled == 2
    assert text.index == 3  # expect itself reads; Input.parse() would restore the position


async def test_parse_restores_the_position_on_an_error_and_index_moves_forward_only():
    text = Input(TrivialSource("abc"))
    assert await text.read(2) == "ab"
    with text.resetting_index():
        assert await text.read(1) == "c"
    assert text.index == 2
    with pytest.raises(Incomplete):
        with text.preserving_index():
            await text.read(2)
    assert text.index == 2
    with pytest.raises(ValueError, match="forward"):
        text.index = 1
    assert text.peek() == "c" and text.text == "abc"


async def test_read_pattern_waits_while_the_match_may_go_on():
    import regex

    source = Pieces(["nu", "ll", "!"])
    text = Input(source)
    assert await text.read_pattern(regex.compile("null")) == "null"
    assert source.pulled == 2
    with pytest.raises(ParseError):
        await Input(TrivialSource("nx")).read_pattern(regex.compile("null"))
    with pytest.raises(Incomplete):
        await Input(TrivialSource("nu")).read_pattern(regex.compile("null"))


async def test_whitespace_split_between_pieces_is_read_as_one_run():
    text = Input(Pieces([" ", "\n ", " ", "x"]))
    assert await text.read_whitespace() == " \n  "
    assert await text.current_char() == "x"
    with pytest.raises(ParseError, match="not JSON whitespace"):
        await Input(TrivialSource(" \u3000")).read_whitespace()
