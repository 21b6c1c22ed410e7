"""json.empty.why_empty: a schema is called empty only when no value fits (brute force)."""

from __future__ import annotations

import itertools
import random

import jsonschema
import pytest

from genlm_lab.control.constraint.json.empty import why_empty

V = jsonschema.Draft202012Validator


def empty(schema) -> str | None:
    return why_empty(schema, V(schema))


@pytest.mark.parametrize(
    ("schema", "where"),
    [
        ({"type": "string", "minLength": 1, "maxLength": 0}, "minLength 1 > maxLength 0"),
        ({"type": "integer", "minimum": 5, "maximum": 3}, "minimum 5 > maximum 3"),
        ({"allOf": [{"type": "string"}, {"type": "integer"}]}, "allOf branches share no type"),
        (
            {
                "type": "object",
                "properties": {"a": {"type": "string", "minLength": 1, "maxLength": 0}},
                "required": ["a"],
            },
            "properties/a: minLength 1 > maxLength 0",
        ),  # fmt: skip
        ({"enum": [1, 2], "type": "string"}, "enum has no value"),
        ({"type": "object", "required": ["x"], "additionalProperties": False}, "'x' is required"),
        ({"type": "array", "minItems": 1, "items": False}, "items: the schema false"),
        ({"anyOf": [False, {"not": {}}]}, "every anyOf branch is empty"),
        ({"type": "integer", "exclusiveMinimum": 1, "exclusiveMaximum": 2}, "no integer"),
    ],
)
def test_empty_schemas_name_the_path_and_keyword(schema, where):
    found = empty(schema)
    assert found is not None and where in found, found


@pytest.mark.parametrize(
    "schema",
    [
        True,
        {},
        # an optional property whose schema is empty: {} still fits
        {"type": "object", "properties": {"a": {"type": "string", "minLength": 1, "maxLength": 0}}},
        {"type": ["string", "null"], "minLength": 3, "maxLength": 1},  # null fits
        {"type": "number", "minimum": 1.2, "maximum": 1.8},
        {"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"},
        # the string bounds cross, the integer ones do not
        {"type": ["string", "integer"], "minLength": 2, "maxLength": 1, "minimum": 1},
    ],
)
def test_schemas_with_a_value_are_not_empty(schema):
    assert empty(schema) is None


def test_number_bounds_agree_with_brute_force():
    """Random bounds: empty iff no number on a fine grid (every bound is on it) validates."""
    rng = random.Random(0)
    grid = [i / 4 for i in range(-40, 41)]
    keys = ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"]
    for _ in range(400):
        schema = {"type": rng.choice(["integer", "number"])}
        for key in rng.sample(keys, rng.randint(1, 3)):
            schema[key] = rng.choice([-2, -1.5, -1, -0.5, 0, 0.5, 1, 1.25, 2])
        validator = V(schema)
        some = any(validator.is_valid(x) for x in grid if schema["type"] == "number"
                   or float(x).is_integer())  # fmt: skip
        assert (empty(schema) is None) == some, schema


def test_string_and_array_bounds_agree_with_brute_force():
    for lo, hi in itertools.product(range(3), range(3)):
        for kind, low, high, values in (
            ("string", "minLength", "maxLength", ["", "a", "ab", "abc"]),
            ("array", "minItems", "maxItems", [[], [1], [1, 2], [1, 2, 3]]),
        ):
            schema = {"type": kind, low: lo, high: hi}
            some = any(V(schema).is_valid(v) for v in values)
            assert (empty(schema) is None) == some, schema
