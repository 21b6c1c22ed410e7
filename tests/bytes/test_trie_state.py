"""LazyTrieState: weights are log prefix masses; extensions commit exact tokens."""

from __future__ import annotations

import asyncio
import math

import numpy as np
import pytest

from genlm_lab.backend.toy import ToyLM
from genlm_lab.bytes import AsyncTokenByteTrie, LazyTrieState, TrieMode

VOCAB = [b"a", b"ab", b"abc", b"b", b"ba", b"$"]


def setup():
    lm = ToyLM(VOCAB, seed=5, eos=b"$")
    trie = AsyncTokenByteTrie.from_vocab(lm.byte_vocab, eos_byte_strings=[b"$"])
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


class _GatedLM(ToyLM):
    """A ToyLM whose queries wait for `gate` (so callers can be cancelled mid-call)."""

    def __init__(self, *args, fail: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        self.gate: asyncio.Event | None = None
        self.fail = fail

    async def next_token_logprobs(self, token_ids):
        if self.gate is not None:
            await self.gate.wait()
        if self.fail:
            raise RuntimeError("backend down")
        return self.next_token_logprobs_sync(token_ids)


def test_concurrent_materialize_of_one_state_makes_one_lm_call():
    # Particles whose ByteLMContexts share a beam (copies, resampled clones)
    # materialize the same extensions together: each made its own LM call
    # and trie pass (8 particles, 8x the calls).
    lm, trie = setup()

    async def go():
        s = LazyTrieState.initial(lm, trie)
        before = lm.stats["queries"]
        await asyncio.gather(*(s.materialize() for _ in range(8)))
        return s, lm.stats["queries"] - before

    s, calls = asyncio.run(go())
    assert calls == 1
    assert s.prob_mass[s.root] == pytest.approx(1.0)
    assert s.mass[s.root] == pytest.approx(0.0, abs=1e-6)  # mass is in log space (genlm-bytes)


def test_mass_is_the_log_of_prob_mass_for_every_node():
    lm, trie = setup()
    s = asyncio.run(LazyTrieState.initial(lm, trie).materialize())
    with np.errstate(divide="ignore"):
        assert np.array_equal(s.mass, np.log(s.prob_mass))
    # the log-mass of the child read by a byte is what `<<` adds to the weight
    edges = trie.trie.children[s.root]
    b = max((k for k in edges if isinstance(k, int) and k < 256), key=lambda k: s.mass[edges[k]])
    nxt = s << b
    child = edges[b]
    assert nxt.weight == pytest.approx(s.weight + s.mass[child] - s.mass[s.root])


def test_cancelling_one_caller_leaves_the_shared_computation_to_the_others():
    lm = _GatedLM(VOCAB, seed=5, eos=b"$")
    trie = AsyncTokenByteTrie.from_vocab(lm.byte_vocab, eos_byte_strings=[b"$"])

    async def go():
        lm.gate = asyncio.Event()
        s = LazyTrieState.initial(lm, trie)
        first = asyncio.ensure_future(s.materialize())
        await asyncio.sleep(0)  # the first caller owns the LM call
        others = [asyncio.ensure_future(s.materialize()) for _ in range(3)]
        await asyncio.sleep(0)
        first.cancel()
        await asyncio.sleep(0)
        lm.gate.set()
        await asyncio.gather(*others)
        with pytest.raises(asyncio.CancelledError):
            await first
        return s

    s = asyncio.run(go())
    p = probs(lm, ())
    assert s.materialized and s.log_mass(s.root) == pytest.approx(math.log(sum(p)), abs=1e-6)


def test_a_failed_materialize_reaches_every_caller_and_can_be_retried():
    lm = _GatedLM(VOCAB, seed=5, eos=b"$", fail=True)
    trie = AsyncTokenByteTrie.from_vocab(lm.byte_vocab, eos_byte_strings=[b"$"])

    async def go():
        s = LazyTrieState.initial(lm, trie)
        results = await asyncio.gather(*(s.materialize() for _ in range(3)), return_exceptions=True)
        assert all(isinstance(r, RuntimeError) for r in results) and not s.materialized
        lm.fail = False
        return await s.materialize()

    assert asyncio.run(go()).materialized


def test_get_eot_is_the_leaf_of_the_token_ending_here():
    lm, trie = setup()

    async def go():
        s = await LazyTrieState.initial(lm, trie).materialize()
        return s, s << ord("a"), (s << ord("a")) << ord("b")

    root, sa, sab = asyncio.run(go())
    t = trie.trie
    assert root.get_EOT() is None  # no empty token
    assert t.leaf2token_id[sa.get_EOT()] == 0 and t.leaf2token_id[sab.get_EOT()] == 1
    assert sa.extend().lm_state.context[-1] == t.leaf2token_id[sa.get_EOT()]


def test_get_all_eot_lists_every_duplicate_token_ending_here():
    lm = ToyLM([b"a", b"b", b"a"], seed=1)
    trie = AsyncTokenByteTrie.from_vocab(lm.byte_vocab)
    s = asyncio.run(LazyTrieState.initial(lm, trie).materialize()) << ord("a")
    edges = s.get_all_EOT()
    assert sorted(t for _, t in edges) == [0, 2]  # both ids spelling "a", not "b"
    assert all(trie.trie.leaf2token_id[leaf] == t for leaf, t in edges)
    s_b = asyncio.run(LazyTrieState.initial(lm, trie).materialize()) << ord("b")
    assert [t for _, t in s_b.get_all_EOT()] == [1]


def test_get_eot_with_duplicates_is_the_lowest_id_and_extend_all_is_every_extension():
    lm = ToyLM([b"b", b"a", b"ab", b"a", b"a"], seed=2)
    trie = AsyncTokenByteTrie.from_vocab(lm.byte_vocab)
    s = asyncio.run(LazyTrieState.initial(lm, trie).materialize()) << ord("a")
    assert trie.trie.leaf2token_id[s.get_EOT()] == 1  # ids 1, 3, 4 spell "a"
    p = probs(lm, ())
    want = {t: math.log(p[t]) for t in (1, 3, 4)}  # brute force: each token's own prob
    got = {e.lm_state.context[-1]: e.weight for e in s.extend_all()}
    assert got.keys() == want.keys()
    for t in want:
        assert got[t] == pytest.approx(want[t], abs=1e-6)
    assert s.extend_all() == s.extensions()


def test_partial_equals_its_bytes_and_the_list_of_their_values():
    # genlm-bytes gives `partial` as a list of ints; genlm_lab as bytes: both compare equal
    lm, trie = setup()
    t = trie.trie
    # WITHOUT_EOS: the EOS token "$" is read as bytes too, so every internal node is reached
    root = asyncio.run(LazyTrieState.initial(lm, trie, TrieMode.WITHOUT_EOS).materialize())
    frontier, seen = [(root, b"")], 0
    while frontier:
        state, spelled = frontier.pop()
        seen += 1
        p = state.partial
        assert p == spelled and p == list(spelled) and list(spelled) == p
        assert not (p != list(spelled)) and p != [*spelled, 0] and p != list(spelled)[:-1] + [256]
        assert hash(p) == hash(spelled) and {p: 1}[spelled] == 1
        assert isinstance(p, bytes) and p + b"!" == spelled + b"!"
        for b in range(256):
            nxt = state << b
            if nxt is not None:
                frontier.append((nxt, spelled + bytes([b])))
    internal = [n for n in range(t.n_nodes) if n not in t.leaf2token_id and n != t.eos_node]
    assert seen == len(internal)  # every internal node was reached and checked
