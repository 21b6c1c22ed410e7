"""`PythonRegex`: patterns of Python's `regex` module as constraints over bytes.

`potential` is the constraint (the engine's partial matching, or an exact
automaton where the pattern has one); `automaton` compiles such a pattern into
a lazy DFA over characters (`CharAutomaton`); `byte_levels` groups a token
trie by depth for the mask walk; `utf8` reads bytes as characters and picks
the characters a prefix check tries.
"""

from genlm_lab.control.constraint.python_regex.automaton import CharAutomaton
from genlm_lab.control.constraint.python_regex.byte_levels import ByteLevels
from genlm_lab.control.constraint.python_regex.potential import PythonRegex
from genlm_lab.control.constraint.python_regex.trie_walk import byte_mask_walk
from genlm_lab.control.constraint.python_regex.utf8 import (
    ascii_only,
    char_range,
    representatives,
    spelled_chars,
    split_utf8,
)

__all__ = [
    "ByteLevels",
    "CharAutomaton",
    "PythonRegex",
    "ascii_only",
    "byte_mask_walk",
    "char_range",
    "representatives",
    "spelled_chars",
    "split_utf8",
]
