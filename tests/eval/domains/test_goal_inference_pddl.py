"""goal_inference.pddl: goals read as PDDL reads them, bad ones refused with the problem named."""

from __future__ import annotations

import pytest

from genlm_lab.eval.domains.goal_inference.pddl import (
    format_goal,
    parse_goal,
    problem_text,
    state_facts,
)

BLOCKS = ["b1", "b2", "b3"]


@pytest.mark.parametrize(
    "text",
    [
        "(:goal (and (on b1 b2) (clear b1) (arm-empty)))",
        "(:goal(and(on b1 b2)(clear b1)(arm-empty)))",
        "  ( :GOAL\n ( AND (On B1 b2)\t(clear b1) ( arm-empty ) ) )  ",
        "(and (on b1 b2) (clear b1) (arm-empty))",
    ],
)
def test_spellings_of_one_goal_read_the_same(text):
    assert parse_goal(text, BLOCKS) == [("on", "b1", "b2"), ("clear", "b1"), ("arm-empty",)]


def test_a_bare_fact_and_an_empty_and_are_goals():
    assert parse_goal("(:goal (on-table b3))", BLOCKS) == [("on-table", "b3")]
    assert parse_goal("(:goal (and))", BLOCKS) == []


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "empty"),
        ("(:goal (and (on b1 b2))", "unclosed"),
        ("(:goal (and (on b1 b2))))", "closes nothing"),
        ("(:goal (and (on b1 b2))) (clear b3)", "text after the goal"),
        ("on b1 b2", "parenthesised"),
        ("(:goal (and (on b1 b4)))", "unknown block 'b4'"),
        ("(:goal (and (ontable b1)))", "unknown predicate 'ontable'"),
        ("(:goal (and (on b1)))", "on takes 2 blocks"),
        ("(:goal (and (arm-empty b1)))", "arm-empty takes 0 blocks"),
        ("(:goal (and (not (on b1 b2))))", "'not' is not allowed"),
        ("(:goal (or (on b1 b2) (clear b1)))", "'or' is not allowed"),
        ("(:goal (and (on b1 b2)) (clear b1))", "one formula"),
        ("(:goal (and (on (b1) b2)))", "on takes 2 blocks"),
    ],
)
def test_bad_goals_raise_one_clear_error(text, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        parse_goal(text, BLOCKS)


def test_written_facts_read_back():
    facts = state_facts([["b3", "b1"], ["b2"]])
    assert facts == [
        ("arm-empty",),
        ("on-table", "b3"),
        ("on", "b1", "b3"),
        ("clear", "b1"),
        ("on-table", "b2"),
        ("clear", "b2"),
    ]
    assert parse_goal(format_goal(facts), BLOCKS) == facts
    text = problem_text("p", BLOCKS, facts)
    assert text.count("(") == text.count(")") + 1  # open: the goal and the final ')' follow
    assert "(:objects b1 b2 b3)" in text and "(on b1 b3)" in text and ":goal" not in text
