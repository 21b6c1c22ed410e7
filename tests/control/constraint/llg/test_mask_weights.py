"""MaskWeights and the packed-bit mask path equal a brute-force walk and dense weights."""

from __future__ import annotations

import asyncio
import math
import random

import numpy as np
import pytest
from _references import random_walk, reference_mask, regex_complete, regex_viable

from genlm_lab.control import BoolFSA, Coerced, JsonSchema, LazyWeights, coerce
from genlm_lab.control.constraint.llg.mask_weights import MaskWeights, read_only_masks


def run(coro):
    return asyncio.run(coro)


def _vocabulary(n: int, seed: int) -> list[bytes]:
    """`n` distinct tokens: e-mail characters, multi-byte UTF-8 and its lone bytes."""
    rng = random.Random(seed)
    alphabet = [*b"abcdexyz.@", *"é".encode(), ord("-")]
    out: set[bytes] = {bytes([b]) for b in alphabet}
    while len(out) < n:
        out.add(bytes(rng.choice(alphabet) for _ in range(rng.randint(1, 5))))
    return sorted(out)[:n]


def _dense_equal(fast: LazyWeights, want: np.ndarray) -> None:
    assert isinstance(fast, MaskWeights)
    np.testing.assert_array_equal(fast.mask, want)
    for token, allowed in zip(fast.decode, want, strict=True):  # per token, before .weights
        assert fast[token] == (0.0 if allowed else -math.inf)
    np.testing.assert_array_equal(fast.weights, np.where(want, 0.0, -math.inf))


@pytest.mark.parametrize("n", [31, 32, 63, 200])  # EOS on, before and after a word boundary
def test_regex_masks_equal_a_brute_force_walk(n):
    pattern = rb"[a-z]+(\.[a-z]+)*@[a-z]+\.(xyz|de)"
    tokens = _vocabulary(n, seed=n)
    constraint = coerce(BoolFSA.from_regex(pattern.decode()), tokens)
    viable, complete = regex_viable(pattern), regex_complete(pattern)
    contexts = random_walk(tokens, viable, 12, random.Random(n))
    contexts += random_walk(tokens, viable, 12, random.Random(n + 1))
    checked = 0
    for context in contexts:
        text = b"".join(tokens[i] for i in context)
        if not viable(text):
            assert run(constraint.prefix([tokens[i] for i in context])) == -math.inf
            continue
        want = reference_mask(tokens, text, viable, complete)
        ctx = [tokens[i] for i in context]
        _dense_equal(run(constraint.logw_next(ctx)), want)  # computed
        _dense_equal(run(constraint.logw_next(ctx)), want)  # cached
        (batch,) = run(constraint.batch_logw_next([ctx]))
        _dense_equal(batch, want)
        np.testing.assert_array_equal(constraint.allowed(ctx), want)
        bits = constraint.engine.bits([constraint._key(ctx)])[0]
        assert not np.unpackbits(bits, bitorder="little")[n + 1 :].any()  # nothing after EOS
        for i in range(n + 1):  # the cached-mask path of `allows`, EOS included
            assert constraint.engine.allows(constraint._key(ctx), i) == want[i]
        checked += 1
    assert checked >= 10


def test_fresh_engine_single_checks_agree_with_the_packed_masks():
    pattern = r"(ab|é)+x?"
    context = [b"ab", "é".encode()]
    tokens = sorted(set(_vocabulary(60, seed=7)) | set(context))
    masked = coerce(BoolFSA.from_regex(pattern), tokens)
    want = run(masked.logw_next(context)).mask
    fresh = coerce(BoolFSA.from_regex(pattern), tokens)  # its own engine: no cached mask
    fresh.engine.clear()
    key = fresh._key(context)
    got = [fresh.engine.allows(key, i) for i in range(len(tokens) + 1)]
    np.testing.assert_array_equal(got, want)


def test_json_masks_equal_the_byte_trie_walk():
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
        "required": ["name", "age"],
        "additionalProperties": False,
    }
    tokens = sorted(
        {b"{", b'{"', b'"', b"name", b'name"', b"n", b"na", b"a", b"ag", b"age", b":", b": ",
         b" ", b",", b", ", b"A", b"da", b"3", b"36", b"}", b'"}', b"\xc3", b"\xa9", b"x", b"m", b'e"', b"ge", b'":'}
    )  # fmt: skip
    potential = JsonSchema(schema, max_whitespace=None)
    fast, slow = coerce(potential, tokens), Coerced(potential, tokens)
    text = [b'{"', b"na", b"m", b'e"', b": ", b'"', b"A", b"da", b'"', b", ", b'"', b"a", b"ge"]
    assert set(text) <= set(tokens)
    for i in range(len(text) + 1):
        context = text[:i]
        assert run(slow.prefix(context)) == 0.0
        want = run(slow.logw_next(context)).weights == 0
        _dense_equal(run(fast.logw_next(context)), want)


def test_mask_weights_behave_as_the_dense_weights():
    rng = np.random.default_rng(0)
    decode = [bytes([i]) for i in range(45)] + ["EOS"]
    encode = {t: i for i, t in enumerate(decode)}
    flags = rng.random(len(decode)) < 0.4
    bits = np.packbits(np.concatenate([flags, np.ones(2, bool)]), bitorder="little")
    lazy = MaskWeights(bits, encode, decode)
    dense = LazyWeights(np.where(flags, 0.0, -math.inf), encode, decode)
    assert len(lazy) == len(dense) and lazy[b"zz"] == -math.inf
    assert lazy.sum() == dense.sum()
    np.testing.assert_array_equal(lazy.normalize().weights, dense.normalize().weights)
    np.testing.assert_array_equal(lazy.exp().weights, dense.exp().weights)
    assert list(lazy.materialize().items()) == list(dense.materialize().items())
    assert lazy.argmax() == dense.argmax()
    assert lazy.weights is lazy.weights  # built once
    with pytest.raises(ValueError, match="uint8"):
        MaskWeights(bits.astype(np.int32), encode, decode)
    with pytest.raises(ValueError, match="at least 46 bits"):
        MaskWeights(bits[:2], encode, decode)


def test_read_only_masks_unpack_each_mask_and_refuse_writes():
    rng = np.random.default_rng(0)
    packed = [rng.integers(0, 256, size=3, dtype=np.uint8) for _ in range(4)]
    masks = read_only_masks(packed, 19)
    assert len(masks) == 4
    for bits, mask in zip(packed, masks, strict=True):
        assert np.array_equal(mask, np.unpackbits(bits, count=19, bitorder="little").astype(bool))
        with pytest.raises(ValueError, match="read-only"):
            mask[0] = not mask[0]
