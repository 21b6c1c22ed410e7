"""Constraints as potentials: regexes and automata, grammars, JSON schemas, Python checks.

By family: `fsa` (regexes and weighted automata, `BoolFSA`, `WFSA`; `automata`
compiles them), `cfg` (Lark grammars, `BoolCFG`), `json/` (`JsonSchema` and
its pieces), `python_regex/` (`PythonRegex`), `predicate` (`BoolPredicate`).
Most compile through `llg/`, the adapter to llguidance, into fast token masks;
`finish_distance/` says how many tokens a constraint needs to end (what token
budgets refuse on); `errors` holds what they all raise.
"""

from genlm_lab.control.constraint.automata import Automaton, regex_automaton
from genlm_lab.control.constraint.cfg import BoolCFG
from genlm_lab.control.constraint.errors import FinishWarning, InvalidGrammar
from genlm_lab.control.constraint.finish_distance import Finisher, finisher_for
from genlm_lab.control.constraint.fsa import WFSA, AutomatonBoolFSA, BoolFSA
from genlm_lab.control.constraint.json import JsonSchema, WithinBudget
from genlm_lab.control.constraint.llg import GrammarPotential, TokenConstraint
from genlm_lab.control.constraint.predicate import BoolPredicate
from genlm_lab.control.constraint.python_regex import PythonRegex

__all__ = [
    "WFSA",
    "Automaton",
    "AutomatonBoolFSA",
    "BoolCFG",
    "BoolFSA",
    "BoolPredicate",
    "FinishWarning",
    "Finisher",
    "GrammarPotential",
    "InvalidGrammar",
    "JsonSchema",
    "PythonRegex",
    "TokenConstraint",
    "WithinBudget",
    "finisher_for",
    "regex_automaton",
]
