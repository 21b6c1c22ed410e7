"""Boundary predicates: the splits they make against a direct scan of the stream or Python's `re`.

The splits come from running `MultiTokenUnitSampler` over a fixed token
stream (its `draw=` hook replays the stream), unit after unit.
"""

from __future__ import annotations

import asyncio
import math
import random
import re

import numpy as np
import pytest
from _toys import TablePotential

from genlm_lab.control import (
    EOS,
    BoundaryPredicate,
    CFGBoundary,
    DirectTokenSampler,
    FixedLengthBoundary,
    MultiTokenUnitSampler,
    TokenSetBoundary,
    flatten_units,
)
from genlm_lab.tokenization import Token


def run(coro):
    return asyncio.run(coro)


async def _split_with_sampler(boundary, stream, cap=50):
    """Units the sampler makes over a fixed token stream (EOS after it), unit after unit."""
    vocab = sorted(set(stream)) or [b"a"]
    sampler = MultiTokenUnitSampler(
        DirectTokenSampler(TablePotential(vocab, lambda ctx: np.zeros(len(vocab) + 1))),
        boundary,
        cap,
    )
    tokens = iter([*stream, EOS])
    context: list = []
    while not context or context[-1][-1] is not EOS:
        unit, logw, _ = await sampler.sample(context, draw=lambda chart: next(tokens))
        assert logw > -math.inf
        context.append(unit)
    return context


def _split_at(stream, ends_here):
    """Brute-force split: cut after every position where `ends_here(current unit)` holds."""
    units, current = [], []
    for token in stream:
        current.append(token)
        if ends_here(current):
            units.append(current)
            current = []
    units.append([*current, EOS])
    return units


def _random_streams(alphabet, n=60, seed=0):
    rng = random.Random(seed)
    return [[rng.choice(alphabet) for _ in range(rng.randrange(0, 12))] for _ in range(n)]


def test_fixed_length_boundary_cuts_every_k_tokens():
    for k in (1, 2, 3):
        streams = _random_streams([b"a", b"b", b"c"], seed=k)
        assert any(len(s) >= k for s in streams)  # some stream is cut at least once
        for stream in streams:
            got = run(_split_with_sampler(FixedLengthBoundary(k), stream))
            want = [stream[i : i + k] for i in range(0, len(stream) - len(stream) % k, k)]
            want.append([*stream[len(stream) - len(stream) % k :], EOS])
            assert got == want, stream


def test_token_set_boundary_cuts_after_each_boundary_token_matched_by_bytes():
    vocab = [Token(0, b"a"), Token(1, b"b"), Token(2, b" "), Token(3, b"\n")]
    boundary = TokenSetBoundary({b" ", b"\n"})  # plain bytes match the Token subunits
    streams = _random_streams(vocab, seed=7)
    assert any(b" " in s or b"\n" in s for s in streams)
    for stream in streams:
        got = run(_split_with_sampler(boundary, stream))
        assert got == _split_at(stream, lambda unit: bytes(unit[-1]) in (b" ", b"\n"))
        assert flatten_units(got)[:-1] == stream


def test_token_set_boundary_membership():
    boundary = TokenSetBoundary([b" ", EOS])
    assert boundary([], [Token(9, b"x"), Token(5, b" ")])
    assert boundary([], [b"x", EOS])
    assert not boundary([], [b"x"]) and not boundary([], [])
    assert not TokenSetBoundary({b" "})([], [EOS])


def test_cfg_boundary_cuts_where_the_text_first_matches_the_grammar():
    grammar = r"""
        start: NUMBER ("+" NUMBER)* ";"
        NUMBER: /[0-9]+/
    """
    boundary = CFGBoundary(grammar, min_length=1)
    oracle = re.compile(r"[0-9]+(\+[0-9]+)*;")
    alphabet = [b"1", b"23", b"+", b";", b"+4;"]
    streams = _random_streams(alphabet, seed=11)
    assert any(oracle.fullmatch(b"".join(s[:i]).decode()) for s in streams for i in range(len(s)))
    for stream in streams:
        got = run(_split_with_sampler(boundary, stream))
        want = _split_at(stream, lambda unit: oracle.fullmatch(b"".join(unit).decode()))
        assert got == want, stream


def test_cfg_boundary_complete_rules_min_length_and_parsers_agree_with_re():
    grammar = r"""
        start: pair | word
        pair: WORD "=" WORD
        word: WORD
        WORD: /[a-z]+/
    """
    rooted = CFGBoundary(grammar, complete_rules={"start"}, min_length=1)
    lalr = CFGBoundary(grammar, parser_type="lalr", min_length=1)
    long = CFGBoundary(grammar, min_length=3)
    rng = random.Random(2)
    for _ in range(100):
        buffer = [rng.choice([b"a", b"bc", b"=", b"1", b"\xc3"]) for _ in range(rng.randrange(5))]
        text = b"".join(buffer).decode("utf-8", errors="ignore")
        parses = re.fullmatch(r"[a-z]+(=[a-z]+)?", text) is not None
        assert rooted([], buffer) is parses
        assert lalr([], buffer) is parses
        assert long([], buffer) is (parses and len(buffer) >= 3 and len(text) >= 3)
    # complete_rules names the accepted roots: the root of a parse from `start` is "start"
    assert not CFGBoundary(grammar, complete_rules={"pair"}, min_length=1)([], [b"a=b"])
    inlined_grammar = '?start: pair | word\npair: W "=" W\nword: W\nW: /[a-z]+/'
    inlined = CFGBoundary(inlined_grammar, "start", {"pair"}, 1)
    assert inlined([], [b"a=b"]) and not inlined([], [b"ab"])


def test_cfg_boundary_with_strict_decoding_never_ends_inside_a_character():
    boundary = CFGBoundary("start: /./+", min_length=1, decode_errors="strict")
    assert not boundary([], [b"\xc3"])
    assert boundary([], [b"\xc3", b"\xa9"])


def test_bad_boundary_arguments_are_refused():
    with pytest.raises(ValueError, match="Length must be positive"):
        FixedLengthBoundary(0)
    with pytest.raises(TypeError, match="length must be an int"):
        FixedLengthBoundary(2.0)
    with pytest.raises(TypeError, match="collection of tokens"):
        TokenSetBoundary(b" ")
    with pytest.raises(ValueError, match="at least one"):
        TokenSetBoundary(set())
    with pytest.raises(ValueError, match="Failed to create Lark parser"):
        CFGBoundary("start: missing_rule")
    with pytest.raises(ValueError, match="parser_type"):
        CFGBoundary('start: "x"', parser_type="glr")
    with pytest.raises(ValueError, match="min_length"):
        CFGBoundary('start: "x"', min_length=-1)
    with pytest.raises(TypeError):
        BoundaryPredicate()  # abstract
