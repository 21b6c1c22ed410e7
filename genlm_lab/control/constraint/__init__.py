"""Constraints as potentials: regexes and automata, grammars, JSON schemas, Python checks.

By family, a folder each: `fsa/` (regexes and automata: `BoolFSA`, `WFSA`),
`cfg/` (Lark grammars: `BoolCFG`), `json/` (`JsonSchema` and its pieces),
`python_regex/` (`PythonRegex`), `python_syntax/` (`PythonParser`: Python
source, exact for CPython 3.11) and `predicate` (`BoolPredicate`). Below
them: `budget/` says how many tokens a constraint still needs to end (what
token budgets refuse on), asking each family through the hooks its class
implements (`BudgetHooks`); `llg/` is the adapter to llguidance that compiles
most families into fast token masks; `regular/` holds automata and the
reading of regexes as automata; `errors` holds what they all raise. Imports
go down that list, never up (`lint-imports`).
"""

from genlm_lab.control.constraint.budget import FitCheck, WithinBudget, fit_check_for
from genlm_lab.control.constraint.cfg import BoolCFG
from genlm_lab.control.constraint.errors import FinishWarning, InvalidGrammar
from genlm_lab.control.constraint.fsa import WFSA, AutomatonBoolFSA, BoolFSA
from genlm_lab.control.constraint.json import JsonSchema
from genlm_lab.control.constraint.llg import GrammarPotential, TokenConstraint
from genlm_lab.control.constraint.predicate import BoolPredicate
from genlm_lab.control.constraint.python_regex import PythonRegex
from genlm_lab.control.constraint.python_syntax import PythonParser
from genlm_lab.control.constraint.regular.automata import Automaton, regex_automaton

__all__ = [
    "WFSA",
    "Automaton",
    "AutomatonBoolFSA",
    "BoolCFG",
    "BoolFSA",
    "BoolPredicate",
    "FinishWarning",
    "FitCheck",
    "GrammarPotential",
    "InvalidGrammar",
    "JsonSchema",
    "PythonParser",
    "PythonRegex",
    "TokenConstraint",
    "WithinBudget",
    "fit_check_for",
    "regex_automaton",
]
