"""json.reading: schema text, line and column of a JSON path, repeated keys."""

from __future__ import annotations

import json

import pytest

from genlm_lab.control import InvalidGrammar
from genlm_lab.control.constraint.json.reading import (
    RepeatedKey,
    key_positions,
    line_column,
    load_schema,
    resolve_pointer,
    unique_keys,
    validator_for,
)

TEXT = '{\n  "type": "object",\n  "properties": {\n    "a": {"type": "strin"},\n    "b": {"enum": [1, 2]}\n  }\n}'


def test_key_positions_point_at_each_key_in_the_text():
    found = key_positions(TEXT)
    for path in [("type",), ("properties",), ("properties", "a"), ("properties", "b")]:
        at = found[path]
        assert TEXT[at:].startswith(json.dumps(path[-1]))
    at = found[("properties", "b", "enum", 1)]
    assert TEXT[at] == "2"


def test_line_column_counts_from_one_and_falls_back_to_the_deepest_known_part():
    assert line_column(TEXT, ["properties", "a"]) == " (line 4, column 5)"
    assert line_column(TEXT, ["properties", "a", "missing"]) == " (line 4, column 5)"
    assert line_column("not json", ["x"]) == " (line 1, column 1)"  # the root


def test_load_schema_and_validator_name_where_the_schema_is_wrong():
    with pytest.raises(InvalidGrammar, match="line 1, column"):
        load_schema("{")
    with pytest.raises(InvalidGrammar, match="is an object"):
        load_schema("[1]")
    with pytest.raises(InvalidGrammar, match=r"properties/a/type \(line 4"):
        validator_for(json.loads(TEXT), TEXT)
    assert validator_for({"type": "string"}).is_valid("x")


def test_a_schema_the_metaschema_rejects_is_also_jsonschemas_schema_error():
    import pickle

    from jsonschema.exceptions import SchemaError

    from genlm_lab.control.constraint.json.reading import InvalidSchema

    with pytest.raises(SchemaError, match="type: 'float' is not valid") as caught:
        validator_for({"type": "float"})
    assert isinstance(caught.value, InvalidSchema) and isinstance(caught.value, InvalidGrammar)
    again = pickle.loads(pickle.dumps(caught.value))
    assert str(again) == str(caught.value) and type(again) is InvalidSchema


def test_unique_keys_refuses_a_key_written_twice():
    assert json.loads('{"a": 1, "b": 2}', object_pairs_hook=unique_keys) == {"a": 1, "b": 2}
    with pytest.raises(RepeatedKey) as caught:
        json.loads('{"a": 1, "a": 2}', object_pairs_hook=unique_keys)
    assert caught.value.args[0] == "a"


def test_resolve_pointer_reads_rfc6901_in_a_uri_fragment():
    root = {"$defs": {"a/b": {"type": "integer"}, "t~x": [{"type": "string"}], "sp ace": {}}}
    assert resolve_pointer(root, "#") is root
    assert resolve_pointer(root, "#/$defs/a~1b") == {"type": "integer"}
    assert resolve_pointer(root, "#/$defs/t~0x/0") == {"type": "string"}
    assert resolve_pointer(root, "#/$defs/sp%20ace") == {}
    # dangling, out of range, remote and anchors name nothing we can read
    for ref in ("#/$defs/nope", "#/$defs/t~0x/1", "other.json#/a", "#anchor"):
        assert resolve_pointer(root, ref) is None, ref
