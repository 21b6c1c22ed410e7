"""`BoolFSA`: a regex as a constraint over bytes, masked natively by llguidance.

`BoolFSA(wfsa)` with an explicit automaton gives an `AutomatonBoolFSA`
(`fsa.automaton_bool_fsa`). For token budgets a plain regex names its exact
automaton, and any regex itself as the superset that bounds them from below.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import llguidance
import numpy as np

from genlm_lab.control.constraint.budget import BudgetHooks
from genlm_lab.control.constraint.errors import InvalidGrammar
from genlm_lab.control.constraint.llg.engine import check_grammar
from genlm_lab.control.constraint.llg.grammar import GrammarPotential
from genlm_lab.control.constraint.regular import automata
from genlm_lab.control.constraint.regular.automata import is_grammar_wfsa
from genlm_lab.control.constraint.regular.dfa import ByteDfa
from genlm_lab.control.constraint.regular.plain import plain_ascii_regex, regex_dfa
from genlm_lab.control.core.weights import LazyWeights

__all__ = ["BoolFSA"]


class BoolFSA(GrammarPotential, BudgetHooks):
    """A regular expression as a constraint over bytes: the whole string must match.

    `prefix(x)` is 0 iff some continuation of `x` matches, `complete(x)` iff
    `x` matches. Build one with `BoolFSA.from_regex(pattern)`. The syntax is
    Rust's `regex` crate (as Python's `re` for everyday patterns; `\\d` and
    `\\w` are Unicode-aware). `BoolFSA(wfsa)` reads a genlm-grammar automaton
    instead (every arc of weight > 0 allowed).
    """

    #: the subclass `BoolFSA(automaton)` makes (`AutomatonBoolFSA`, which registers itself)
    _automaton_class: type[BoolFSA]

    def __init_subclass__(cls, reads_automata: bool = False, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if reads_automata:
            BoolFSA._automaton_class = cls

    def __new__(cls, *args: Any, **kwargs: Any) -> BoolFSA:
        wfsa = kwargs.get("wfsa", args[0] if args else None)
        if cls is BoolFSA and (is_grammar_wfsa(wfsa) or isinstance(wfsa, automata.Automaton)):
            return super().__new__(BoolFSA._automaton_class)
        return super().__new__(cls)

    @classmethod
    def from_regex(
        cls, pattern: str, charset: Any = None, to_bytes: bool = True, semiring: str = "boolean"
    ) -> BoolFSA:
        """Compile `pattern`.

        Args:
            pattern: the regex (the whole string must match).
            charset: accepted for genlm-control; used only by `.wfsa`.
            to_bytes: accepted for genlm-control; used only by `.wfsa`.
            semiring: "boolean" (default) or the deprecated "log": which
                semiring `.wfsa` uses. The mask is the same.

        Raises:
            InvalidGrammar (a ValueError): for an invalid pattern, naming the position,
                or one that matches no string at all (`[a&&b]`).
            ValueError: for another semiring.
        """
        if not isinstance(pattern, str):
            raise ValueError(f"a regex pattern must be a str, got {type(pattern).__name__}")
        if semiring not in ("boolean", "log"):
            raise ValueError(f"semiring must be 'boolean' or 'log', got {semiring!r}")
        if semiring == "log":
            warnings.warn(
                "BoolFSA.from_regex(semiring='log') is deprecated: a constraint is boolean; "
                "use the default semiring='boolean'",
                DeprecationWarning,
                stacklevel=2,
            )
        grammar = llguidance.LLMatcher.grammar_from_regex(pattern)
        check_grammar(grammar, "regex", pattern)
        out = cls(grammar, pattern, "regex")
        if not out.allowed([]).any():  # llguidance's lexer knows exactly which states are dead
            raise InvalidGrammar(f"the regex admits no string: {pattern}")
        out._wfsa_semiring = "Log" if semiring == "log" else "Boolean"
        out._charset = charset
        return out

    @property
    def wfsa(self) -> Any:
        """The regex as a genlm-grammar `WFSA` (Boolean weights; needs genlm-grammar)."""
        if self.kind != "regex":
            raise ValueError(f"{self.name} is a {self.kind}, not a regular expression")
        cached = self.__dict__.get("_wfsa")
        if cached is None:
            semiring = getattr(self, "_wfsa_semiring", "Boolean")
            charset = getattr(self, "_charset", None)
            cached = automata.to_grammar_wfsa(
                automata.regex_automaton(self.source, charset), semiring
            )
            self.__dict__["_wfsa"] = cached
        return cached

    async def logw_next(self, context: Sequence[Any]) -> LazyWeights:
        weights = await super().logw_next(context)
        if not np.isfinite(weights.weights).any():
            raise ValueError(f"Context {list(context)!r:.60} has zero weight under {self.name}")
        return weights

    def exact_dfa(self) -> ByteDfa | None:
        """A plain regex's exact automaton (`regular.plain`), for token budgets; else None."""
        if self.kind != "regex" or not plain_ascii_regex(self.source):
            return None
        return regex_dfa(self.source)

    def superset_regex(self) -> str | None:
        """The regex itself: its every-dialect reading bounds a budget from below."""
        return self.source if self.kind == "regex" else None
