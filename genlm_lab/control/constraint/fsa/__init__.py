"""The FSA family: regular constraints.

`BoolFSA` (a regex, masked natively by llguidance), `AutomatonBoolFSA` (what
`BoolFSA(automaton)` makes: an explicit automaton, run as sets of states) and
`WFSA` (a weighted automaton). Automata themselves live in `regular/`.
"""

from genlm_lab.control.constraint.fsa.automaton_bool_fsa import AutomatonBoolFSA
from genlm_lab.control.constraint.fsa.bool_fsa import BoolFSA
from genlm_lab.control.constraint.fsa.wfsa import WFSA

__all__ = ["WFSA", "AutomatonBoolFSA", "BoolFSA"]
