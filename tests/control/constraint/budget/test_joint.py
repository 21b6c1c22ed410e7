"""A product's budget: one completion must end every factor, checked against brute force.

Each factor fitting on its own is not enough (`[ab]*c` and `a*b[abc]*` each
end `a` in two tokens, together in three), so a run's budget also asks the
product's finisher. On small vocabularies every live context of the product
is enumerated (`live_contexts`), and the budget must keep exactly those that
some completion of at most the tokens left ends.
"""

from __future__ import annotations

import asyncio

import pytest

from genlm_lab.control import AWRS, BoolCFG, BoolFSA, BoolPredicate, JsonSchema
from genlm_lab.control.constraint.budget import (
    AutomatonDistance,
    JointSearch,
    fit_check_for,
    joint_fit_check,
)
from genlm_lab.control.constraint.regular import ByteDfa, regex_dfa
from genlm_lab.control.inference.budgets import budget_for
from tests.control._toys import live_contexts, toy_llm

ABC = [b"a", b"b", b"ab", b"c", b".", b"<eos>"]
JSON_VOCAB = [b'"', b"a", b"b", b"ab", b'a"', b"<eos>"]


def run(coro):
    return asyncio.run(coro)


def _regex(llm, pattern):
    return BoolFSA.from_regex(pattern).coerce(llm, f=b"".join)


PRODUCTS = {
    "automata": (ABC, lambda llm: (_regex(llm, r"[ab]*c"), _regex(llm, r"a*b[abc]*")), [3, 4]),
    "automaton-lark": (
        ABC,
        lambda llm: (
            _regex(llm, r"a*(c|b\.c)"),
            BoolCFG.from_lark('start: "a"* "b" x\nx: "c" | "." x').coerce(llm, f=b"".join),
        ),
        [4, 5],
    ),
    "json-regex": (
        JSON_VOCAB,
        lambda llm: (
            JsonSchema({"type": "string", "pattern": "^a+$"}).coerce(llm, f=b"".join),
            _regex(llm, r'"a(b|aaa)"'),
        ),
        [5, 6],
    ),
}


async def _kept(budget, live) -> dict[tuple, bool]:
    return {c: await budget.ends_in_time(list(c)) for c in live}


@pytest.mark.parametrize("kind", list(PRODUCTS))
def test_the_product_keeps_exactly_the_contexts_one_completion_ends_in_time(kind):
    vocab, make, sizes = PRODUCTS[kind]
    llm = toy_llm(vocab=vocab)
    first, second = make(llm)
    product = first * second
    loose, seen = 0, set()
    for max_tokens in sizes:
        live = run(live_contexts(product, max_tokens))
        seen |= set(live.values())
        budget = budget_for(AWRS(llm, product), max_tokens)
        assert budget.joint is not None
        assert run(_kept(budget, live)) == live  # nothing set aside, nothing left over
        assert budget.stats()[budget.joint_name]["unproven"] == 0
        # each factor on its own keeps some context that no completion ends in time
        for context, ends in live.items():
            left = max_tokens - len(context)
            alone = [run(fit_check_for(f).fits(list(context), left)) for f in (first, second)]
            loose += all(alone) and not ends
    assert seen == {True, False}  # both kinds of context occur
    assert loose > 0


def test_automata_join_into_one_exact_automaton():
    llm = toy_llm(vocab=ABC)
    first, second = _regex(llm, r"[ab]*c"), _regex(llm, r"a*b[abc]*")
    joint = joint_fit_check([fit_check_for(first), fit_check_for(second)])
    assert isinstance(joint, AutomatonDistance) and joint.exact
    assert joint_fit_check([fit_check_for(first), fit_check_for(second)]) is joint  # cached
    assert fit_check_for(first).needed([b"a"]) == 2  # c EOS
    assert fit_check_for(second).needed([b"a"]) == 2  # b EOS
    assert joint.needed([b"a"]) == 3  # b c EOS
    empty = joint_fit_check([fit_check_for(first), fit_check_for(_regex(llm, r"a+"))])
    assert empty.needed([]) > 100  # nothing is in both


def test_intersecting_automata_reads_both_languages():
    left, right = regex_dfa(r"(ab|c)+"), regex_dfa(r"[abc]*c[abc]*")
    both = left.intersect(right)
    assert isinstance(both, ByteDfa)
    for text in [b"abc", b"cab", b"c", b"ab", b"abab", b"abcc", b"ac", b""]:
        expected = (
            left.final[left.run(left.start, text)] and right.final[right.run(right.start, text)]
        )
        assert bool(both.final[both.run(both.start, text)]) == bool(expected)


def test_a_large_vocabulary_is_searched_only_with_two_tokens_left():
    vocab = [bytes([b]) for b in b"abc."] + [b"x" * n for n in range(1, 70)] + [b"<eos>"]
    llm = toy_llm(vocab=vocab)
    first = _regex(llm, r"[abx]*c")
    second = BoolCFG.from_lark('start: "a"* "b" /[abcx]*/').coerce(llm, f=b"".join)
    joint = joint_fit_check([fit_check_for(first), fit_check_for(second)])
    assert isinstance(joint, JointSearch) and not joint.small
    assert not run(joint.fits([b"a"], 2))  # "bc" is two tokens: decided from the enders
    assert run(joint.fits([b"a", b"b"], 2))  # "c"
    assert run(joint.fits([b"a"], 3))  # too far to search here: kept, unproven
    assert joint.stats == {"kept": 1, "refused": 1, "unproven": 1}


def test_a_factor_without_masks_gets_no_joint_search():
    llm = toy_llm(vocab=ABC)
    check = BoolPredicate(lambda t: True, lambda t: t.endswith(b"c")).coerce(llm, f=b"".join)
    assert joint_fit_check([fit_check_for(_regex(llm, r"[ab]*c")), fit_check_for(check)]) is None
