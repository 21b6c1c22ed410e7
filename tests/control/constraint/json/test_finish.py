"""`JsonSchema.finish`: a completion that makes a live prefix a valid document.

Checked on prefixes reached by random walks of the byte mask (so every one is
live), on small schemas and on real-world schemas of the schema panel: the
prefix plus its finish passes jsonschema. On small schemas the finish is as
short as the shortest completion a breadth-first search over a few bytes finds.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from schema_panel import panel, panel_names

from genlm_lab.control import JsonSchema

SMALL = [
    {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
    {
        "type": "object",
        "properties": {"city": {"type": "string", "maxLength": 3}, "rank": {"type": "integer"}},
        "required": ["city", "rank"],
        "additionalProperties": False,
    },
    {"type": "array", "items": {"type": "boolean"}, "minItems": 2},
    {
        "type": "object",
        "properties": {
            "a": {"type": "object", "properties": {"b": {"enum": [1, 22]}}, "required": ["b"]}
        },
        "required": ["a"],
    },  # fmt: skip
    {"anyOf": [{"type": "null"}, {"type": "string", "minLength": 2}]},
]


def walks(schema: JsonSchema, seed: int, n: int = 12, longest: int = 24) -> list[bytes]:
    """Live prefixes: random walks along the byte mask (EOS never taken)."""
    rng = random.Random(seed)
    out = [b""]
    for _ in range(n):
        text = b""
        for _ in range(rng.randrange(1, longest)):
            options = np.flatnonzero(schema.engine.mask(text)[:256]).tolist()
            if not options:
                break
            text += bytes([rng.choice(options)])
        out.append(text)
    return out


def shortest(schema: JsonSchema, prefix: bytes, alphabet: bytes, depth: int = 24) -> int | None:
    """The length of the shortest completion over `alphabet`, by breadth-first search
    (None: none within `depth` bytes, or the search grew past its cap)."""
    level = [prefix]
    for length in range(depth + 1):
        if any(schema.engine.mask(t)[256] for t in level):
            return length
        level = [t + bytes([b]) for t in level for b in alphabet if schema.engine.mask(t)[b]]
        if len(level) > 5000:
            return None
    return None


@pytest.mark.parametrize("index", range(len(SMALL)))
def test_a_finish_makes_every_live_prefix_valid(index):
    schema = JsonSchema(SMALL[index])
    prefixes = walks(schema, index)
    assert len(prefixes) > 5
    for prefix in prefixes:
        tail = schema.finish(prefix)
        assert tail is not None, prefix
        assert schema.validate(prefix + tail), (prefix, tail, schema.explain(prefix + tail))


def test_the_finish_is_as_short_as_a_breadth_first_search_finds():
    alphabet = b'{}[]":,0129abnrtuelsfcitykm'
    compared = 0
    for index, raw in enumerate(SMALL):
        schema = JsonSchema(raw)
        for prefix in walks(schema, 100 + index, n=8, longest=12):
            best = shortest(schema, prefix, alphabet)
            if best is not None:  # the search ended within its cap
                compared += 1
                assert len(schema.finish(prefix)) == best, prefix
    assert compared >= 12


def test_a_finished_document_needs_nothing_more():
    schema = JsonSchema(SMALL[0])
    assert schema.finish('{"name": "Ada"}') == b""
    assert schema.finish('{"name": "Ada') == b'"}'


def test_finish_gives_up_past_its_limit():
    schema = JsonSchema({"type": "array", "items": {"type": "integer"}, "minItems": 50})
    assert schema.finish(b"[", limit=10) is None
    tail = schema.finish(b"[")
    assert tail is not None and schema.validate(b"[" + tail)


def test_real_world_schemas_finish_from_random_prefixes():
    checked = 0
    for k, name in enumerate(panel_names()):
        schema = JsonSchema(panel(name).schema)
        for prefix in walks(schema, k, n=3):
            tail = schema.finish(prefix)
            if tail is None:
                continue
            assert schema.validate(prefix + tail), (name, prefix, tail)
            checked += 1
    assert checked >= 2 * len(panel_names())


CONDITIONAL = {  # dependabot's shape: what the mask checks only at completion
    "type": "object",
    "properties": {
        "kind": {"type": "string"},
        "beta": {"type": "boolean"},
        "when": {"type": "object", "properties": {"every": {"type": "string"}}},
        "group": {"type": "string"},
    },
    "required": ["kind"],
    "additionalProperties": False,
    "allOf": [
        {"if": {"not": {"required": ["group"]}}, "then": {"required": ["when"]}},
        {
            "if": {"properties": {"beta": {"const": True}}, "required": ["beta"]},
            "else": {"properties": {"kind": {"enum": ["npm", "pip"]}}},
        },
    ],
}


@pytest.mark.parametrize(
    "prefix", [b"{", b'{"kind":"npm"', b'{"kind":"x', b'{"kind":"npm","when":{"every":"d"}']
)
def test_a_finish_adds_the_keys_a_conditional_requires(prefix):
    schema = JsonSchema(CONDITIONAL)
    assert schema.engine.alive(prefix)
    tail = schema.finish(prefix)
    assert tail is not None
    assert schema.validate(prefix + tail), (prefix, tail, schema.explain(prefix + tail))
    assert schema.unfinishable == []


def test_the_finish_asks_single_bytes_and_they_agree_with_the_whole_mask():
    """The walk asks the engine one byte at a time (`allows`), a whole mask only where a
    step needs every byte, and every such answer is the mask's, on walked prefixes of the
    panel's schemas."""
    compared = steps = whole = 0
    for k, name in enumerate(panel_names()[:12]):
        schema = JsonSchema(panel(name).schema)
        engine = schema.engine
        for prefix in walks(schema, k, n=2):
            engine.clear()
            masks = []
            read = engine.mask
            engine.mask = lambda text, read=read, masks=masks: masks.append(text) or read(text)
            try:
                tail = schema.finish(prefix)
            finally:
                del engine.mask
            steps += len(tail or b"") + 1
            whole += len(masks)
            for text in {prefix, prefix + b'"', prefix + b"}", prefix + b"0"}:
                engine.clear()
                singles = [engine.allows(text, b) for b in range(257)]
                assert singles == engine.mask(text).tolist(), (name, text)
                compared += 1
    assert compared >= 12 * 3 * 2
    assert whole < steps / 4, (whole, steps)  # whole masks only where a step needs every byte


def test_a_string_the_mask_never_lets_close_is_given_up_on_early_but_min_length_is_written():
    """An unanchored pattern lets the mask take "aaa..." forever: where no example of the
    pattern is written (a negated set), the walk stops after a few dozen content bytes (no
    finish, as at the byte limit) instead of walking to the limit; a long minLength is
    still written out."""
    hopeless = JsonSchema({"type": "string", "pattern": "x[^a]{3}y"})
    asked = []
    allows = hopeless.engine.allows
    hopeless.engine.allows = lambda text, b: asked.append(text) or allows(text, b)
    try:
        assert hopeless.finish(b'"') is None
    finally:
        del hopeless.engine.allows
    assert 64 < len({len(t) for t in asked}) < 100  # texts of ~66 lengths, not 1,024
    long = JsonSchema({"type": "string", "minLength": 150})
    tail = long.finish(b'"')
    assert tail is not None and long.validate(b'"' + tail) and len(tail) == 151
