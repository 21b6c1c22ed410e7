"""Plain regexes: those every dialect reads alike, and their exact byte automaton.

A regex made only of ASCII literals, sets of them, groups, alternation and
repeats (`plain_ascii_regex`) means the same language to Python's `re`, the
`regex` module, Rust's `regex` (llguidance) and interegular, so interegular's
automaton (`regex_dfa`) is exactly the constraint's: what makes a budget's
count exact for such a regex.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Hashable

from genlm_lab.control.constraint.regular.automata import regex_automaton
from genlm_lab.control.constraint.regular.dfa import ByteDfa
from genlm_lab.control.constraint.regular.parse_tree import nodes, parse
from genlm_lab.control.constraint.regular.superset import class_troubles, parsed_alike

__all__ = ["plain_ascii_regex", "regex_dfa"]


_PLAIN = {"LITERAL", "IN", "RANGE", "BRANCH", "SUBPATTERN", "MAX_REPEAT", "MIN_REPEAT"}


def plain_ascii_regex(pattern: str) -> bool:
    """Whether `pattern` holds only ASCII literals, sets of them, groups, alternation and repeats.

    For such a pattern Python's `re`, the `regex` module, Rust's `regex`
    (llguidance) and interegular read the same language, so interegular's
    automaton is exactly the constraint's. Read with Python's `re` parser;
    anything else (`.`, classes, negated sets, anchors, flags, lookarounds,
    backreferences, non-ASCII) is not plain.
    """
    if not pattern.isascii() or "(?" in pattern:
        return False
    if not parsed_alike(pattern) or re.search(r"[?*+}]\+", pattern):
        return False  # Rust reads `a{1, 2}` as a repeat, `a?+` as `(a?)+`
    if "leading ]" in class_troubles(pattern):
        return False  # interegular reads `[]a]` as an empty class
    parsed = parse(pattern)
    if parsed is None or parsed.state.flags & ~re.UNICODE:
        return False
    for name, arg in nodes(parsed):
        if name not in _PLAIN:
            return False
        if (name == "LITERAL" and arg > 127) or (name == "RANGE" and arg[1] > 127):
            return False
        if name == "SUBPATTERN" and (arg[1] or arg[2]):  # (group, add_flags, del_flags, items)
            return False
    return True


def regex_dfa(pattern: str, max_states: int = 20000) -> ByteDfa | None:
    """The exact automaton of `pattern` (read as interegular reads it), or None where it
    cannot be compiled or has over `max_states` states. Exact only for plain patterns."""
    try:
        auto = regex_automaton(pattern)
    except ValueError:
        return None
    moves: dict[Hashable, dict[int, set]] = defaultdict(lambda: defaultdict(set))
    for src, arcs in auto.arcs.items():
        for byte, dst, w in arcs:
            if w > 0:
                moves[src][byte].add(dst)
    start = frozenset(s for s, w in auto.initial.items() if w > 0)
    finals = frozenset(s for s, w in auto.final.items() if w > 0)
    return ByteDfa.from_nfa(start, moves, finals, max_states=max_states)
