"""Pattern matching: write a string that fully matches a Python `regex` pattern.

The 454 patterns of the AWRS paper (Lipkin et al., COLM 2025) use what
regular expressions cannot say (backreferences, lookarounds, recursion,
possessive groups), so the constraint is `genlm_lab.control.PythonRegex`, a
byte-level potential over the `regex` module's partial matching. The checker
is `regex.fullmatch`. The data ship in `genlm_lab/eval/data/patterns.csv`
(from genlm-eval, Apache-2.0; see `data/NOTICE.md`).
"""

from __future__ import annotations

import csv
from importlib import resources
from typing import Any

import regex

from genlm_lab.control import PythonRegex
from genlm_lab.eval.core import Dataset, EvaluationResult, Evaluator, Instance
from genlm_lab.eval.domain import Domain

__all__ = [
    "PatternMatchingDataset",
    "PatternMatchingDomain",
    "PatternMatchingEvaluator",
    "PatternMatchingInstance",
    "load_patterns",
]

#: Seconds one full match may take in the checker (some patterns backtrack badly).
MATCH_TIMEOUT = 2.0

_EXAMPLES = (
    ("(ab)+", "abab"),
    ("[a-z]+@[a-z]+\\.com", "ann@mail.com"),
    ("\\d{3}-\\d{4}", "555-1234"),
)


class PatternMatchingInstance(Instance):
    """One pattern to match."""

    pattern: str
    instance_id: int

    def __repr__(self) -> str:
        return f"pattern: {self.pattern} (id: {self.instance_id})"


def load_patterns() -> list[str]:
    """The 454 shipped patterns, in file order."""
    text = resources.files("genlm_lab.eval").joinpath("data/patterns.csv").read_text("utf-8")
    rows = list(csv.reader(text.splitlines()))
    return [row[0] for row in rows[1:] if row]


class PatternMatchingDataset(Dataset[PatternMatchingInstance]):
    """Patterns as instances (ids are positions in the list).

    Args:
        patterns: the patterns; default: the 454 shipped ones.
    """

    def __init__(self, patterns: list[str] | None = None) -> None:
        self.patterns = load_patterns() if patterns is None else list(patterns)

    @classmethod
    def from_csv(cls, csv_path: str, pattern_column: str = "regex") -> PatternMatchingDataset:
        """Patterns from one column of a CSV file."""
        with open(csv_path, newline="", encoding="utf-8") as f:
            return cls([row[pattern_column] for row in csv.DictReader(f)])

    def __len__(self) -> int:
        return len(self.patterns)

    def __iter__(self):
        for i, pattern in enumerate(self.patterns):
            yield PatternMatchingInstance(pattern=pattern, instance_id=i)

    @property
    def schema(self) -> type[PatternMatchingInstance]:
        return PatternMatchingInstance


class PatternMatchingEvaluator(Evaluator[PatternMatchingInstance]):
    """Score 1 iff the response fully matches the pattern."""

    def evaluate_sample(self, instance: PatternMatchingInstance, response: Any) -> EvaluationResult:
        try:
            ok = regex.fullmatch(instance.pattern, str(response), timeout=MATCH_TIMEOUT) is not None
        except TimeoutError:
            return EvaluationResult(score=0, desc="timeout", metadata={"timeout": MATCH_TIMEOUT})
        return EvaluationResult(score=int(ok), desc="valid" if ok else "invalid")


class PatternMatchingDomain(Domain):
    """Pattern matching with a few-shot prompt; answers end at a newline.

    Args:
        patterns: the patterns; default: the 454 shipped ones.
    """

    name = "pattern_matching"
    eos = (b"\n",)

    def __init__(self, patterns: list[str] | None = None) -> None:
        super().__init__(PatternMatchingDataset(patterns), PatternMatchingEvaluator())

    def prompt(self, instance: PatternMatchingInstance) -> str:
        shots = "".join(f"Pattern: {p}\nString: {s}\n" for p, s in _EXAMPLES)
        return (
            "Write a string that matches the whole regular expression, and nothing else.\n"
            f"{shots}Pattern: {instance.pattern}\nString: "
        )

    def constraint(self, instance: PatternMatchingInstance) -> PythonRegex:
        return PythonRegex(instance.pattern, timeout=MATCH_TIMEOUT)
