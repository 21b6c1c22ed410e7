"""json.stream.full_validator: documents validated exactly, prefixes refused only when hopeless."""

from __future__ import annotations

import json
import math

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genlm_lab.control.constraint.json.stream import (
    FullValidatorJsonSchema,
    prune_to_validatable_prefix,
)

SCHEMA = {
    "type": "array",
    "items": {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}},
    "maxItems": 3,
}
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
documents = st.lists(
    st.dictionaries(st.sampled_from(["n", "m"]), st.integers(-2, 2) | st.text(max_size=2)),
    max_size=4,
)


@settings(max_examples=40, deadline=None)
@given(documents)
async def test_complete_is_jsonschema_validity_and_valid_documents_have_live_prefixes(doc):
    potential = FullValidatorJsonSchema(SCHEMA)
    data = json.dumps(doc).encode()
    valid = VALIDATOR.is_valid(doc)
    assert (await potential.complete(data) == 0.0) is valid
    if valid:
        weights = [await potential.prefix(data[:i]) for i in range(len(data) + 1)]
        assert weights == [0.0] * (len(data) + 1)


async def test_a_prefix_is_refused_once_a_finished_member_breaks_the_schema():
    potential = FullValidatorJsonSchema(SCHEMA)
    assert await potential.prefix(b'[{"n": 1}, {"n": -1') == 0.0  # only the first item is done
    assert await potential.prefix(b'[{"n": 1}, {"n": -1}') == -math.inf
    assert await potential.prefix(b"[{}, {}, {}, {}") == -math.inf  # a 4th item, maxItems 3
    assert await potential.prefix(b'[{"n": "x"},') == -math.inf


@pytest.mark.parametrize(
    "context,weight",
    [(b"  ", 0.0), (b"\n\n", 0.0), (b" [", 0.0), (b"   ", -math.inf), (b"\n\n\n", -math.inf)]
    + [(b"[\n\n", -math.inf), (b"[\t1", -math.inf), (b"x", -math.inf), (b"[\xff", -math.inf)],
)
async def test_prechecks_refuse_what_a_model_should_not_start(context, weight):
    assert await FullValidatorJsonSchema({}).prefix(context) == weight


async def test_complete_refuses_nan_and_text_after_the_document():
    potential = FullValidatorJsonSchema({"type": "array"})
    assert await potential.complete(b"[1]") == 0.0
    assert await potential.complete(b"[NaN]") == -math.inf
    assert await potential.complete(b"[1] x") == -math.inf


def test_prune_keeps_up_to_the_last_separator_and_drops_a_cut_character():
    assert prune_to_validatable_prefix(b"1") == b""
    assert prune_to_validatable_prefix(b'["foo", b"ba') == b'["foo",'
    assert prune_to_validatable_prefix(b'[{"a": 1}, "\xe2\x98') == b'[{"a": 1},'
    with pytest.raises(UnicodeDecodeError):
        prune_to_validatable_prefix(b"[\xff, 1")
