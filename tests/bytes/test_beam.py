"""ByteBeamState against exact enumeration on toy vocabularies, plus EOS, pruning, bad input."""

from __future__ import annotations

import asyncio
import math
import warnings

import numpy as np
import pytest
from bytes_oracle import log, make_oracle
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from genlm_lab.backend.toy import ToyLM
from genlm_lab.bytes import BeamParams, ByteBeamState, EmptyBeamError

EOS_TOKEN = b"$"
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def toy_cases(draw, prefix_closed: bool = False):
    """A ToyLM over letters a, b, c (every single letter is a token, maybe a duplicate), EOS, a text."""
    words = draw(st.lists(st.text(alphabet="abc", min_size=2, max_size=3), max_size=6, unique=True))
    vocab = {w.encode() for w in words} | {b"a", b"b", b"c"}
    if prefix_closed:
        vocab |= {w[:i] for w in vocab for i in range(1, len(w))}
    vocab = sorted(vocab)
    if draw(st.booleans()):  # duplicate byte strings: distinct token ids, both summed over
        vocab.append(draw(st.sampled_from(vocab)))
    vocab.append(EOS_TOKEN)
    seed = draw(st.integers(0, 10_000))
    text = draw(st.text(alphabet="abc", min_size=1, max_size=5)).encode()
    return ToyLM(vocab, seed=seed, eos=EOS_TOKEN), text


async def read(beam: ByteBeamState, text: bytes, prune: bool = False):
    """Read text byte by byte with logp_next at every byte; return beam and log p_next's."""
    logps = []
    for b in text:
        if prune:
            beam = beam.prune()
        q = await beam.logp_next()
        assert math.isclose(q.total(), 1.0, rel_tol=1e-9), q.total()
        logps.append(q[b])
        beam = await (beam << b)
    return beam, logps


@SETTINGS
@given(toy_cases())
def test_logZ_equals_exact_prefix_probability(case):
    lm, text = case
    prefix_prob, end_prob = make_oracle(lm, eos_ids=(len(lm.byte_vocab) - 1,))

    async def go():
        beam = await ByteBeamState.initial(lm, BeamParams(K=10_000, eos_byte_strings=[EOS_TOKEN]))
        beam, logps = await read(beam, text)
        q = await beam.logp_next()
        return beam, logps, q

    beam, logps, q = asyncio.run(go())
    exact = prefix_prob((), text)
    assert beam.logZ == pytest.approx(log(exact), abs=1e-6)
    # chain rule: logZ is the sum of the next-byte log-probabilities of the bytes read
    assert sum(logps) == pytest.approx(beam.logZ, abs=1e-6)
    # EOS after the text: exactly `text` then EOS, over all tokenizations
    assert q.prob(257) == pytest.approx(end_prob((), text) / exact, abs=1e-6)


@SETTINGS
@given(toy_cases())
def test_prefill_reads_eos_tokens_as_ordinary_tokens(case):
    lm, text = case
    text = text.replace(b"c", EOS_TOKEN)  # the EOS token's bytes now occur in the text
    prefix_prob, _ = make_oracle(lm, eos_ids=())

    async def go():
        beam = await ByteBeamState.initial(lm, BeamParams(K=10_000, eos_byte_strings=[EOS_TOKEN]))
        return await beam.prefill(text)

    beam = asyncio.run(go())
    assert beam.logZ == pytest.approx(log(prefix_prob((), text)), abs=1e-6)


@SETTINGS
@given(toy_cases(prefix_closed=True), st.integers(1, 5), st.sampled_from([0.0, 0.05]))
def test_pruned_logZ_is_at_most_exact(case, K, threshold):
    lm, text = case
    prefix_prob, _ = make_oracle(lm, eos_ids=(len(lm.byte_vocab) - 1,))

    async def go():
        params = BeamParams(K=K, prune_threshold=threshold, eos_byte_strings=[EOS_TOKEN])
        beam = await ByteBeamState.initial(lm, params)
        prefilled = await beam.prefill(text)  # no logp_next: extensions evaluated lazily
        beam, _ = await read(beam, text, prune=True)
        return beam, prefilled

    beam, prefilled = asyncio.run(go())
    assert prefilled.logZ <= log(prefix_prob((), text)) + 1e-6
    vocab = [bytes(t) for t in lm.byte_vocab]
    most_ids = max(vocab.count(w) for w in vocab)  # extensions per candidate
    assert all(len(step.candidates) <= K * (1 + most_ids) for step in beam.history[1:])
    assert beam.logZ <= log(prefix_prob((), text)) + 1e-6


@SETTINGS
@given(toy_cases(), st.sampled_from([0.01, 0.1]))
def test_extend_threshold_loses_at_most_its_share_per_byte(case, eps):
    lm, text = case
    prefix_prob, _ = make_oracle(lm, eos_ids=(len(lm.byte_vocab) - 1,))

    async def go():
        params = BeamParams(K=10_000, extend_threshold=eps, eos_byte_strings=[EOS_TOKEN])
        beam = await ByteBeamState.initial(lm, params)
        beam, logps = await read(beam, text)
        return beam, logps

    beam, logps = asyncio.run(go())
    exact = log(prefix_prob((), text))
    assert beam.logZ <= exact + 1e-6
    # each next-byte distribution misses at most eps of the beam's mass
    assert sum(logps) <= exact - len(text) * math.log(1 - eps) + 1e-6


@SETTINGS
@given(toy_cases(prefix_closed=True), st.sampled_from([0.01, 0.1, 0.3]), st.integers(1, 4))
def test_extend_threshold_moves_each_next_byte_distribution_by_at_most_its_share(case, eps, K):
    """Against the same candidates with every extension evaluated: TV <= eps at every byte."""
    lm, text = case
    full = BeamParams(K=K, eos_byte_strings=[EOS_TOKEN])

    async def go():
        params = BeamParams(K=K, extend_threshold=eps, eos_byte_strings=[EOS_TOKEN])
        beam = await ByteBeamState.initial(lm, params)
        distances, skipped = [], 0
        for b in text:
            beam = beam.prune()
            q = await beam.logp_next()  # first, so the reference cannot pre-evaluate for it
            skipped += beam._ext_skipped
            ref = await ByteBeamState(beam.states, full).logp_next()
            distances.append(0.5 * np.abs(np.exp(q.ps) - np.exp(ref.ps)).sum())
            beam = await (beam << b)
        return distances, skipped

    distances, skipped = asyncio.run(go())
    assert max(distances) <= eps + 1e-9
    if not skipped:
        assert max(distances) <= 1e-9  # nothing skipped: the same distribution


def test_eos_probability_at_the_start_is_the_eos_token_probability():
    lm = ToyLM([b"a", b"ab", b"b", EOS_TOKEN], seed=3, eos=EOS_TOKEN)

    async def go():
        beam = await ByteBeamState.initial(lm, BeamParams(K=5, eos_byte_strings=[EOS_TOKEN]))
        return await beam.logp_next()

    q = asyncio.run(go())
    want = math.exp(float(lm.next_token_logprobs_sync(())[3]))
    assert q.prob(257) == pytest.approx(want, rel=1e-6)


def test_without_eos_tokens_eos_has_probability_zero():
    lm = ToyLM([b"a", b"ab", b"b", EOS_TOKEN], seed=3, eos=EOS_TOKEN)

    async def go():
        beam = await ByteBeamState.initial(lm, BeamParams(K=5))
        beam = await (beam << ord("a"))
        return [await beam.logp_next(), await (await (beam << ord("b"))).logp_next()]

    after_a, after_ab = asyncio.run(go())
    for q in (after_a, after_ab):
        assert q.prob(257) == 0.0
        assert q.total() == pytest.approx(1.0)


def test_after_eos_the_beam_is_terminated():
    lm = ToyLM([b"a", b"ab", b"b", EOS_TOKEN], seed=3, eos=EOS_TOKEN)

    async def go():
        beam = await ByteBeamState.initial(lm, BeamParams(K=5, eos_byte_strings=[EOS_TOKEN]))
        beam = await (beam << ord("a"))
        q = await beam.logp_next()
        before = beam.logZ
        ended = await (beam << 257)
        assert ended.terminated
        assert ended.logZ == pytest.approx(before + q[257], abs=1e-6)
        after = await (ended << ord("a"))  # as genlm-bytes: an empty beam, not an error
        assert len(after) == 0
        with pytest.raises(EmptyBeamError, match="EOS"):
            await after.logp_next()  # using it says why it is empty
        with pytest.raises(EmptyBeamError, match="EOS"):
            await (after.prune() << ord("a"))
        with pytest.raises(EmptyBeamError):
            await ended.logp_next()

    asyncio.run(go())


@pytest.mark.parametrize("bad", [-1, 256, 258, 1000, "a", b"a", 1.0, None])
def test_reading_a_non_byte_raises_value_error(bad):
    lm = ToyLM([b"a", b"b"], seed=0)

    async def go():
        beam = await ByteBeamState.initial(lm, BeamParams(K=2))
        await (beam << bad)

    with pytest.raises(ValueError, match="byte"):
        asyncio.run(go())


@pytest.mark.parametrize("bad", [[97, 97, 300], [97, 98, None], [97, 257], 7, None])
def test_prefill_checks_every_byte_before_any_lm_call(bad):
    lm = ToyLM([b"a", b"b"], seed=0)

    async def go():
        beam = await ByteBeamState.initial(lm, BeamParams(K=2))
        queries = lm.stats["queries"]
        with pytest.raises(ValueError, match="byte|prefill") as err:
            await beam.prefill(bad)
        assert "range(0, 256)" not in str(err.value)  # bytes([257]) deep inside healing
        return queries

    queries = asyncio.run(go())
    assert lm.stats["queries"] == queries


@pytest.mark.parametrize(
    "kwargs",
    [
        {"K": 0},
        {"K": -3},
        {"K": 2.5},
        {"K": 2, "prune_threshold": -0.1},
        {"K": 2, "prune_threshold": 1.0},
        {"K": 2, "extend_threshold": -1e-3},
        {"K": 2, "heal_max_backoff": -1},
        {"K": 2, "heal_max_splits": 1.5},
    ],
)
def test_bad_beam_params_raise_value_error(kwargs):
    with pytest.raises(ValueError):
        BeamParams(**kwargs)


def test_all_lm_calls_of_a_step_are_issued_concurrently():
    class Slow(ToyLM):
        in_flight = 0
        most = 0

        async def next_token_logprobs(self, token_ids):
            Slow.in_flight += 1
            Slow.most = max(Slow.most, Slow.in_flight)
            await asyncio.sleep(0.001)
            Slow.in_flight -= 1
            return self.next_token_logprobs_sync(token_ids)

    lm = Slow([b"a", b"aa", b"aaa", b"b"], seed=1)

    async def go():
        beam = await ByteBeamState.initial(lm, BeamParams(K=100))
        beam, _ = await read(beam, b"aaaa")
        return beam

    beam = asyncio.run(go())
    widest = max(step.lm_calls + step.lm_calls_next for step in beam.history)
    assert widest >= 3
    assert Slow.most == widest


def test_greedy_follows_the_argmax_of_logp_next():
    lm = ToyLM([b"a", b"b", b"ab", b"ba"], seed=7)

    async def go():
        beam = await ByteBeamState.initial(lm, BeamParams(K=4))
        out = await beam.greedy(b"a", 4)
        state, manual = await beam.prefill(b"a"), b"a"
        for _ in range(4):
            q = await state.logp_next()
            b = int(np.argmax(q.ps))
            manual += bytes([b])
            state = await (state.prune() << b)
        return out, manual

    out, manual = asyncio.run(go())
    assert out == manual
    assert len(out) == 5


def test_sample_draws_only_possible_bytes():
    lm = ToyLM([b"a", b"b", b"ab"], seed=2)

    async def go():
        beam = await ByteBeamState.initial(lm, BeamParams(K=3))
        return await beam.sample(b"", 6)

    assert set(asyncio.run(go())) <= set(b"ab")


@SETTINGS
@given(toy_cases(prefix_closed=True), st.integers(1, 4))
def test_prefill_skips_only_extensions_that_pruning_would_drop(case, K):
    lm, text = case

    async def go():
        params = BeamParams(K=K, eos_byte_strings=[EOS_TOKEN])
        start = await ByteBeamState.initial(lm, params)
        lazy = await start.prefill(text)
        full = start
        for b in text:  # logp_next evaluates every extension before each byte
            full = full.prune()
            await full.logp_next()
            full = await (full << b)
        return lazy, full

    lazy, full = asyncio.run(go())

    def top(beam):
        return [(s.lm_state.context, s.node, round(s.weight, 9)) for s in beam.prune().states]

    assert top(lazy) == top(full)
    lazy_calls = sum(s.lm_calls for s in lazy.history)
    full_calls = sum(s.lm_calls + s.lm_calls_next for s in full.history)
    assert lazy_calls <= full_calls


def _two_equal_ids():
    """Two token ids spell "a" (equally likely), so every "a" splits the beam in equal halves."""
    return ToyLM([b"a", b"a", EOS_TOKEN], logprobs_fn=lambda ctx: [0.0, 0.0, 0.0], eos=EOS_TOKEN)


def test_prune_keeps_the_heaviest_candidate_when_no_share_exceeds_the_threshold():
    lm = _two_equal_ids()

    async def go():
        beam = await ByteBeamState.initial(lm, BeamParams(K=5, eos_byte_strings=[EOS_TOKEN]))
        beam = await beam.prefill(b"aa")
        assert [round(math.exp(s.weight - beam.logZ), 9) for s in beam] == [0.5, 0.5]
        strict = ByteBeamState(
            beam.states, BeamParams(K=5, prune_threshold=0.6, eos_byte_strings=[EOS_TOKEN])
        )
        pruned = strict.prune()
        return pruned, await pruned.logp_next()

    pruned, q = asyncio.run(go())
    assert len(pruned) == 1  # not 0: an empty beam reads nothing
    # After a|a (either id): the "a" in progress ends, then a (2/3) or EOS (1/3).
    assert q.prob(ord("a")) == pytest.approx(2 / 3) and q.prob(257) == pytest.approx(1 / 3)


def test_extensions_skipped_by_the_threshold_are_evaluated_when_nothing_else_continues():
    # After "a" the only continuations are the two extensions a0| and a1|, each of
    # share 0.5 <= prune_threshold: logp_next was all NaN (with a numpy warning),
    # and reading a byte fell back on healing (one candidate, a lower logZ).
    lm = _two_equal_ids()
    prefix_prob, _ = make_oracle(lm, eos_ids=(2,))
    params = BeamParams(K=5, prune_threshold=0.6, eos_byte_strings=[EOS_TOKEN])

    async def go():
        beam = await ByteBeamState.initial(lm, params)
        beam = await (beam << ord("a"))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            q = await beam.logp_next()
        read = await (await (await ByteBeamState.initial(lm, params)).prefill(b"a") << ord("a"))
        return q, read

    q, read = asyncio.run(go())
    assert q.prob(ord("a")) == pytest.approx(2 / 3) and q.prob(257) == pytest.approx(1 / 3)
    assert read.logZ == pytest.approx(log(prefix_prob((), b"aa")))
    assert [row.status for row in read.last_step.candidates] == ["extended", "extended"]


async def test_eos_without_configured_eos_tokens_says_so_and_makes_no_lm_call():
    lm = ToyLM([b"a", b"b", b"ab"], seed=0)
    beam = await (await ByteBeamState.initial(lm, BeamParams(K=3)) << ord("a"))
    assert (await beam.logp_next()).prob(257) == 0.0
    queries = lm.stats["queries"]
    empty = await (beam << 257)
    assert len(empty) == 0
    with pytest.raises(EmptyBeamError, match="no EOS tokens are configured"):
        await empty.logp_next()
    assert lm.stats["queries"] == queries  # no healing replay was tried


async def test_cleanup_of_one_beam_leaves_another_beams_requests_alone():
    # Beams over one model share one trie: stopping it for one beam cancelled the
    # other's queued mass request (a CancelledError in a task nobody cancelled).
    lm = ToyLM([b"a", b"ab", b"b", EOS_TOKEN], seed=3, eos=EOS_TOKEN)
    params = BeamParams(K=5, eos_byte_strings=[EOS_TOKEN])
    other = await ByteBeamState.initial(lm, params)
    for ticks in range(4):
        beam = await (await ByteBeamState.initial(lm, params) << ord("a"))
        assert beam.trie is other.trie
        task = asyncio.create_task(beam.logp_next())
        for _ in range(ticks):
            await asyncio.sleep(0)
        await other.cleanup()
        q = await asyncio.wait_for(task, 5)
        assert q.total() == pytest.approx(1.0)


@pytest.mark.parametrize(
    "eos, match",
    [
        (b"$", "a list of tokens"),  # list(b"$") == [36]: token id 36, silently
        ("$", "a list of tokens"),
        (["$"], "str"),
        ([1.0], "float"),
        ([True], "bool"),
    ],
)
def test_eos_tokens_that_are_not_a_list_of_tokens_raise_naming_the_problem(eos, match):
    with pytest.raises(ValueError, match=match):
        BeamParams(K=2, eos_byte_strings=eos)


async def test_eos_tokens_as_bytes_bytearray_token_or_id_are_the_same_eos():
    from genlm_lab.tokenization import Token

    # 40 tokens, so that a single byte string read as ids (b"$" -> [36]) is in range
    vocab = [b"a", b"ab", b"b", EOS_TOKEN] + [bytes([0x41 + i]) for i in range(36)]
    lm = ToyLM(vocab, seed=3, eos=EOS_TOKEN)
    want = math.exp(float(lm.next_token_logprobs_sync(())[3]))
    for eos in ([EOS_TOKEN], [bytearray(EOS_TOKEN)], [Token(3, EOS_TOKEN)], [3], (3,)):
        beam = await ByteBeamState.initial(lm, BeamParams(K=3, eos_byte_strings=eos))
        assert beam.trie.trie.eos_token_ids == [3]
        assert (await beam.logp_next()).prob(257) == pytest.approx(want, rel=1e-6)


@pytest.mark.parametrize("eot_token", [256, "EOT"])
async def test_a_custom_eot_token_gives_the_same_beam_as_the_default(eot_token):
    # The beam found end-of-token edges by the default key (None) only: with another
    # key it never committed a token, so "a" then "b" read as one token "ab" only.
    lm = ToyLM([b"a", b"ab", b"b", b"ba", b"b", EOS_TOKEN], seed=3, eos=EOS_TOKEN)
    params = BeamParams(K=10, eos_byte_strings=[EOS_TOKEN])
    text = b"abab"

    async def run(trie_opts):
        beam = await ByteBeamState.initial(lm, params, trie_opts=trie_opts)
        beam, logps = await read(beam, text)
        return beam.logZ, logps, (await beam.logp_next()).ps

    want = await run(None)
    got = await run({"eot_token": eot_token})
    prefix_prob, _ = make_oracle(lm, eos_ids=(5,))
    assert got[0] == pytest.approx(log(prefix_prob((), text)), abs=1e-6)
    assert got[0] == pytest.approx(want[0], abs=1e-9)
    np.testing.assert_allclose(got[1], want[1], atol=1e-9)
    np.testing.assert_allclose(got[2], want[2], atol=1e-9)


async def test_an_empty_token_never_puts_mass_on_the_eot_slot():
    # An extension at the root could end an empty token: its EOT mass reached the
    # beam's distribution (slot 256, not a byte), and greedy stopped there early.
    lm = ToyLM([b"", b"a", b"b"], logprobs_fn=lambda ctx: [2.0, 0.0, -1.0])
    beam = await ByteBeamState.initial(lm, BeamParams(K=5))
    for b in b"ab":
        q = await beam.logp_next()
        assert q.prob(256) == 0.0
        assert q.total() == pytest.approx(1.0)
        beam = await (beam.prune() << b)
    assert len(await beam.greedy(b"", 4)) == 4


async def test_greedy_and_sample_take_text_like_prefill_and_check_steps():
    lm = ToyLM([b"a", b"b", b"ab", b"ba"], seed=7)
    beam = await ByteBeamState.initial(lm, BeamParams(K=4))
    assert await beam.greedy("ab", 3) == await beam.greedy(b"ab", 3)
    assert (await beam.sample("ab", 2)).startswith(b"ab")
    for bad in (-1, 2.5, "3", None):
        with pytest.raises(ValueError, match="steps"):
            await beam.greedy(b"a", bad)
    with pytest.raises(ValueError, match="context"):
        await beam.greedy(7, 2)


async def test_greedy_stops_at_eos_without_appending_it():
    lm = ToyLM([b"a", b"b", EOS_TOKEN], logprobs_fn=lambda ctx: [0.0, -1.0, 5.0 * (len(ctx) >= 2)])
    beam = await ByteBeamState.initial(lm, BeamParams(K=4, eos_byte_strings=[EOS_TOKEN]))
    assert await beam.greedy(b"", 10) == b"aa"  # then EOS is the most likely slot


@pytest.mark.parametrize("threshold", [0.0, 0.3])
async def test_extend_returns_the_materialized_extensions_above_the_threshold(threshold):
    # The seed's ByteBeamState.extend(logZ): shares are taken of logZ plus every
    # extension's weight.
    lm = ToyLM([b"a", b"ab", b"b", b"ba", b"a", EOS_TOKEN], seed=4, eos=EOS_TOKEN)
    params = BeamParams(K=5, prune_threshold=threshold, eos_byte_strings=[EOS_TOKEN])
    beam = await (await ByteBeamState.initial(lm, params) << ord("a"))
    cands = [e for s in beam.states for e in s.extensions()]
    assert len(cands) == 2  # the two ids of "a"
    logZ = beam.logZ
    total = np.logaddexp.reduce([logZ] + [e.weight for e in cands])
    want = [e for e in cands if math.exp(e.weight - total) > threshold]
    got = await beam.extend(logZ)
    assert [id(e) for e in got] == [id(e) for e in want]
    assert all(e.materialized for e in got)


@SETTINGS
@given(
    st.lists(st.text(alphabet="ab$", min_size=2, max_size=3), max_size=6, unique=True),
    st.integers(0, 10_000),
    st.text(alphabet="ab$", min_size=1, max_size=4),
    st.sampled_from([b"$", b"$$"]),
)
def test_exact_when_eos_bytes_start_or_occur_in_other_tokens(words, seed, text, eos):
    """EOS tokens that are prefixes of other tokens ("$" and "$a"): their mass is EOS only."""
    vocab = sorted({w.encode() for w in words} | {b"a", b"b", b"$", eos})
    lm = ToyLM(vocab, seed=seed, eos=eos)
    eos_ids = (vocab.index(eos),)
    prefix_prob, end_prob = make_oracle(lm, eos_ids=eos_ids)
    text = text.encode()
    exact = prefix_prob((), text)

    async def go():
        beam = await ByteBeamState.initial(lm, BeamParams(K=10_000, eos_byte_strings=[eos]))
        if exact == 0:  # no tokenization without EOS tokens spells text: empty, said clearly
            with pytest.raises(EmptyBeamError):  # at the byte after, or at logp_next
                ended, _ = await read(beam, text)
                assert len(ended) == 0  # `<<` returns the empty beam (genlm-bytes)
                await ended.logp_next()
            return None
        beam, logps = await read(beam, text)
        return beam, logps, await beam.logp_next()

    out = asyncio.run(go())
    if out is not None:
        beam, logps, q = out
        assert beam.logZ == pytest.approx(log(exact), abs=1e-6)
        assert sum(logps) == pytest.approx(beam.logZ, abs=1e-6)
        assert q.prob(257) == pytest.approx(end_prob((), text) / exact, abs=1e-6)


@pytest.mark.gpu
@SETTINGS
@given(toy_cases())
def test_on_a_cuda_trie_logz_still_equals_the_exact_prefix_probability(case):
    lm, text = case
    prefix_prob, _ = make_oracle(lm, eos_ids=(len(lm.byte_vocab) - 1,))

    async def go():
        params = BeamParams(K=10_000, eos_byte_strings=[EOS_TOKEN])
        beam = await ByteBeamState.initial(lm, params, trie_opts={"device": "cuda"})
        assert beam.states[0].trie.trie.device.type == "cuda"
        beam, _ = await read(beam, text)
        return beam

    beam = asyncio.run(go())
    assert beam.logZ == pytest.approx(log(prefix_prob((), text)), abs=1e-6)
