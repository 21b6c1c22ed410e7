"""Schemas the metaschema lets through and no mask can read are refused at construction.

Each refusal is one `InvalidGrammar` naming where; a fuzz of schema construction
finds no other exception (its counterexamples, once found, stay below as tests).
"""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from genlm_lab.control import JsonSchema
from genlm_lab.control.constraint.errors import InvalidGrammar
from genlm_lab.control.constraint.json.checks import MAX_DEPTH, check_schema


def _nested(depth, wrap):
    schema = {"type": "string"}
    for _ in range(depth - 1):
        schema = wrap(schema)
    return schema


WRAPS = {
    "array": lambda s: {"type": "array", "items": s},
    "object": lambda s: {"type": "object", "properties": {"x": s}, "required": ["x"]},
    "anyOf": lambda s: {"anyOf": [s, {"type": "null"}]},
}


@pytest.mark.parametrize("shape", sorted(WRAPS))
def test_a_schema_nested_too_deep_is_refused_and_one_level_less_compiles(shape):
    JsonSchema(_nested(MAX_DEPTH, WRAPS[shape]))
    with pytest.raises(InvalidGrammar, match=f"more than {MAX_DEPTH} deep"):
        JsonSchema(_nested(MAX_DEPTH + 1, WRAPS[shape]))
    with pytest.raises(InvalidGrammar, match="too deep"):  # was a RecursionError
        JsonSchema(_nested(120, WRAPS[shape]))


def test_a_ref_to_nowhere_is_refused_with_its_line_and_column():
    text = '{"type": "object",\n "properties": {"a": {"$ref": "#/definitions/missing"}}}'
    with pytest.raises(InvalidGrammar, match=r"'#/definitions/missing' at properties/a/\$ref "):
        JsonSchema(text)
    with pytest.raises(InvalidGrammar, match=r"line 2, column \d+\) resolves to nothing"):
        JsonSchema(text)


@pytest.mark.parametrize(
    ("schema", "where"),
    [
        ({"type": "string", "pattern": "(unclosed"}, "at pattern "),
        ({"properties": {"a": {"type": "string", "pattern": "[a-"}}}, "at properties/a/pattern "),
        ({"type": "object", "patternProperties": {"a(": {}}}, "patternProperties key 'a\\('"),
    ],
)
def test_a_pattern_that_is_no_regex_is_refused_naming_its_path(schema, where):
    with pytest.raises(InvalidGrammar, match=where):
        JsonSchema(schema)


@pytest.mark.parametrize(
    "schema",
    [
        # names of properties and definitions are words, not keywords
        {"type": "object", "properties": {"pattern": {"type": "string"}, "$ref": {}}},
        {"$defs": {"enum": {"type": "integer"}}, "properties": {"a": {"$ref": "#/$defs/enum"}}},
        # data keywords hold text that only looks like a keyword
        {"enum": [{"$ref": "#/nowhere"}, {"pattern": "("}]},
        {"type": "string", "default": "(", "examples": [{"$ref": "#/x"}]},
        # a pointer into a subschema with its own $id resolves against that resource
        {"$defs": {"b": {"$id": "http://x/b", "$defs": {"c": {}}, "$ref": "#/$defs/c"}}},
        # ECMA-262 syntax the `regex` module reads
        {"type": "string", "pattern": r"^\p{L}+(?<word>\d)?$"},
    ],
)
def test_what_is_valid_is_not_refused(schema):
    check_schema(schema)


def test_the_real_world_panel_passes_the_checks():
    import importlib.util
    from pathlib import Path

    root = Path(importlib.util.find_spec("check_jsonschema").origin).parent
    checked = 0
    for path in sorted(root.rglob("*.json")):
        schema = json.loads(path.read_text())
        if isinstance(schema, dict):
            check_schema(schema)
            checked += 1
    assert checked >= 20


# -- the fuzz ---------------------------------------------------------------------------

PATTERN_TEXT = st.text(alphabet="ab()[]{}*+?|^$\\-.,0123d", max_size=6)
POINTERS = st.sampled_from(["#", "#/$defs/a", "#/$defs/b", "#/properties/x", "#/nowhere"])


def _schemas():
    leaves = st.one_of(
        st.booleans(),
        st.fixed_dictionaries({"type": st.sampled_from(["string", "integer", "null", "boolean"])}),
        st.fixed_dictionaries({"type": st.just("string"), "pattern": PATTERN_TEXT}),
        st.fixed_dictionaries({"$ref": POINTERS}),
        st.fixed_dictionaries({"enum": st.lists(st.integers(0, 3), min_size=1, max_size=3)}),
        st.fixed_dictionaries(
            {
                "type": st.just("string"),
                "minLength": st.integers(0, 3),
                "maxLength": st.integers(0, 3),
            }
        ),
    )

    def extend(inner):
        return st.one_of(
            st.fixed_dictionaries({"type": st.just("array"), "items": inner}),
            st.fixed_dictionaries(
                {
                    "type": st.just("object"),
                    "properties": st.dictionaries(st.sampled_from("xyz"), inner, max_size=3),
                }
            ),
            st.fixed_dictionaries({"anyOf": st.lists(inner, min_size=1, max_size=3)}),
            st.fixed_dictionaries({"allOf": st.lists(inner, min_size=1, max_size=2)}),
            st.fixed_dictionaries(
                {
                    "type": st.just("object"),
                    "patternProperties": st.dictionaries(PATTERN_TEXT, inner, max_size=2),
                }
            ),
        )

    body = st.recursive(leaves, extend, max_leaves=12)
    return st.builds(
        lambda root, a, b: {**root, "$defs": {"a": a, "b": b}} if isinstance(root, dict) else root,
        body,
        leaves,
        body,
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_schemas())
def test_fuzz_construction_raises_nothing_but_invalid_grammar(schema):
    try:
        JsonSchema(schema)
    except InvalidGrammar:
        pass
