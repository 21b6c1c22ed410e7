"""How a JSON document closes (`json.budget`): what decides a budget's last token exactly."""

from __future__ import annotations

import asyncio

from genlm_lab.control import JsonSchema
from genlm_lab.control.constraint.budget import fit_check_for
from genlm_lab.control.constraint.json.budget import json_closer, parses_as_json
from tests.control._toys import toy_llm

JSON_VOCAB = [b"{", b"}", b'"', b"a", b":", b'{"a":"', b'"}', b"ab", b"<eos>"]
SCHEMA = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}


def run(coro):
    return asyncio.run(coro)


def test_a_json_text_must_parse_before_the_schema_is_asked():
    assert parses_as_json(b'{"a": ""}') and parses_as_json(b" [1, 2] ")
    assert not parses_as_json(b'{"a": "') and not parses_as_json(b"\xc3")
    llm = toy_llm(vocab=JSON_VOCAB)
    finisher = fit_check_for(JsonSchema(SCHEMA).coerce(llm, f=b"".join))
    assert finisher.necessary is parses_as_json
    assert run(finisher.fits([b'{"a":"', b'"}'], 1)) and not run(finisher.fits([b"{"], 1))


def test_one_token_before_eos_is_decided_however_many_tokens_a_json_string_allows():
    assert json_closer(b' {"a":"[') == (ord("}"), 2)  # '"' and '}' at least
    assert json_closer(b'[{"a":"\\"]", "b":[]') == (ord("]"), 2)  # '}' and ']'
    assert json_closer(b'"ab\\') == (ord('"'), 1) and json_closer(b"[[]]") == (ord("]"), 0)
    assert json_closer(b"12") is None and json_closer(b"  ") is None
    content = [b"a", b"ab", b"b", b"c", b"]", b"{"]  # inside a string: more than max_branch
    no_closer = [b"{", b"}", b'"', b":", b'{"a":"', *content, b"<eos>"]
    for vocab, ends in ((no_closer, False), ([b'"}', *no_closer], True)):
        llm = toy_llm(vocab=vocab)
        constraint = JsonSchema(SCHEMA).coerce(llm, f=b"".join)
        finisher = fit_check_for(constraint, max_branch=2)
        context = [b'{"a":"', b"ab"]
        assert run(finisher.fits(context, 2)) is ends  # '"}' then EOS, or '"', '}', EOS
        assert finisher.stats["unproven"] == 0
        assert run(finisher.fits(context, 3))  # the finish proves it
