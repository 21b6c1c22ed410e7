"""goal_inference.grammar: lark's LALR parser and the compiled constraint agree on goals and take every gold one."""

from __future__ import annotations

import random
from functools import lru_cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lark import Lark
from lark.exceptions import LarkError

from genlm_lab.control import BoolCFG
from genlm_lab.eval.domains.goal_inference.domain import load_instances
from genlm_lab.eval.domains.goal_inference.grammar import goal_grammar
from genlm_lab.eval.domains.goal_inference.pddl import parse_goal

BLOCKS = ("b1", "b2", "b3")


@lru_cache(maxsize=16)
def _lalr(grammar: str) -> Lark:
    return Lark(grammar, parser="lalr", lexer="basic")


def _lark_accepts(grammar: str, text: str) -> bool:
    try:
        _lalr(grammar).parse(text)
        return True
    except LarkError:
        return False


async def _cfg_accepts(grammar: str, text: str) -> bool:
    return await BoolCFG.from_lark(grammar).complete(list(text.encode())) == 0.0


async def test_every_shipped_gold_goal_is_accepted():
    instances = load_instances()
    refused = []
    for inst in instances:
        grammar = goal_grammar(inst["blocks"])
        if not _lark_accepts(grammar, inst["gold"]):
            refused.append(("lark", inst["instance_id"]))
        if not await _cfg_accepts(grammar, inst["gold"]):
            refused.append(("constraint", inst["instance_id"]))
    assert len(instances) >= 200 and refused == []
    assert {len(inst["blocks"]) for inst in instances} == set(range(3, 10))


def _write(facts, rng: random.Random) -> str:
    """A goal with random (legal) blanks: one between words, none or one next to parentheses."""

    def blank(needed: bool = False) -> str:
        return " " if needed else rng.choice(["", " "])

    body = "".join(f"{blank()}({blank()}{blank(True).join(f)}{blank()})" for f in facts)
    return f"({blank()}:goal{blank()}({blank()}and{body}{blank()}){blank()})"


_FACT = st.one_of(
    st.sampled_from([("arm-empty",)]),
    st.tuples(st.sampled_from(["on-table", "clear", "holding"]), st.sampled_from(BLOCKS)),
    st.tuples(st.just("on"), st.sampled_from(BLOCKS), st.sampled_from(BLOCKS)).filter(
        lambda f: f[1] != f[2]
    ),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(_FACT, min_size=1, max_size=5), st.integers(0, 10**6))
async def test_written_goals_are_accepted_and_parse_back(facts, seed):
    text = _write(facts, random.Random(seed))
    grammar = goal_grammar(BLOCKS)
    assert _lark_accepts(grammar, text), text
    assert await _cfg_accepts(grammar, text), text
    assert parse_goal(text, BLOCKS) == facts


REFUSED = [
    "(:goal (and))",  # no fact
    "(:goal (and (on b1 b1)))",  # a block on itself
    "(:goal (and (on b1 b4)))",  # not a block of this problem
    "(:goal (on b1 b2))",  # no `and`
    "(:goal (and (onb1 b2)))",  # words run together
    "(:goal (and (clear b1) (ontable b2)))",  # not a predicate
    "(:goal (and (clear b1 b2)))",  # wrong arity
    "(:goal (and (not (clear b1))))",  # negation
    "(:goal (and (clear b1)\n))",  # answers are one line
    "(:goal (and (clear  b1)))",  # one space between words
    "(:goal (and (clear b1))",  # unclosed
]


@pytest.mark.parametrize("text", REFUSED)
async def test_malformed_goals_are_refused_by_both(text):
    grammar = goal_grammar(BLOCKS)
    assert not _lark_accepts(grammar, text)
    assert not await _cfg_accepts(grammar, text)


def test_bad_block_lists_raise():
    for bad in (["b1"], ["b1", "b1"], ["B1", "b2"], ["b1", "and"], ["b 1", "b2"]):
        with pytest.raises(ValueError):
            goal_grammar(bad)
    assert "b9" in goal_grammar([f"b{i}" for i in range(1, 10)])
