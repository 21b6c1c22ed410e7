"""JsonSchema on real-world schemas (tests/schema_panel.py): compiles, masks and completes as jsonschema says."""

from __future__ import annotations

import asyncio
import json
import math

import pytest
from schema_panel import panel, panel_names

from genlm_lab.control import JsonSchema


@pytest.fixture(scope="module", params=panel_names())
def entry_and_potential(request):
    entry = panel(request.param)
    # acceptance-exact options (the defaults keep keys in the schema's order, documents on one line)
    return entry, JsonSchema(entry.schema, key_order="any", line_breaks=2, strict=False)


def test_compiles_without_falling_back(entry_and_potential):
    entry, js = entry_and_potential
    fallback = [r for r in js.coverage if r["keyword"] == "(all)"]
    assert not fallback, f"{entry.name}: {fallback}"
    assert any(r["where"] == "mask" for r in js.coverage)


def test_valid_documents_pass_every_byte_and_complete(entry_and_potential):
    entry, js = entry_and_potential
    assert entry.valid
    for doc in entry.valid:
        for text in (
            json.dumps(doc, ensure_ascii=False).encode(),
            json.dumps(doc, indent=2, ensure_ascii=False).encode(),
        ):
            for cut in range(len(text)):
                mask = js.allowed(list(text[:cut]))
                assert mask[text[cut]], (entry.name, text[:cut], text[cut : cut + 1])
            assert js.allowed(list(text))[-1], (entry.name, text)
            assert asyncio.run(js.complete(list(text))) == 0.0


def test_invalid_documents_are_rejected_at_completion(entry_and_potential):
    entry, js = entry_and_potential
    assert entry.invalid
    for doc in entry.invalid:
        text = json.dumps(doc, ensure_ascii=False).encode()
        assert asyncio.run(js.complete(list(text))) == -math.inf, (entry.name, doc)
        assert js.explain(text) is not None
