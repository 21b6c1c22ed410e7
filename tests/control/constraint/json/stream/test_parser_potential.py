"""json.stream.parser_potential: a streaming parser as a constraint over bytes."""

from __future__ import annotations

import math

import pytest

from genlm_lab.control.constraint.json.stream import (
    Incomplete,
    Input,
    ParseError,
    ParserPotential,
    TrivialSource,
    json_schema_parser,
)

SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "string", "pattern": "^[0-9]+$"}, "b": {"type": "boolean"}},
    "required": ["a"],
}
TEXTS = [
    b'{"a": "12", "b": true}',
    b'{ "a" : "1"}',
    b'{"a": "x"}',
    b'{"b": false}',
    b'{"a": "1"} x',
]


async def parse_outcome(text: bytes):
    """The parser's verdict on `text`, with anything but whitespace after the document a ParseError."""
    reading = Input(TrivialSource(text.decode()))
    try:
        await reading.parse(json_schema_parser(SCHEMA))
    except (ParseError, Incomplete) as error:
        return type(error)
    return "ok" if not reading.peek().strip() else ParseError


@pytest.mark.parametrize("text", TEXTS)
async def test_prefix_weights_agree_with_the_parser_on_every_prefix(text):
    potential = ParserPotential(json_schema_parser(SCHEMA))
    for i in range(len(text) + 1):
        refused = await parse_outcome(text[:i]) is ParseError
        assert (await potential.prefix(text[:i]) == -math.inf) is refused
    whole = await parse_outcome(text) == "ok"
    assert (await potential.complete(text) == 0.0) is whole
    await potential.cleanup()


async def test_token_by_token_extension_reads_whitespace_split_between_tokens():
    potential = ParserPotential(json_schema_parser(SCHEMA))
    tokens = [b"{", b"\n", b"  ", b' "a"', b":", b" ", b'"7"', b"\n", b"}"]
    context = b""
    for token in tokens:
        context += token
        assert await potential.prefix(context) == 0.0
    assert await potential.complete(context) == 0.0
    assert await potential.prefix(b'{"a": "7", "c') == -math.inf
    await potential.cleanup()
