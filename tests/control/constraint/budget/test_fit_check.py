"""Fit checks: how many tokens a constraint needs to end, against brute force on small vocabularies.

Every context a constraint keeps alive is enumerated up to `max_tokens - 1`
tokens, and whether some completion of at most the tokens left (EOS
included) ends it is computed exactly. `AutomatonDistance` must agree
everywhere (exact); `SearchDistance` must keep every context that can end
(sound), and agree everywhere when its search is not cut short.
"""

from __future__ import annotations

import asyncio

import pytest

from genlm_lab.control import BoolCFG, BoolFSA, BoolPredicate, JsonSchema, PythonRegex
from genlm_lab.control.constraint.budget import (
    AutomatonDistance,
    SearchDistance,
    fit_check_for,
)
from genlm_lab.control.constraint.regular.automata import Automaton
from tests.control._toys import live_contexts, toy_llm

MAIL = [b"a", b"b", b"ab", b"@", b".", b"c", b"<eos>"]
JSON_VOCAB = [b"{", b"}", b'"', b"a", b":", b'{"a":"', b'"}', b"ab", b"<eos>"]
SCHEMA = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}


def run(coro):
    return asyncio.run(coro)


async def _answers(finisher, live: dict[tuple, bool], max_tokens: int) -> dict[tuple, bool]:
    return {c: await finisher.fits(list(c), max_tokens - len(c)) for c in live}


def _automaton() -> Automaton:
    """ab*c over bytes, by hand: 0 -a-> 1 -b-> 1 -c-> 2 (final)."""
    auto = Automaton()
    auto.initial[0] = 1.0
    auto.final[2] = 1.0
    auto.arcs[0].append((ord("a"), 1, 1.0))
    auto.arcs[1].append((ord("b"), 1, 1.0))
    auto.arcs[1].append((ord("c"), 2, 1.0))
    return auto


EXACT = {
    "regex": (lambda: BoolFSA.from_regex(r"[ab]+@(ab|c)+\.c"), [6, 7]),
    "automaton": (lambda: BoolFSA(_automaton()), [3, 5]),
    "python-regex": (lambda: PythonRegex(r"(ab|b)+@c(\.c)?"), [4, 6]),
}


@pytest.mark.parametrize("size", [0, 1])
@pytest.mark.parametrize("kind", list(EXACT))
def test_automaton_distance_keeps_exactly_the_contexts_that_can_end_in_time(kind, size):
    llm = toy_llm(vocab=MAIL)
    make, sizes = EXACT[kind]
    max_tokens = sizes[size]
    constraint = make().coerce(llm, f=b"".join)
    finisher = fit_check_for(constraint)
    assert isinstance(finisher, AutomatonDistance)
    live = run(live_contexts(constraint, max_tokens))
    answers = run(_answers(finisher, live, max_tokens))
    assert answers == live
    assert any(live.values()) and not all(live.values())  # both kinds of context occur


def test_automaton_distance_counts_tokens_not_bytes():
    llm = toy_llm(vocab=MAIL)
    finisher = fit_check_for(BoolFSA.from_regex(r"[ab]+@(ab|c)+\.c").coerce(llm, f=b"".join))
    assert finisher.needed([]) == 6  # a @ c . c EOS
    assert finisher.needed([b"ab", b"@"]) == 4  # c . c EOS
    assert finisher.needed([b"ab", b"@", b"ab", b".", b"c"]) == 1
    assert finisher.needed([b"@"]) > 100  # dead


SEARCHED = {
    "json": (lambda: JsonSchema(SCHEMA), JSON_VOCAB, [5, 6]),
    "lark": (
        lambda: BoolCFG.from_lark('start: "(" start ")" | "ab"'),
        MAIL[:3] + [b"(", b")", b"<eos>"],
        [5, 7],
    ),  # fmt: skip
    "regex-class": (lambda: BoolFSA.from_regex(r"\w+@\w\.c"), MAIL, [6, 7]),
    "predicate": (
        lambda: BoolPredicate(lambda t: b"@" not in t, lambda t: t.endswith(b"c")),
        MAIL,
        [3],
    ),  # fmt: skip
}


@pytest.mark.parametrize("kind", list(SEARCHED))
def test_search_distance_is_sound_and_exact_when_the_search_finishes(kind):
    make, vocab, sizes = SEARCHED[kind]
    llm = toy_llm(vocab=vocab)
    constraint = make().coerce(llm, f=b"".join)
    assert isinstance(fit_check_for(constraint), SearchDistance)
    for max_tokens in sizes:
        live = run(live_contexts(constraint, max_tokens))
        assert any(live.values()) and not all(live.values())
        full = fit_check_for(
            constraint, max_branch=1000, max_nodes=10**6, max_depth=None, masks=True
        )
        assert run(_answers(full, live, max_tokens)) == live  # nothing set aside, nothing left
        if kind != "predicate":  # a small vocabulary: the defaults search it all, exactly
            default = fit_check_for(constraint)
            assert run(_answers(default, live, max_tokens)) == live
            assert default.stats["unproven"] == 0
        small = fit_check_for(constraint, max_branch=2, max_nodes=3, max_depth=None, masks=True)
        cut = run(_answers(small, live, max_tokens))
        assert all(cut[c] for c, ends in live.items() if ends)  # sound: never refuses what ends
        assert small.stats["unproven"] > 0  # and here it could not decide everything


def test_a_regular_lark_grammar_is_refused_far_from_the_end_on_its_relaxation():
    # more tokens than max_branch: the search alone decides nothing three or more tokens out
    junk = [b"x" * n for n in range(1, 70)]
    vocab = [b"[", b"]", b",", b"a", b"bb", b"[a", *junk, b"<eos>"]
    llm = toy_llm(vocab=vocab)
    grammar = 'start: "[" item "," item "," item ("," item)* "]"\nitem: "a" | "bb"'
    constraint = BoolCFG.from_lark(grammar).coerce(llm, f=b"".join)
    finisher = fit_check_for(constraint)
    assert finisher.lower is not None
    plain = fit_check_for(constraint, lower=None)
    for max_tokens in (7, 9):
        live = run(live_contexts(constraint, max_tokens))
        assert any(live.values()) and not all(live.values())
        assert run(_answers(finisher, live, max_tokens)) == live  # exact here
        kept = run(_answers(plain, live, max_tokens))
        assert all(kept[c] for c, ends in live.items() if ends)
    assert plain.stats["unproven"] > 0 and finisher.stats["refused"] > plain.stats["refused"]


def test_a_constraint_without_masks_is_only_asked_to_complete_with_one_token_left():
    llm = toy_llm(vocab=MAIL)
    predicate = BoolPredicate(lambda t: b"@" not in t, lambda t: t.endswith(b"c"))
    finisher = fit_check_for(predicate.coerce(llm, f=b"".join))
    assert not finisher.masks
    assert run(finisher.fits([b"a"], 2))  # could not prove anything: kept
    assert not run(finisher.fits([b"a"], 1))  # only EOS is left and "a" is not complete
    assert run(finisher.fits([b"c"], 1))
    assert finisher.stats == {"kept": 1, "refused": 1, "unproven": 1}


def test_json_finish_is_an_upper_bound_that_saves_the_search():
    llm = toy_llm(vocab=JSON_VOCAB)
    constraint = JsonSchema(SCHEMA).coerce(llm, f=b"".join)
    finisher = fit_check_for(constraint, max_nodes=0)  # no search at all
    assert run(finisher.fits([b'{"a":"', b"ab"], 2))  # '"}' then EOS
    assert run(finisher.fits([b"{"], 3))  # '"a":"' ... the finish proves it: no search needed
    assert not run(finisher.fits([b'{"a":"', b"ab"], 1))  # one token left, not complete
    assert finisher.stats["refused"] == 1


def test_constraints_and_models_get_the_right_finisher():
    llm = toy_llm(vocab=MAIL)
    assert fit_check_for(llm) is None  # not boolean
    regex = BoolFSA.from_regex("a+").coerce(llm, f=b"".join)
    assert fit_check_for(regex) is fit_check_for(regex)  # cached per factor
    assert isinstance(fit_check_for(regex.to_autobatched()), AutomatonDistance)
    assert isinstance(fit_check_for(PythonRegex(r"(a)\1").coerce(llm, f=b"".join)), SearchDistance)
