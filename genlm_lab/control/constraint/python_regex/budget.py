"""What a `PythonRegex` tells a token budget (`BudgetHooks`).

A pattern without flags that is plain (`regular.plain`: every dialect reads
it alike) names its exact automaton; any pattern without flags names itself
as the superset whose every-dialect reading bounds a budget from below.
"""

from __future__ import annotations

from genlm_lab.control.constraint.budget import BudgetHooks
from genlm_lab.control.constraint.regular.dfa import ByteDfa
from genlm_lab.control.constraint.regular.plain import plain_ascii_regex, regex_dfa

__all__ = ["PatternBudget"]


class PatternBudget(BudgetHooks):
    """Budget hooks for a constraint with a `pattern` and `flags` (`PythonRegex`)."""

    pattern: str
    flags: int

    def exact_dfa(self) -> ByteDfa | None:
        """The exact automaton of a plain pattern without flags; else None."""
        if self.flags or not plain_ascii_regex(self.pattern):
            return None
        return regex_dfa(self.pattern)

    def superset_regex(self) -> str | None:
        """The pattern itself, where it has no flags."""
        return None if self.flags else self.pattern
