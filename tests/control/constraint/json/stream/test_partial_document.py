"""json.stream.partial_document: the finished part of every prefix of a document."""

from __future__ import annotations

import json

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genlm_lab.control.constraint.json.stream.partial_document import CUT, fixable, read_partial

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
)


def embeds(part, whole) -> bool:
    """Whether `part` is `whole` with some trailing members of containers left out."""
    if isinstance(part, dict):
        return isinstance(whole, dict) and all(
            k in whole and embeds(v, whole[k]) for k, v in part.items()
        )
    if isinstance(part, list):
        return (
            isinstance(whole, list)
            and len(part) <= len(whole)
            and all(embeds(p, w) for p, w in zip(part, whole, strict=False))
        )
    return part == whole and type(part) is type(whole)


@settings(max_examples=60, deadline=None)
@given(json_values, st.sampled_from([None, 1]))
def test_every_prefix_reads_as_a_part_of_the_document(value, indent):
    text = json.dumps(value, indent=indent)
    whole, open_paths = read_partial(text)
    number = isinstance(value, int) and not isinstance(value, bool)
    assert whole == value or (number and whole is CUT)  # a number at the end may go on
    assert open_paths == frozenset()
    parts = [read_partial(text[:i])[0] for i in range(len(text))]
    assert all(p is CUT or embeds(p, value) for p in parts)
    assert len(parts) == len(text)


@pytest.mark.parametrize("text", ["[1 2", "{1", "]", '{"a" 1', "[1,]", "nul!", '"a" x', "[tx"])
def test_text_no_document_starts_with_is_refused(text):
    with pytest.raises(ValueError, match="not the start of a JSON document"):
        read_partial(text)


def test_open_containers_keep_only_finished_members():
    assert read_partial('{"a": [1, 2], "b": {"c": tr') == (
        {"a": [1, 2], "b": {}},
        frozenset({(), ("b",)}),
    )
    assert read_partial("[12") == ([], frozenset({()}))  # 12 may go on: 123


@pytest.mark.parametrize(
    "schema,prefix,can_mend",
    [
        ({"type": "object", "required": ["a"]}, '{"b": 1,', True),
        ({"type": "array", "minItems": 3}, "[1,", True),
        ({"type": "array", "maxItems": 1}, "[1, 2,", False),
        ({"type": "array", "items": {"type": "string"}}, "[1,", False),
        ({"anyOf": [{"required": ["a"]}, {"type": "array"}]}, "{", True),
        ({"anyOf": [{"type": "string"}, {"type": "array"}]}, "{", False),
    ],
)
def test_fixable_tells_errors_more_members_may_mend(schema, prefix, can_mend):
    value, open_paths = read_partial(prefix)
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(value))
    assert errors
    assert all(fixable(e, open_paths) for e in errors) is can_mend
