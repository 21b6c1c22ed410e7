"""LazyTrieState: weights are log prefix masses; extensions commit exact tokens."""

from __future__ import annotations

import asyncio
import math

import pytest

from genlm_lab.backend.toy import ToyLM
from genlm_lab.bytes import AsyncTokenByteTrie, LazyTrieState, TrieMode

VOCAB = [b"a", b"ab", b"abc", b"b", b"ba", b"$"]


def setup():
    lm = ToyLM(VOCAB, seed=5, eos=b"$")
    trie = AsyncTokenByteTrie.from_vocab(lm.byte_vocab, eos_tokens=[b"$"])
    return lm, trie


def probs(lm, ctx):
    return [math.exp(float(x)) for x in lm.next_token_logprobs_sync(ctx)]


def test_weight_is_the_log_mass_of_tokens_starting_with_the_partial():
    lm, trie = setup()

    async def go():
        s = await LazyTrieState.initial(lm, trie).materialize()
        return s << ord("a"), (s << ord("a")) << ord("b")

    sa, sab = asyncio.run(go())
    p = probs(lm, ())
    assert sa.weight == pytest.approx(math.log(p[0] + p[1] + p[2]), abs=1e-6)
    assert sab.weight == pytest.approx(math.log(p[1] + p[2]), abs=1e-6)
    assert sab.partial == b"ab"
    assert sab << ord("z") is None


def test_extension_commits_the_token_with_its_exact_probability():
    lm, trie = setup()

    async def go():
        s = await LazyTrieState.initial(lm, trie).materialize()
        (ext,) = (s << ord("a") << ord("b")).extensions()
        return await ext.materialize()

    ext = asyncio.run(go())
    assert ext.lm_state.context == (1,)
    assert ext.node == ext.root and not ext.terminated
    assert ext.weight == pytest.approx(math.log(probs(lm, ())[1]), abs=1e-6)


def test_candidate_logp_next_sums_to_one_with_eot_and_eos():
    lm, trie = setup()

    async def go():
        s = await LazyTrieState.initial(lm, trie).materialize()
        return s, s << ord("a")

    root, sa = asyncio.run(go())
    for s in (root, sa):
        assert s.logp_next.total() == pytest.approx(1.0)
    assert root.logp_next.prob(257) == pytest.approx(probs(lm, ())[5], rel=1e-6)
    p = probs(lm, ())
    assert sa.logp_next.prob(256) == pytest.approx(p[0] / (p[0] + p[1] + p[2]), rel=1e-6)


def test_eos_terminates_and_without_eos_mode_reads_eos_bytes():
    lm, trie = setup()

    async def go():
        s = await LazyTrieState.initial(lm, trie).materialize()
        plain = s.with_mode(TrieMode.WITHOUT_EOS)
        return s << 257, s << ord("$"), plain << ord("$"), plain << 257

    ended, dollar, plain_dollar, plain_eos = asyncio.run(go())
    assert ended.terminated and ended << ord("a") is None
    assert dollar is None and plain_eos is None
    assert plain_dollar.weight == pytest.approx(math.log(probs(lm, ())[5]), abs=1e-6)


def test_mass_before_materialize_raises():
    lm, trie = setup()
    with pytest.raises(ValueError, match="materialize"):
        _ = LazyTrieState.initial(lm, trie).mass
