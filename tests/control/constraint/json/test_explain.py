"""`JsonSchema.explain`: why a document fails, with its JSON path and keyword, or where it stops."""

from __future__ import annotations

import json

import jsonschema
import pytest

from genlm_lab.control import JsonSchema

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "city": {"type": "string", "maxLength": 5},
        "rank": {"type": "integer"},
        "tags": {"type": "array", "items": {"type": "object"}},
        "odd key": {"type": "number"},
    },
    "required": ["name", "rank"],
}


@pytest.fixture(scope="module")
def js():
    return JsonSchema(SCHEMA)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ('{"name":"Al","rank":3}', None),
        ('{"name":"Al"}', "at $, keyword required: 'rank' is a required property"),
        ('{"name":"Al","city":"Pitcairn","rank":1}', "at $.city, keyword maxLength: "),
        ('{"name":"Al","rank":"x"}', "at $.rank, keyword type: 'x' is not of type 'integer'"),
        ('{"name":"A","rank":1,"tags":[{},3]}', "at $.tags[1], keyword type: 3 is not of type"),
        ('{"name":"A","rank":1,"odd key":"x"}', 'at $["odd key"], keyword type: '),
        ('{"name":"A","rank":1,"rank":2}', "the key 'rank' appears twice in one object"),
    ],
)
def test_a_finished_document_gets_jsonschemas_path_and_keyword(js, text, why):
    got = js.explain(text)
    if why is None:
        assert got is None and js.validate(text)
        return
    assert got.startswith(why), got
    assert not js.validate(text)


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('{"name":"Al', "inside a string at $.name"),
        ('{"na', "inside a key of the object at $"),
        ('{"name":"x","rank":', "after the key $.rank"),
        ('{"name":"x",', "inside the object at $"),
        ('{"name":"x","tags":[{},{"a":"b', "inside a string at $.tags[1].a"),
        ('{"name":"x","tags":[{},', "inside the array at $.tags, at item 1"),
        ('{"name":"x\\"y', "inside a string at $.name"),  # an escaped quote does not close it
        ("", "before the value at $"),
        ('{"name":"é'.encode()[:-1], "inside a string at $.name"),  # cut inside a character
    ],
)
def test_an_unfinished_document_says_where_it_stops(js, text, where):
    assert js.explain(text) == f"unfinished: {where}"


def test_the_path_of_a_schema_error_is_jsonschemas_own():
    js = JsonSchema(SCHEMA)
    doc = {"name": "A", "rank": 1, "tags": [{}, {}, 7]}
    error = jsonschema.exceptions.best_match(
        jsonschema.Draft202012Validator(SCHEMA).iter_errors(doc)
    )
    assert list(error.absolute_path) == ["tags", 2] and error.validator == "type"
    assert js.explain(json.dumps(doc)).startswith("at $.tags[2], keyword type: ")


def test_broken_json_names_the_place_it_breaks(js):
    got = js.explain('{"tags":[1 2]}')
    assert got.startswith("not JSON (inside the array at $.tags, at item 0): Expecting ','"), got
    assert js.explain(b'{"name":"\xff"}').startswith("not JSON: invalid UTF-8 at byte 9")
