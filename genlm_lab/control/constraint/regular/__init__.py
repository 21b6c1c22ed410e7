"""Regular languages, shared by the families: automata, and regexes read as automata.

`automata` holds weighted automata over bytes (`Automaton`, what `WFSA` and
`BoolFSA(automaton)` compile; `regex_automaton`). `dfa` is the deterministic
byte automaton budgets count on (`ByteDfa`). `plain` says which regexes every
dialect reads alike, and compiles them exactly; `superset` reads any regex as
an automaton holding every dialect's reading of it (a lower bound's).
"""

from genlm_lab.control.constraint.regular.automata import Automaton, regex_automaton
from genlm_lab.control.constraint.regular.dfa import ByteDfa
from genlm_lab.control.constraint.regular.plain import plain_ascii_regex, regex_dfa
from genlm_lab.control.constraint.regular.superset import regex_superset_dfa

__all__ = [
    "Automaton",
    "ByteDfa",
    "plain_ascii_regex",
    "regex_automaton",
    "regex_dfa",
    "regex_superset_dfa",
]
