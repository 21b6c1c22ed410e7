"""goal_inference.semantics: closures and equivalence against every Blocksworld state of 3-5 blocks.

The brute force here is written apart from the package: states are built by
inserting blocks one at a time into towers (each arrangement once), a state's
true facts are read off its towers, and a goal's meaning is the set of
enumerated states whose facts include the goal's.
"""

from __future__ import annotations

import itertools
import random
from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genlm_lab.eval.domains.goal_inference.semantics import (
    closure,
    consistent,
    entails,
    equivalent,
)


def _blocks(n: int) -> tuple[str, ...]:
    return tuple(f"b{i}" for i in range(1, n + 1))


def _arrangements(blocks: tuple[str, ...]) -> list[tuple[tuple[str, ...], ...]]:
    """Every way to put `blocks` into towers (bottom to top), by inserting the last block."""
    if not blocks:
        return [()]
    *rest, new = blocks
    out = []
    for towers in _arrangements(tuple(rest)):
        out.append((*towers, (new,)))
        for i, tower in enumerate(towers):
            for j in range(len(tower) + 1):
                out.append((*towers[:i], tower[:j] + (new,) + tower[j:], *towers[i + 1 :]))
    return out


def _true_facts(towers, held) -> frozenset:
    facts = {("arm-empty",)} if held is None else {("holding", held)}
    for tower in towers:
        facts |= {("on-table", tower[0]), ("clear", tower[-1])}
        facts |= {("on", tower[k + 1], tower[k]) for k in range(len(tower) - 1)}
    return frozenset(facts)


@cache
def _states(n: int) -> list[frozenset]:
    """The true facts of every state of n blocks: arm empty, or one block in hand."""
    blocks = _blocks(n)
    out = [_true_facts(t, None) for t in _arrangements(blocks)]
    for held in blocks:
        rest = tuple(b for b in blocks if b != held)
        out += [_true_facts(t, held) for t in _arrangements(rest)]
    return out


@cache
def _ground(n: int) -> list[tuple]:
    """Every fact over n blocks, (on x x) included (no state has it)."""
    blocks = _blocks(n)
    one = [(p, b) for p in ("on-table", "clear", "holding") for b in blocks]
    return [("arm-empty",), *one, *(("on", x, y) for x in blocks for y in blocks)]


def _meaning(goal, n: int) -> frozenset[int]:
    return frozenset(i for i, facts in enumerate(_states(n)) if set(goal) <= facts)


def _brute_closure(goal, n: int):
    states = [_states(n)[i] for i in _meaning(goal, n)]
    if not states:
        return None
    return frozenset(f for f in _ground(n) if all(f in s for s in states))


def test_the_enumeration_counts_the_known_numbers_of_states():
    # towers of n labelled blocks: 1, 3, 13, 73, 501 (OEIS A000262); plus n ways to hold one
    assert [len(_arrangements(_blocks(n))) for n in range(1, 6)] == [1, 3, 13, 73, 501]
    assert [len(_states(n)) for n in (3, 4, 5)] == [13 + 3 * 3, 73 + 4 * 13, 501 + 5 * 73]
    assert len(set(_states(5))) == len(_states(5))  # no state twice


@pytest.mark.parametrize("n, most", [(3, 3), (4, 2)])
def test_closure_equals_brute_force_on_every_small_goal(n, most):
    """Every goal of up to `most` distinct facts (3 blocks: 697 goals; 4 blocks: 326)."""
    ground = [f for f in _ground(n) if f[0] != "on" or f[1] != f[2]]
    goals = [g for k in range(most + 1) for g in itertools.combinations(ground, k)]
    mismatches = [g for g in goals if closure(g, _blocks(n)) != _brute_closure(g, n)]
    assert len(goals) > 300 and mismatches == []
    satisfiable = sum(consistent(g) for g in goals)
    assert 0 < satisfiable < len(goals)  # both kinds of goal were checked


def _goal_near_a_state(data, n: int) -> list[tuple]:
    """Some facts of a random state, sometimes with random facts added, in random order."""
    state = sorted(data.draw(st.sampled_from(_states(n))))
    goal = data.draw(st.lists(st.sampled_from(state), max_size=len(state)))
    goal += data.draw(st.lists(st.sampled_from(_ground(n)), max_size=2))
    return data.draw(st.permutations(goal))


@settings(max_examples=250, deadline=None)
@given(st.data())
def test_closure_equals_brute_force_on_random_goals(data):
    n = data.draw(st.sampled_from([3, 4, 5]))
    goal = _goal_near_a_state(data, n)
    assert closure(goal, _blocks(n)) == _brute_closure(goal, n)


@settings(max_examples=250, deadline=None)
@given(st.data())
def test_equivalent_iff_the_same_nonempty_set_of_states(data):
    n = data.draw(st.sampled_from([3, 4, 5]))
    a = _goal_near_a_state(data, n)
    change = data.draw(st.sampled_from(["drop", "add", "shuffle", "other"]))
    if change == "drop" and a:
        b = list(a)
        del b[data.draw(st.integers(0, len(a) - 1))]
    elif change == "add":
        b = [*a, data.draw(st.sampled_from(_ground(n)))]
    elif change == "shuffle":
        b = [*data.draw(st.permutations(a)), *a[:1]]  # reordered, one fact twice
    else:
        b = _goal_near_a_state(data, n)
    same = _meaning(a, n) == _meaning(b, n) and bool(_meaning(a, n))
    assert equivalent(a, b, _blocks(n)) == same


def test_entailment_matches_brute_force_for_single_facts():
    rng = random.Random(5)
    checked = 0
    for _ in range(60):
        state = sorted(rng.choice(_states(5)))
        goal = rng.sample(state, rng.randint(0, 4))
        states = [_states(5)[i] for i in _meaning(goal, 5)]
        for fact in _ground(5):
            assert entails(goal, fact, _blocks(5)) == all(fact in s for s in states), (goal, fact)
            checked += 1
    assert checked == 60 * len(_ground(5))


ON, TABLE, CLEAR, ARM = "on", "on-table", "clear", "arm-empty"

# (blocks, goal a, goal b, same meaning?): the verdicts are worked out by hand (reason given).
HAND_PICKED = [
    # the same facts in another order, or with one twice
    (3, [(ON, "b1", "b2"), (CLEAR, "b3")], [(CLEAR, "b3"), (ON, "b1", "b2")], True),
    (3, [(ON, "b1", "b2"), (ON, "b1", "b2")], [(ON, "b1", "b2")], True),
    # a whole tower of all 3 blocks: b3 can be nowhere but the table, nothing fits on b1,
    # and no block is free to be held
    (
        3,
        [(ON, "b1", "b2"), (ON, "b2", "b3")],
        [(ARM,), (TABLE, "b3"), (ON, "b2", "b3"), (ON, "b1", "b2"), (CLEAR, "b1")],
        True,
    ),
    # every block on the table: then every block is clear and none is held
    (
        3,
        [(TABLE, "b1"), (TABLE, "b2"), (TABLE, "b3")],
        [(TABLE, "b3"), (CLEAR, "b1"), (TABLE, "b1"), (CLEAR, "b2"), (TABLE, "b2"), (ARM,)],
        True,
    ),
    # every block clear: nothing is on any block and none is held, so all are on the table
    (
        3,
        [(CLEAR, "b1"), (CLEAR, "b2"), (CLEAR, "b3")],
        [(TABLE, "b1"), (TABLE, "b2"), (TABLE, "b3")],
        True,
    ),
    # every block placed: the arm is empty and both tops are clear
    (
        3,
        [(TABLE, "b1"), (ON, "b2", "b1"), (TABLE, "b3")],
        [(TABLE, "b1"), (ON, "b2", "b1"), (TABLE, "b3"), (ARM,), (CLEAR, "b2"), (CLEAR, "b3")],
        True,
    ),
    # one fact apart, and the fact matters
    (3, [(ON, "b1", "b2")], [(ON, "b1", "b2"), (CLEAR, "b1")], False),  # b3 may sit on b1
    (3, [(ON, "b1", "b2")], [(ON, "b2", "b1")], False),
    (  # a fourth block may be held
        4,
        [(ON, "b1", "b2"), (ON, "b2", "b3")],
        [(ON, "b1", "b2"), (ON, "b2", "b3"), (ARM,)],
        False,
    ),
    (  # with a fourth block, b3 may stand on b4
        4,
        [(ON, "b1", "b2"), (ON, "b2", "b3"), (CLEAR, "b1")],
        [(ON, "b1", "b2"), (ON, "b2", "b3"), (CLEAR, "b1"), (TABLE, "b3")],
        False,
    ),
    (  # with a fourth block placed nowhere, b2 may carry it
        4,
        [(TABLE, "b1"), (ON, "b2", "b1"), (TABLE, "b3"), (CLEAR, "b2")],
        [(TABLE, "b1"), (ON, "b2", "b1"), (TABLE, "b3")],
        False,
    ),
    (  # the same with b4 on the table: nothing is left to put on b2
        4,
        [(TABLE, "b1"), (ON, "b2", "b1"), (TABLE, "b3"), (TABLE, "b4"), (CLEAR, "b2")],
        [(TABLE, "b1"), (ON, "b2", "b1"), (TABLE, "b3"), (TABLE, "b4")],
        True,
    ),
    # goals no state satisfies are never equivalent, not even to themselves
    (3, [(ON, "b1", "b2"), (ON, "b2", "b1")], [(ON, "b1", "b2"), (ON, "b2", "b1")], False),
    (3, [("holding", "b1"), (ARM,)], [("holding", "b1"), (ARM,)], False),
    (3, [(ON, "b1", "b3"), (ON, "b2", "b3")], [(ON, "b1", "b2"), (CLEAR, "b2")], False),
]


@pytest.mark.parametrize("n, a, b, same", HAND_PICKED)
def test_hand_picked_goals_agree_with_hand_and_brute_force(n, a, b, same):
    brute = _meaning(a, n) == _meaning(b, n) and bool(_meaning(a, n))
    assert equivalent(a, b, _blocks(n)) == same == brute
    assert equivalent(b, a, _blocks(n)) == same


def test_a_fact_over_an_unknown_block_or_predicate_is_refused():
    with pytest.raises(ValueError, match="b7"):
        closure([(ON, "b1", "b7")], _blocks(3))
    with pytest.raises(ValueError, match="not a Blocksworld fact"):
        consistent([("ontop", "b1", "b2")])
    with pytest.raises(ValueError, match="not a Blocksworld fact"):
        consistent([(CLEAR, "b1", "b2")])
