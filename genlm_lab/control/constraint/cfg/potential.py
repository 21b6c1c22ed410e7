"""`BoolCFG`: a context-free grammar in Lark syntax as a constraint over bytes."""

from __future__ import annotations

from collections import OrderedDict
from functools import lru_cache
from typing import Any

import llguidance

from genlm_lab.control.constraint.budget import BudgetHooks
from genlm_lab.control.constraint.cfg.earley import LarkChart, parse_lark
from genlm_lab.control.constraint.cfg.finish import finish
from genlm_lab.control.constraint.cfg.from_cfg import lark_of_cfg
from genlm_lab.control.constraint.cfg.superset import regular_superset
from genlm_lab.control.constraint.errors import InvalidGrammar
from genlm_lab.control.constraint.llg.engine import check_grammar
from genlm_lab.control.constraint.llg.grammar import GrammarPotential

__all__ = ["BoolCFG"]


class BoolCFG(GrammarPotential, BudgetHooks):
    """A Lark grammar as a constraint over bytes: the whole string must derive from `start`.

    Build one with `BoolCFG.from_lark(text)`, or `BoolCFG(cfg)` from a
    genlm-grammar `CFG` (or a `WeightedGrammar`): its rules of nonzero weight
    are written as Lark (`cfg.from_cfg`). Terminals are strings and
    regexes as in Lark; `%ignore` and `%import common.*` work. Masks come from
    llguidance's Earley parser over a lazy lexer, so ambiguous terminals are
    split wherever the grammar allows.

    Attributes:
        cfg: the grammar it was built from: the `CFG` given, or the Lark text.
    """

    def __init__(self, grammar: Any, source: str | None = None, kind: str = "Lark grammar") -> None:
        """From a grammar object (`BoolCFG(cfg)`); `from_lark` passes llguidance's text and the source.

        Raises:
            TypeError: for text without its source (Lark text goes to `from_lark`).
            InvalidGrammar: if the grammar derives no text or has a terminal Lark cannot write.
        """
        self._cfg = None
        if isinstance(grammar, str):
            if source is None:
                raise TypeError(
                    "BoolCFG(text) is internal; for a Lark grammar use BoolCFG.from_lark"
                )
            super().__init__(grammar, source, kind)
            return
        lark = lark_of_cfg(grammar)
        super().__init__(_compile(lark), lark, "Lark grammar")
        self._check_derives_text()
        self._cfg = grammar

    @property
    def cfg(self) -> Any:
        """The grammar it was built from: the `CFG` given to `BoolCFG(cfg)`, else the Lark text."""
        return self.source if self._cfg is None else self._cfg

    @classmethod
    def from_lark(cls, grammar: str) -> BoolCFG:
        """Compile a Lark grammar.

        Raises:
            InvalidGrammar (a ValueError): for an invalid grammar, naming line and column,
                or one that derives no text (naming the rules that never end).
        """
        if not isinstance(grammar, str):
            raise ValueError(f"a Lark grammar must be a str, got {type(grammar).__name__}")
        out = cls(_compile(grammar), grammar, "Lark grammar")
        out._check_derives_text()
        return out

    def _check_derives_text(self) -> None:
        endless = _never_ending(self.source)
        if endless:
            raise InvalidGrammar(
                "the Lark grammar derives no text: every expansion of "
                + ", ".join(f"'{r}'" for r in endless)
                + " needs a rule that never ends (no finite derivation)"
            )
        if not self.allowed([]).any():
            raise InvalidGrammar("the Lark grammar derives no text: no terminal can start it")

    def superset_regex(self) -> str | None:
        """A regular grammar's regular superset (`cfg.superset`), for token budgets."""
        return regular_superset(self.source) if self.kind == "Lark grammar" else None

    def finish(self, prefix: str | bytes, limit: int = 1024) -> bytes | None:
        """A short completion that makes `prefix` a complete text (None: dead, or none found).

        The shortest one an Earley chart of the prefix names (`cfg.finish`), checked on
        the mask; where the check fails, a short search over the mask. What it returns
        is always accepted; budgets steer runs with it (`FinishGuide`). Cached per prefix.
        """
        if isinstance(prefix, str):
            prefix = prefix.encode("utf-8")
        prefix = bytes(prefix)
        cache = self.__dict__.setdefault("_finishes", OrderedDict())
        key = (prefix, limit)
        if key in cache:
            cache.move_to_end(key)
            return cache[key]
        found = cache[key] = finish(self.engine, LarkChart.of(self.source), prefix, limit)
        if len(cache) > 4096:
            cache.popitem(last=False)
        return found


@lru_cache(maxsize=64)
def _never_ending(grammar: str) -> tuple[str, ...]:
    """The rules that derive no finite text, if `start` is among them (else ()).

    The productive rules are those with an expansion of terminals and productive
    rules, to a fixed point. llguidance's Earley parser does not check this: it
    lets `start: a` / `a: "x" a` write "xxx..." forever. Read with the `lark`
    package; a grammar it cannot read (llguidance's extensions) is not checked.
    """
    parsed = parse_lark(grammar)
    if parsed is None:  # llguidance's own syntax, or lark missing: no verdict
        return ()
    rules = parsed.rules
    productive: set[str] = set()
    changed = True
    while changed:
        changed = False
        for rule in rules:
            name = rule.origin.name
            if name not in productive and all(
                s.is_term or s.name in productive for s in rule.expansion
            ):
                productive.add(name)
                changed = True
    if "start" in productive or not any(r.origin.name == "start" for r in rules):
        return ()
    return tuple(sorted({r.origin.name for r in rules} - productive))


@lru_cache(maxsize=64)
def _compile(grammar: str) -> str:
    """llguidance's text of a checked Lark grammar (cached: big grammars are checked once)."""
    compiled = llguidance.LLMatcher.grammar_from_lark(grammar)
    check_grammar(compiled, "Lark grammar", grammar)
    return compiled
