"""Goal inference on Blocksworld: instances, goal grammar, and a checker by sets of goal states.

`domain` holds the task (`GoalInferenceDomain`); `generator` draws the
instances; `pddl` reads and writes facts; `grammar` builds the goal grammar;
`semantics` decides when two goals mean the same; `wording` phrases goals.
Names load on first use (PEP 562): the generator and the checker run without
importing the constrained-generation stack (torch) that `domain` needs.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from genlm_lab.eval.domains.goal_inference.domain import (
        GoalInferenceDataset,
        GoalInferenceDomain,
        GoalInferenceEvaluator,
        GoalInferenceInstance,
        load_instances,
    )
    from genlm_lab.eval.domains.goal_inference.generator import generate
    from genlm_lab.eval.domains.goal_inference.grammar import goal_grammar
    from genlm_lab.eval.domains.goal_inference.pddl import parse_goal
    from genlm_lab.eval.domains.goal_inference.semantics import closure, equivalent

_HOME = {
    "GoalInferenceDataset": "domain",
    "GoalInferenceDomain": "domain",
    "GoalInferenceEvaluator": "domain",
    "GoalInferenceInstance": "domain",
    "load_instances": "domain",
    "generate": "generator",
    "goal_grammar": "grammar",
    "parse_goal": "pddl",
    "closure": "semantics",
    "equivalent": "semantics",
}

__all__ = [
    "GoalInferenceDataset",
    "GoalInferenceDomain",
    "GoalInferenceEvaluator",
    "GoalInferenceInstance",
    "closure",
    "equivalent",
    "generate",
    "goal_grammar",
    "load_instances",
    "parse_goal",
]


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{_HOME[name]}"), name)
