"""coerce: the byte-trie walk and the native token masks equal brute-force scores."""

from __future__ import annotations

import asyncio
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genlm_lab.backend import ToyLM
from genlm_lab.control import WFSA, BoolFSA, BoolPredicate, Coerced, PromptedLLM, coerce


def run(coro):
    return asyncio.run(coro)


async def brute_force_next(potential, context):
    """prefix(x + y) - prefix(x) for every token y, complete(x) - prefix(x) for EOS."""
    base = await potential.prefix(context)
    out = []
    for token in potential.vocab:
        out.append(await potential.prefix([*context, token]) - base)
    out.append(await potential.complete(context) - base)
    return np.array(out)


token_lists = st.lists(
    st.binary(min_size=1, max_size=3).map(lambda b: bytes(c % 4 + 97 for c in b)),
    min_size=2,
    max_size=8,
    unique=True,
)


@settings(max_examples=40, deadline=None)
@given(tokens=token_lists, pattern=st.sampled_from(["(ab|c)*", "a+b?c?", "(a|b)(c|d)*", "d?a*"]))
def test_native_masks_and_trie_walk_equal_brute_force(tokens, pattern):
    fsa = BoolFSA.from_regex(pattern)
    fast = coerce(fsa, tokens)
    slow = Coerced(fsa, tokens)
    assert type(fast).__name__ == "TokenConstraint"
    contexts = [[], [tokens[0]], [tokens[1], tokens[0]], [tokens[-1]]]
    for context in contexts:
        if run(slow.prefix(context)) == -math.inf:
            assert run(fast.prefix(context)) == -math.inf
            continue
        expected = run(brute_force_next(slow, context))
        np.testing.assert_array_equal(run(slow.logw_next(context)).weights, expected)
        np.testing.assert_array_equal(run(fast.logw_next(context)).weights, expected)


def test_a_vocabulary_seen_before_shares_its_byte_trie_and_each_potential_its_weights():
    tokens = [b"ab", b"c", b"abc", b"ca"]
    first = Coerced(BoolFSA.from_regex("(ab|c)*"), tokens)
    second = Coerced(BoolFSA.from_regex("c?a*b?"), list(tokens))
    assert second._trie is first._trie and first.spawn()._trie is first._trie
    # The same bytes cut into other tokens are another vocabulary, with a trie of its own.
    recut = Coerced(BoolFSA.from_regex("(ab|c)*"), [b"a", b"bc", b"abc", b"ca"])
    assert recut._trie is not first._trie
    for coerced in (first, second, recut):
        for context in ([], [coerced.vocab[1]]):
            if run(coerced.prefix(context)) == -math.inf:
                continue
            np.testing.assert_array_equal(
                run(coerced.logw_next(context)).weights,
                run(brute_force_next(coerced, context)),
            )


def test_weighted_potentials_coerce_by_summing_bytes():
    wfsa = WFSA()
    wfsa.add_I(0)
    wfsa.add_arc(0, 97, 0, 0.3)
    wfsa.add_arc(0, 98, 1, 0.5)
    wfsa.add_F(0, 0.2)
    wfsa.add_F(1, 1.0)
    tokens = [b"a", b"ab", b"b", b"aa", b"ba"]
    coerced = wfsa.coerce(tokens)
    for context in [[], [b"a"], [b"aa"]]:
        np.testing.assert_allclose(
            run(coerced.logw_next(context)).weights,
            run(brute_force_next(coerced, context)),
            atol=1e-12,
        )


def test_a_python_predicate_coerces_onto_an_llm_exactly():
    llm = PromptedLLM(ToyLM([b"a", b"b", b"ab", b"ba", b"$"], eos=b"$"))
    no_bb = BoolPredicate(lambda text: b"bb" not in text, name="no bb")
    coerced = no_bb.coerce(llm, f=b"".join)
    assert coerced.name == "no bb"
    for context in [[], [llm.vocab[1]], [llm.vocab[2]]]:
        np.testing.assert_array_equal(
            run(coerced.logw_next(context)).weights, run(brute_force_next(coerced, context))
        )


def test_custom_f_and_pruning():
    fsa = BoolFSA.from_regex("ab")
    words = ["a", "b", "xyz"]
    coerced = fsa.coerce(words, f=lambda ctx: "".join(ctx).encode(), prune=True)
    w = run(coerced.logw_next([]))
    assert w["a"] == 0 and w["b"] == -math.inf and w["xyz"] == -math.inf
    ab = WFSA(vocabulary=[97, 98])  # a potential over the bytes a and b only
    ab.add_I(0)
    ab.add_arc(0, 97, 0, 0.25)
    ab.add_arc(0, 98, 0, 0.25)
    ab.add_F(0)
    assert sorted(ab.vocab) == [97, 98]
    assert Coerced(ab, [b"a", b"ac", b"ba"]).vocab == [b"a", b"ba"]  # b"ac" holds a c
    kept = Coerced(ab, [b"a", b"ac"], prune=False)
    assert kept.vocab == [b"a", b"ac"] and run(kept.logw_next([]))[b"ac"] == -math.inf
    with pytest.raises(ValueError, match="no token of the new vocabulary"):
        ab.coerce([b"ac"])


def test_the_new_tokens_go_by_either_name_once():
    fsa = BoolFSA.from_regex("a(b|c)")
    first_byte = lambda ctx: [t[0] for t in ctx]  # noqa: E731 - genlm-control's example
    by_name = Coerced(fsa, target_vocab=[b"ax", b"bx", b"cx"], f=first_byte)
    by_old = Coerced(fsa, vocabulary=[b"ax", b"bx", b"cx"], f=first_byte)
    for c in (by_name, by_old):
        assert c.vocab == [b"ax", b"bx", b"cx"]
        # each weight is the regex's on the first bytes, read independently
        for ctx, text in (([b"ax"], b"a"), ([b"ax", b"cx"], b"ac"), ([b"bx"], b"b")):
            assert run(c.prefix(ctx)) == run(fsa.prefix(text))
            assert run(c.complete(ctx)) == run(fsa.complete(text))
    with pytest.raises(TypeError, match="once"):
        Coerced(fsa, [b"ax"], vocabulary=[b"ax"])
    with pytest.raises(TypeError, match="once"):
        Coerced(fsa)


def test_a_token_outside_the_vocabulary_is_one_value_error():
    coerced = BoolFSA.from_regex("a*").coerce([b"a", b"aa"])
    with pytest.raises(ValueError, match="position 1"):
        run(coerced.prefix([b"a", b"zz"]))
    with pytest.raises(ValueError, match="list of tokens"):
        run(coerced.prefix(b"aa"))
