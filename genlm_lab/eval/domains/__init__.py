"""Shipped evaluation domains, offline: pattern matching, JSON, SQL, molecules, goal inference.

`load_domain(name)` builds one by name (the CLI's `genlm-lab eval run DOMAIN`).
Each module is imported only when its domain is asked for.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__all__ = ["DOMAINS", "load_domain"]

#: name -> "module:class" of every shipped domain.
DOMAINS: dict[str, str] = {
    "pattern_matching": "genlm_lab.eval.domains.pattern_matching:PatternMatchingDomain",
    "json_schema": "genlm_lab.eval.domains.json_schema:JsonSchemaDomain",
    "spider": "genlm_lab.eval.domains.spider:SpiderDomain",
    "goal_inference": "genlm_lab.eval.domains.goal_inference:GoalInferenceDomain",
    "molecular_synthesis": "genlm_lab.eval.domains.molecular_synthesis:MolecularSynthesisDomain",
}


def load_domain(name: str, **kwargs: Any) -> Any:
    """The shipped domain called `name`, built with `kwargs`.

    Raises:
        ValueError: for an unknown name (the message lists the known ones).
    """
    if name not in DOMAINS:
        raise ValueError(f"unknown domain {name!r}; the shipped ones are {', '.join(DOMAINS)}")
    module, cls = DOMAINS[name].split(":")
    return getattr(import_module(module), cls)(**kwargs)
