"""benchmarks/_outlines_json.py: outlines' schema mask, read onto our vocabulary, says what
jsonschema and outlines' own regex say, and a schema outlines cannot build is `CompileFailed`.

outlines is a bench-only dependency (`bash scripts/setup.sh bench`); CI's venv has none, so
the module is skipped there with that reason.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("outlines", reason="outlines is not installed (`bash scripts/setup.sh bench`)")
jsonschema = pytest.importorskip("jsonschema")
regex = pytest.importorskip("regex")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import _outlines_json  # noqa: E402
from bench_json_gen import minimal  # noqa: E402
from outlines_core.json_schema import build_regex_from_schema  # noqa: E402

from genlm_lab.backend import MockAsyncLM  # noqa: E402
from genlm_lab.control import PromptedLLM  # noqa: E402

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 2},
        "n": {"type": "integer"},
        "kind": {"enum": ["a", "b"]},
        "tags": {"type": "array", "items": {"type": "boolean"}, "minItems": 1},
    },
    "required": ["name", "n", "kind", "tags"],
}
SHORTEST = json.dumps(minimal(SCHEMA, SCHEMA))  # keys in the schema's order, as outlines writes
BROKEN = [  # each breaks SCHEMA in one place (jsonschema says so below)
    '{"name": "aa", "n": "0", "kind": "a", "tags": [false]}',
    '{"name": "aa", "n": 0, "kind": "c", "tags": [false]}',
    '{"name": "aa", "n": 0, "kind": "a", "tags": []}',
    '{"name": "aa", "n": 0, "kind": "a"}',
    '{"name": "aa", "n": 0.5, "kind": "a", "tags": [false]}',
]


@pytest.fixture(scope="module")
def mask(smollm2_tokenizer):
    llm = PromptedLLM(MockAsyncLM(tokenizer=smollm2_tokenizer))
    return _outlines_json.OutlinesMask(SCHEMA, llm)


def _tokens(mask, text: str) -> list:
    by_id = {int(t.token_id): t for t in mask.vocab}
    return [by_id[i] for i in mask.tokenizer.encode(text, add_special_tokens=False)]


async def _accepts(mask, text: str) -> bool:
    """Whether every token of `text` passes `score` (and `logw_next` agrees) and EOS ends it."""
    context: list = []
    for token in _tokens(mask, text):
        allowed = await mask.score([*context, token]) == 0
        assert ((await mask.logw_next(context))[token] == 0) == allowed
        if not allowed:
            return False
        context.append(token)
    return await mask.complete(context) == 0


def test_the_mask_accepts_what_jsonschema_accepts_among_these_documents(mask):
    documents = [SHORTEST, json.dumps(json.loads(SHORTEST), separators=(",", ":")), *BROKEN]
    valid = [jsonschema.Draft202012Validator(SCHEMA).is_valid(json.loads(d)) for d in documents]
    assert valid == [True, True] + [False] * len(BROKEN)  # the oracle sees what the list meant
    accepted = [asyncio.run(_accepts(mask, d)) for d in documents]
    assert accepted == valid


def test_a_token_that_breaks_the_schema_gets_weight_zero(mask):
    context = _tokens(mask, '{"name": "aa", "n":')
    by_bytes = {t.byte_string: t for t in mask.vocab}
    weights = asyncio.run(mask.logw_next(context))
    assert weights[by_bytes[b' "']] == -float("inf")  # a string where an integer goes
    assert weights[by_bytes[b"7"]] == 0 and weights[by_bytes[b" "]] == 0
    assert asyncio.run(mask.complete(context)) == -float("inf")  # EOS mid-document
    assert asyncio.run(mask.prefix(context)) == 0


def test_the_mask_is_outlines_regex_on_every_token(mask):
    """Brute force at a few places: a token is allowed iff the text with it is a prefix of a
    match of outlines' own regex (the `regex` module's partial match), over every token that
    is whole UTF-8 and no special token (outlines reads those as other strings)."""
    pattern = regex.compile(build_regex_from_schema(json.dumps(SCHEMA), None))
    special = {t.encode() for t in mask.tokenizer.all_special_tokens}
    checked = 0
    for head in ["", '{"name": "a', '{"name": "aa", "n": 0, "kind": "b", "tags": [true']:
        weights = asyncio.run(mask.logw_next(_tokens(mask, head))).weights
        for token, weight in zip(mask.vocab, weights, strict=False):
            if token.byte_string in special:
                continue
            try:
                text = head + token.byte_string.decode("utf-8")
            except UnicodeDecodeError:
                continue
            expected = pattern.fullmatch(text, partial=True) is not None
            assert (weight == 0) == expected, (head, token)
            checked += 1
    assert checked > 3 * 40_000


def test_a_schema_outlines_refuses_is_compile_failed_naming_why(smollm2_tokenizer):
    with pytest.raises(_outlines_json.CompileFailed, match="outlines refused the schema"):
        _outlines_json.compile_schema({"type": "no-such-type"}, smollm2_tokenizer)
    with pytest.raises(_outlines_json.CompileFailed, match="not built within"):
        _outlines_json.compile_schema({"type": "string"}, smollm2_tokenizer, timeout=0.01)
