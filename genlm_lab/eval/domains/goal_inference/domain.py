"""Goal inference: write the PDDL goal of a Blocksworld problem from its English description.

The task of Planetarium (Zuo et al. 2024) as the AWRS paper (Lipkin et al.,
COLM 2025) runs it: the prompt shows the problem in PDDL up to its goal and
the goal in words; the model writes `(:goal (and ...))` on one line. An
answer scores 1 when it denotes the same set of goal states as the gold
goal (`semantics.equivalent`: order, duplicates and implied facts do not
matter), 0 otherwise, with what differs in the metadata. The constraint is
the grammar of well-formed goals over the problem's blocks (`grammar`). The
instances ship in `data/blocksworld/instances.jsonl`, written by `generator`
(no external data: Planetarium's set lives on a hub these machines cannot
reach).
"""

from __future__ import annotations

import json
from typing import Any

from genlm_lab.control import BoolCFG
from genlm_lab.eval.core import Dataset, EvaluationResult, Evaluator, Instance
from genlm_lab.eval.domain import Domain
from genlm_lab.eval.domains.goal_inference.generator import shipped_path
from genlm_lab.eval.domains.goal_inference.grammar import goal_grammar
from genlm_lab.eval.domains.goal_inference.pddl import (
    format_fact,
    parse_goal,
    problem_text,
    sort_facts,
    state_facts,
)
from genlm_lab.eval.domains.goal_inference.semantics import closure

__all__ = [
    "GoalInferenceDataset",
    "GoalInferenceDomain",
    "GoalInferenceEvaluator",
    "GoalInferenceInstance",
    "load_instances",
]

_INSTRUCTIONS = (
    "Write the goal of each Blocksworld problem in PDDL, on one line, as its description says.\n"
    "Predicates: (on x y) x is directly on y; (on-table x) x is on the table; (clear x) nothing "
    "is on x and the arm does not hold x; (holding x) the arm holds x; (arm-empty) the arm holds "
    "nothing.\n"
)

#: Worked examples for the prompt: (initial towers bottom to top, description, goal).
_SHOTS = (
    (
        [["b3", "b1", "b2"]],
        "Put every block on the table.",
        "(:goal (and (on-table b1) (on-table b2) (on-table b3)))",
    ),
    (
        [["b1", "b2"], ["b3"]],
        "Your goal is that b3 is on b1 and b2 is on the table. Nothing else matters.",
        "(:goal (and (on b3 b1) (on-table b2)))",
    ),
    (
        [["b2"], ["b3", "b4", "b1"]],
        "Build the tower b4-b1-b3 (top to bottom) on the table, with nothing on b4. "
        "Other blocks may be anywhere.",
        "(:goal (and (on-table b3) (on b1 b3) (on b4 b1) (clear b4)))",
    ),
)


class GoalInferenceInstance(Instance):
    """A Blocksworld problem without its goal, the goal in words, and the gold goal."""

    kind: str
    blocks: list[str]
    init: list[list[str]]
    nl_goal: str
    problem: str
    gold: str

    def full_problem(self, goal: str) -> str:
        """The whole PDDL problem with `goal` (a `(:goal ...)` section) in place."""
        return f"{self.problem}  {goal.strip()}\n)\n"

    def __repr__(self) -> str:
        return f"blocksworld {self.instance_id} ({len(self.blocks)} blocks, {self.kind}): {self.nl_goal}"


def load_instances() -> list[dict[str, Any]]:
    """The shipped instances (`generator.generate(SEED, COUNT)`), as dicts."""
    text = shipped_path().read_text("utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


class GoalInferenceDataset(Dataset[GoalInferenceInstance]):
    """Blocksworld goal-inference instances.

    Args:
        instances: dicts with the instance's fields (as `generator.generate` makes
            them); default: the shipped ones.
    """

    def __init__(self, instances: list[dict[str, Any]] | None = None) -> None:
        self.instances = load_instances() if instances is None else list(instances)

    def __len__(self) -> int:
        return len(self.instances)

    def __iter__(self):
        for record in self.instances:
            yield GoalInferenceInstance(**record)

    @property
    def schema(self) -> type[GoalInferenceInstance]:
        return GoalInferenceInstance


class GoalInferenceEvaluator(Evaluator[GoalInferenceInstance]):
    """Score 1 iff the response is a goal with the same set of goal states as the gold goal."""

    def evaluate_sample(self, instance: GoalInferenceInstance, response: Any) -> EvaluationResult:
        try:
            facts = parse_goal(str(response), instance.blocks)
        except ValueError as exc:
            return EvaluationResult(score=0, desc="unparseable", metadata={"error": str(exc)})
        mine = closure(facts, instance.blocks)
        if mine is None:
            return EvaluationResult(score=0, desc="unsatisfiable")
        gold = closure(parse_goal(instance.gold, instance.blocks), instance.blocks)
        if gold is None:
            raise ValueError(f"instance {instance.instance_id}: the gold goal is unsatisfiable")
        if mine == gold:
            return EvaluationResult(score=1, desc="equivalent")
        return EvaluationResult(
            score=0,
            desc="not equivalent",
            metadata={
                "missing": [format_fact(f) for f in sort_facts(gold - mine)],
                "extra": [format_fact(f) for f in sort_facts(mine - gold)],
            },
        )


class GoalInferenceDomain(Domain):
    """Blocksworld goal inference with a three-shot prompt; the goal ends at a newline.

    Args:
        instances: instance dicts (see `generator.generate`); default: the shipped 240.
    """

    name = "goal_inference"
    eos = (b"\n",)

    def __init__(self, instances: list[dict[str, Any]] | None = None) -> None:
        super().__init__(GoalInferenceDataset(instances), GoalInferenceEvaluator())

    def prompt(self, instance: GoalInferenceInstance) -> str:
        shots = []
        for i, (towers, text, goal) in enumerate(_SHOTS, 1):
            blocks = sorted(b for t in towers for b in t)
            problem = problem_text(f"example-{i}", blocks, state_facts(towers))
            shots.append(f"Problem:\n{problem}Description: {text}\nGoal: {goal}\n\n")
        return (
            _INSTRUCTIONS
            + "\n"
            + "".join(shots)
            + f"Problem:\n{instance.problem}Description: {instance.nl_goal}\nGoal: "
        )

    def constraint(self, instance: GoalInferenceInstance) -> BoolCFG:
        return BoolCFG.from_lark(goal_grammar(instance.blocks))
