"""The goal_inference domain: the checker on the shipped goals and their variants, the prompt, and a run."""

from __future__ import annotations

import itertools
import re

import pytest

from genlm_lab.eval import Method, load_domain, run_evaluation
from genlm_lab.eval.domains.goal_inference.domain import _SHOTS
from genlm_lab.eval.domains.goal_inference.pddl import format_goal, parse_goal


@pytest.fixture(scope="module")
def domain():
    return load_domain("goal_inference")


def _small_states(n: int) -> list[frozenset]:
    """The true facts of every arm-empty state of n blocks, and of each with one block held."""
    blocks = [f"b{i}" for i in range(1, n + 1)]

    def towers(items):
        if not items:
            yield ()
            return
        *rest, new = items
        for ts in towers(rest):
            yield (*ts, (new,))
            for i, t in enumerate(ts):
                for j in range(len(t) + 1):
                    yield (*ts[:i], t[:j] + (new,) + t[j:], *ts[i + 1 :])

    def facts(ts, held):
        out = {("arm-empty",)} if held is None else {("holding", held)}
        for t in ts:
            out |= {("on-table", t[0]), ("clear", t[-1])}
            out |= {("on", t[k + 1], t[k]) for k in range(len(t) - 1)}
        return frozenset(out)

    states = [facts(ts, None) for ts in towers(blocks)]
    for held in blocks:
        states += [facts(ts, held) for ts in towers([b for b in blocks if b != held])]
    return states


def test_every_gold_goal_and_a_reworded_copy_score_one(domain):
    instances = list(domain.dataset)
    scores = []
    for inst in instances:
        gold = parse_goal(inst.gold, inst.blocks)
        reworded = format_goal([*reversed(gold), gold[0]]).replace(" (", "(")
        scores.append(domain.evaluator.evaluate_sample(inst, inst.gold).score)
        scores.append(domain.evaluator.evaluate_sample(inst, reworded).score)
    assert len(instances) == 240 and set(scores) == {1}


def test_dropping_or_adding_a_fact_scores_as_the_states_say(domain):
    """On the shipped instances of 3-4 blocks: each variant of the gold goal with one fact
    dropped or one fact added scores 1 iff brute force finds the same, non-empty, set of states."""
    states = {n: _small_states(n) for n in (3, 4)}
    checked, same_meaning = 0, 0
    for inst in (i for i in domain.dataset if len(i.blocks) <= 4):
        gold = parse_goal(inst.gold, inst.blocks)
        pool = states[len(inst.blocks)]

        def meaning(goal, pool=pool):
            return {k for k, s in enumerate(pool) if set(goal) <= s}

        others = sorted(set(itertools.chain.from_iterable(pool)) - set(gold))
        variants = [gold[:k] + gold[k + 1 :] for k in range(len(gold))] + [
            [*gold, f] for f in others
        ]
        for goal in variants:
            same = bool(meaning(goal)) and meaning(goal) == meaning(gold)
            score = domain.evaluator.evaluate_sample(inst, format_goal(goal)).score
            assert (score == 1) == same, (inst.gold, goal)
            checked += 1
            same_meaning += same
    assert checked > 1000 and 100 < same_meaning < checked - 100  # both verdicts were tested


def test_wrong_answers_say_what_is_wrong(domain):
    inst = next(i for i in domain.dataset if i.kind == "towers")
    unparseable = domain.evaluator.evaluate_sample(inst, "(:goal (and (on b1 b99)))")
    assert (unparseable.score, unparseable.desc) == (0, "unparseable")
    assert "b99" in unparseable.metadata["error"]
    impossible = domain.evaluator.evaluate_sample(inst, "(:goal (and (on b1 b2) (on b2 b1)))")
    assert (impossible.score, impossible.desc) == (0, "unsatisfiable")
    gold = parse_goal(inst.gold, inst.blocks)
    on = next(f for f in gold if f[0] == "on")
    partial = domain.evaluator.evaluate_sample(inst, format_goal([on]))
    assert partial.score == 0 and partial.desc == "not equivalent"
    assert partial.metadata["extra"] == [] and "(arm-empty)" in partial.metadata["missing"]


def test_the_prompt_shows_the_problem_and_the_description(domain):
    inst = next(iter(domain.dataset))
    prompt = domain.prompt(inst)
    assert prompt.endswith(f"{inst.problem}Description: {inst.nl_goal}\nGoal: ")
    assert prompt.count("Goal: (:goal (and") == len(_SHOTS) == 3
    assert domain.eos == (b"\n",) and domain.name == "goal_inference"
    whole = inst.full_problem(inst.gold)
    assert whole.count("(") == whole.count(")") and whole.rstrip().endswith("))\n)")


def test_the_worked_examples_are_right():
    """Each shot's goal parses, is not already true at its start, and names only its blocks."""
    for towers, text, goal in _SHOTS:
        blocks = sorted(b for t in towers for b in t)
        facts = parse_goal(goal, blocks)
        start = {("arm-empty",)}
        for t in towers:
            start |= {("on-table", t[0]), ("clear", t[-1])}
            start |= {("on", t[k + 1], t[k]) for k in range(len(t) - 1)}
        assert facts and not set(facts) <= start, goal
        named, used = set(re.findall(r"\bb[1-9]\b", text)), {b for f in facts for b in f[1:]}
        assert named <= used and (named == used or "every block" in text), text
    assert len(_SHOTS) == 3


async def test_a_constrained_run_on_tiny_random_answers_well_formed_goals():
    from genlm_lab.backend import load_model_by_name

    domain = load_domain("goal_inference")
    small = [i.model_dump() for i in domain.dataset if len(i.blocks) == 3][:2]
    domain = load_domain("goal_inference", instances=small)
    lm = load_model_by_name("tiny-random")
    method = Method(kind="awrs_smc", n_particles=2, max_tokens=28)
    results = await run_evaluation(domain.dataset, method.adaptor(domain, lm), domain.evaluator)
    outputs = [o[0] for o in results["all_instance_outputs"]]
    assert len(outputs) == 2
    answers = [
        (inst, r.response)
        for inst, o in zip(domain.dataset, outputs, strict=True)
        for r in o.responses
    ]
    assert answers  # AWRS under the grammar always finishes within the budget
    for inst, text in answers:
        assert parse_goal(text, inst.blocks)  # well formed: at least one fact, known blocks
    scored = [r[0]["weighted_accuracy"] for r in results["all_instance_results"]]
    assert len(scored) == 2 and all(0.0 <= s <= 1.0 for s in scored)
