"""What a domain's score measures, for the views' labels (`score_name`, `domain_title`).

Most domains score 0/1 correctness, so their weighted score is an accuracy. A
domain whose score is a graded quantity says so here by name: molecular
synthesis scores a valid molecule by its QED (drug-likeness in [0, 1], RDKit)
and an invalid one 0, so its "weighted accuracy" is the posterior-expected QED.
The tables, the figure and the live view label such a domain with its score.
"""

from __future__ import annotations

__all__ = ["SCORE_NAMES", "domain_title", "score_name"]

#: Domain name -> what its score is, where it is not 0/1 correctness.
SCORE_NAMES: dict[str, str] = {"molecular_synthesis": "QED"}


def score_name(domain: str) -> str:
    """ "accuracy", or the domain's graded score ("QED" for molecular synthesis)."""
    return SCORE_NAMES.get(domain, "accuracy")


def domain_title(domain: str) -> str:
    """The domain's name, with its score where that is not an accuracy: "molecular_synthesis (QED)"."""
    return f"{domain} ({SCORE_NAMES[domain]})" if domain in SCORE_NAMES else domain
