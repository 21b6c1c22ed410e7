"""Weighted context-free grammars: `WCFG` with exact prefix weights, and `WeightedGrammar`."""

from genlm_lab.control.wcfg.grammar import Language, Rule, WeightedGrammar
from genlm_lab.control.wcfg.potential import WCFG

__all__ = [
    "Language",
    "Rule",
    "WCFG",
    "WeightedGrammar",
]
