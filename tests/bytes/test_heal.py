"""Token healing: a pruned beam that dead-ends is repaired with an exact weight."""

from __future__ import annotations

import asyncio
import math

import pytest

from genlm_lab.backend.toy import ToyLM
from genlm_lab.bytes import BeamParams, ByteBeamState, EmptyBeamError, TokenHealer

# "ab" is very likely, so a width-1 beam reads "ab" as one token; then "c" can only
# come from the token "bc", which needs the split a|bc.
VOCAB = [b"a", b"b", b"ab", b"bc"]


def favour_ab(context):
    return [0.0, 0.0, 5.0, 0.0]


def make_lm():
    return ToyLM(VOCAB, logprobs_fn=favour_ab)


async def read(params: BeamParams, text: bytes):
    beam = await ByteBeamState.initial(make_lm(), params)
    return await beam.prefill(text)


def test_dead_end_without_healing_raises_naming_byte_and_position():
    with pytest.raises(EmptyBeamError) as err:
        asyncio.run(read(BeamParams(K=1, heal=False), b"abc"))
    assert isinstance(err.value, ValueError)
    assert err.value.byte == ord("c") and err.value.position == 2
    assert "'c'" in str(err.value) and "position 2" in str(err.value)


def test_healing_completes_the_text_with_the_weight_of_its_token_path():
    beam = asyncio.run(read(BeamParams(K=1, heal=True), b"abc"))
    (state,) = beam.states
    assert state.lm_state.context == (0,)  # committed "a"
    assert state.partial == b"bc"
    lm = make_lm()
    want = float(lm.next_token_logprobs_sync(())[0]) + float(lm.next_token_logprobs_sync((0,))[3])
    assert state.weight == pytest.approx(want, abs=1e-6)
    step = beam.last_step
    assert [row.status for row in step.candidates] == ["healed"]
    (event,) = step.healing
    assert event.success and event.backoff == 1 and event.committed == [0]
    assert event.partial == b"ab"


def test_healed_beam_keeps_reading_exactly():
    lm = make_lm()

    async def go():
        beam = await ByteBeamState.initial(lm, BeamParams(K=1))
        beam = await beam.prefill(b"abc")
        return await (beam << ord("a"))

    beam = asyncio.run(go())
    (state,) = beam.states
    p = [math.exp(float(x)) for x in lm.next_token_logprobs_sync(())]
    q = [math.exp(float(x)) for x in lm.next_token_logprobs_sync((0,))]
    r = [math.exp(float(x)) for x in lm.next_token_logprobs_sync((0, 3))]
    # a | bc | then a token starting with "a" ("a" or "ab")
    assert state.weight == pytest.approx(math.log(p[0] * q[3] * (r[0] + r[2])), abs=1e-6)


def test_healing_respects_max_backoff():
    with pytest.raises(EmptyBeamError, match="healing"):
        asyncio.run(read(BeamParams(K=1, heal_max_backoff=0), b"abc"))


def test_healing_splits_the_replayed_bytes_when_needed():
    # "abcd": a width-1 beam holds "abc" as one token; "d" needs a|b|cd.
    vocab = [b"a", b"b", b"abc", b"cd", b"c"]
    lm = ToyLM(vocab, logprobs_fn=lambda ctx: [0.0, 0.0, 6.0, 0.0, 0.0])

    async def go(splits):
        beam = await ByteBeamState.initial(lm, BeamParams(K=1, heal_max_splits=splits))
        return await beam.prefill(b"abcd")

    beam = asyncio.run(go(None))
    (state,) = beam.states
    assert bytes(b"".join(state.lm_state.tokens)) + state.partial == b"abcd"
    (event,) = beam.last_step.healing
    assert len(event.committed) >= 2
    with pytest.raises(EmptyBeamError):
        asyncio.run(go(0))


def test_token_healer_rejects_negative_limits():
    with pytest.raises(ValueError, match="max_backoff"):
        TokenHealer(max_backoff=-1)


def test_healing_can_end_the_sequence_with_the_exact_weight():
    # Width 1 keeps "ab" inside the token "abc"; EOS then needs the path a|b|EOS.
    # The healer replayed the bytes with bytes([257]) and raised "bytes must be
    # in range(0, 256)" instead.
    lm = ToyLM([b"a", b"abc", b"b", b"$"], logprobs_fn=lambda ctx: [0.0, 3.0, 0.0, 0.0], eos=b"$")

    async def go():
        beam = await ByteBeamState.initial(lm, BeamParams(K=1, eos_byte_strings=[b"$"]))
        beam = await beam.prefill(b"ab")
        assert [s.partial for s in beam.prune().states] == [b"ab"]
        return await (beam.prune() << 257)

    beam = asyncio.run(go())
    (state,) = beam.states
    assert state.terminated and beam.terminated
    assert state.lm_state.context == (0, 2)  # a|b, then EOS
    logp = [
        float(lm.next_token_logprobs_sync(ctx)[t]) for ctx, t in [((), 0), ((0,), 2), ((0, 2), 3)]
    ]
    assert state.weight == pytest.approx(sum(logp), abs=1e-6)
    (event,) = beam.last_step.healing
    assert event.success and event.byte == 257


def test_healing_records_only_the_lm_calls_it_makes():
    """States healing replays from may be computed already: those cost no LM call."""

    async def go():
        lm = make_lm()
        beam = await ByteBeamState.initial(lm, BeamParams(K=1))
        for b in b"abc":
            beam = beam.prune()
            await beam.logp_next()
            beam = await (beam << b)
        return lm, beam

    lm, beam = asyncio.run(go())
    assert any(step.healing for step in beam.history)
    assert sum(s.lm_calls + s.lm_calls_next for s in beam.history) == lm.stats["queries"]


def test_empty_beam_error_survives_pickling():
    import pickle

    err = EmptyBeamError(ord("c"), 2, "healing found no split")
    again = pickle.loads(pickle.dumps(err))
    assert (again.byte, again.position, again.reason, str(again)) == (
        err.byte,
        err.position,
        err.reason,
        str(err),
    )


def test_trie_opts_may_not_set_eos_tokens():
    with pytest.raises(ValueError, match=r"trie_opts may not set eos_tokens.*BeamParams"):
        asyncio.run(ByteBeamState.initial(make_lm(), BeamParams(K=1), {"eos_tokens": [0]}))


# -- genlm-bytes' healer interface: states by their public attributes --------------

HEAL_VOCAB = [b"a", b"a", b"ab", b"x", b"xa"]  # token 1 repeats token 0's bytes


def heal_setup():
    from genlm_lab.bytes import AsyncTokenByteTrie

    lm = ToyLM(HEAL_VOCAB, seed=11)
    trie = AsyncTokenByteTrie.from_vocab(lm.byte_vocab)
    return lm, trie


def prefix_logmass(lm, context, prefix: bytes) -> float:
    """Brute force: log of the probability that the next token starts with `prefix`."""
    p = [math.exp(float(x)) for x in lm.next_token_logprobs_sync(context)]
    return math.log(sum(q for tok, q in zip(HEAL_VOCAB, p, strict=True) if tok.startswith(prefix)))


def token_logp(lm, context, token_id: int) -> float:
    return float(lm.next_token_logprobs_sync(context)[token_id])


class PublicView:
    """Only the attributes genlm-bytes' healer reads; `partial` as a list of ints."""

    def __init__(self, state, partial):
        self.lm_state, self.trie, self.node = state.lm_state, state.trie, state.node
        self.weight, self.mass, self.mode = state.weight, state.mass, state.mode
        self.partial = partial


@pytest.mark.parametrize("as_view", [False, True])
def test_healing_commits_the_first_duplicate_token_with_the_exact_weight(as_view):
    from genlm_lab.bytes import LazyTrieState

    lm, trie = heal_setup()

    async def go():
        s = await LazyTrieState.initial(lm, trie).materialize()
        sa = s << ord("a")
        assert sa << ord("x") is None
        state = PublicView(sa, list(sa.partial)) if as_view else sa
        return await TokenHealer().try_heal(state, ord("x"))

    healed = asyncio.run(go())
    # "a" is tokens 0 and 1: the first end-of-token edge (token 0) is committed
    assert healed.lm_state.context == (0,)
    assert healed.partial == b"x" and healed.partial == [ord("x")]
    want = token_logp(lm, (), 0) + prefix_logmass(lm, (0,), b"x")
    assert healed.weight == pytest.approx(want, abs=1e-6)


def test_healing_a_partial_off_the_trie_backs_off_to_the_part_on_it():
    # genlm-bytes tries every backoff; prefixes that are not trie paths are skipped.
    from genlm_lab.bytes import LazyTrieState

    lm, trie = heal_setup()

    async def go():
        root = await LazyTrieState.initial(lm, trie).materialize()
        # the view claims partial "abz" while sitting at the root ("abz" is no path):
        # only k = 2 ("ab") and k = 1 ("a") are candidates; "ab" then reads "z": no
        bad = PublicView(root, [ord("a"), ord("b"), ord("z")])
        none = await TokenHealer().try_heal(bad, ord("x"))
        # "aba" + "x": commit "ab", replay "a", split a|x (tokens 0 then "x"...)
        ok = await TokenHealer().try_heal(PublicView(root, list(b"aba")), ord("x"))
        return none, ok

    none, ok = asyncio.run(go())
    assert none is None
    # path ab | a | x...: the replayed "a" cannot read "x" (no token "ax"), so it
    # is committed (token 0, the first duplicate) and "x" starts a new token
    assert ok.lm_state.context == (2, 0)
    want = (
        token_logp(lm, (), 2)  # the view's weight is 0 at the root: start weight 0
        + token_logp(lm, (2,), 0)
        + prefix_logmass(lm, (2, 0), b"x")
    )
    assert ok.weight == pytest.approx(want, abs=1e-6)


def test_healing_a_terminated_or_unmaterialized_state_gives_none():
    from genlm_lab.bytes import LazyTrieState

    lm, trie = heal_setup()
    fresh = LazyTrieState.initial(lm, trie)
    assert asyncio.run(TokenHealer().try_heal(fresh, ord("x"))) is None
    sa = asyncio.run(fresh.materialize()) << ord("a")
    assert asyncio.run(TokenHealer().try_heal(sa, ord("x"))) is not None
    done = LazyTrieState(sa.lm_state, trie, sa.node, sa.weight, sa.prob_mass, terminated=True)
    assert asyncio.run(TokenHealer().try_heal(done, ord("x"))) is None
