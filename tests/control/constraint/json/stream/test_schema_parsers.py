"""json.stream.schema_parsers: documents read back as json.loads reads them; what a schema refuses."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genlm_lab.control.constraint.json.stream import (
    ARBITRARY_JSON,
    Incomplete,
    Input,
    ParseError,
    TrivialSource,
    json_schema_parser,
)

json_values = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)


async def outcome(parser, text):
    try:
        return await parser.parse_string(text)
    except (ParseError, Incomplete) as error:
        return type(error)


@settings(max_examples=60, deadline=None)
@given(json_values, st.sampled_from([None, 0, 2]), st.booleans())
async def test_arbitrary_json_reads_every_document_whole_and_only_waits_on_prefixes(
    value, indent, ascii
):
    text = json.dumps(value, indent=indent, ensure_ascii=ascii)
    reading = Input(TrivialSource(text))
    assert await ARBITRARY_JSON.parse(reading) == value
    assert reading.index == len(text)
    cut = len(text) // 2
    got = await outcome(ARBITRARY_JSON, text[:cut])
    assert got is Incomplete or got == json.loads(text[:cut])


PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "pattern": "^[A-Z]"},
        "age": {"type": "integer"},
        "tags": {"type": "array", "items": {"enum": ["a", "bc"]}},
    },
    "required": ["name"],
}


@pytest.mark.parametrize(
    "text,want",
    [
        ('{"name": "Ada", "age": 36}', {"name": "Ada", "age": 36}),
        ('{"tags": ["bc", "a"], "name": "B"}', {"tags": ["bc", "a"], "name": "B"}),
        ('{"age": 1}', ParseError),  # "name" is required
        ('{"name": "ada"', ParseError),  # the pattern fails before the closing quote
        ('{"nick', ParseError),  # not a listed key (additionalProperties defaults to off)
        ('{"name": "A", "name"', ParseError),  # a key twice
        ('{"age": 1.5', ParseError),  # an integer has no fraction
        ('{"tags": ["b"', ParseError),
        ('{"tags": ["b', Incomplete),
        ('{"name": "A",', Incomplete),
    ],
)
async def test_object_schema_refuses_as_soon_as_the_text_breaks_it(text, want):
    assert await outcome(json_schema_parser(PERSON), text) == want


async def test_additional_properties_reads_extra_values_with_its_schema():
    schema = {"type": "object", "additionalProperties": {"type": "integer"}}
    assert await outcome(json_schema_parser(schema), '{"x": 1, "y": 2}') == {"x": 1, "y": 2}
    assert await outcome(json_schema_parser(schema), '{"x": "1"') is ParseError
    empty = {"type": "object", "properties": {}, "additionalProperties": False}
    assert await outcome(json_schema_parser(empty), "{ }") == {}
    assert await outcome(json_schema_parser(empty), '{"') is ParseError


async def test_any_of_type_lists_and_numeric_enums():
    either = json_schema_parser({"anyOf": [{"type": "integer"}, {"type": "number"}]})
    assert [type(await either.parse_string(t)) for t in ("0", "0.5", "1e-5")] == [int, float, float]
    kinds = json_schema_parser({"type": ["string", "null"]})
    assert await outcome(kinds, '"x"') == "x" and await outcome(kinds, "null") is None
    assert await outcome(kinds, "1") is ParseError
    numbers = json_schema_parser({"enum": [1, 10, None]})
    assert await outcome(numbers, "10") == 10 and await outcome(numbers, "1") == 1
    words = json_schema_parser({"enum": ["two", "twin"]})
    assert await outcome(words, '"tw') is Incomplete
    assert await outcome(words, '"twa') is ParseError
    assert await outcome(json_schema_parser({"const": False}), " n") is ParseError
