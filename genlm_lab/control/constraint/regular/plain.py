"""Plain regexes: those every dialect reads alike, and their exact byte automaton.

A regex made only of ASCII literals, sets of them, groups, alternation and
repeats (`plain_ascii_regex`) means the same language to Python's `re`, the
`regex` module, Rust's `regex` (llguidance) and interegular, so interegular's
automaton (`regex_dfa`) is exactly the constraint's: what makes a budget's
count exact for such a regex.
"""

from __future__ import annotations

import re
import warnings
from collections import defaultdict
from collections.abc import Hashable
from typing import Any

from genlm_lab.control.constraint.regular.automata import regex_automaton
from genlm_lab.control.constraint.regular.dfa import ByteDfa
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
    import re._parser as sre

    if not pattern.isascii() or "(?" in pattern:
        return False
    if not parsed_alike(pattern) or re.search(r"[?*+}]\+", pattern):
        return False  # Rust reads `a{1, 2}` as a repeat, `a?+` as `(a?)+`
    if "leading ]" in class_troubles(pattern):
        return False  # interegular reads `[]a]` as an empty class
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            parsed = sre.parse(pattern)
    except Exception:  # noqa: BLE001 - what `re` cannot read is not plain
        return False
    if parsed.state.flags & ~re.UNICODE:
        return False
    stack: list[Any] = [parsed]
    while stack:
        item = stack.pop()
        if isinstance(item, sre.SubPattern):
            stack.extend(item.data)
        elif isinstance(item, (list, tuple)) and item and hasattr(item[0], "name"):
            name = item[0].name
            if name not in _PLAIN:
                return False
            if name == "LITERAL" and item[1] > 127:
                return False
            if name == "RANGE" and item[1][1] > 127:
                return False
            if name == "SUBPATTERN":
                stack.append(item[1][-1])  # (group, add_flags, del_flags, pattern)
                if item[1][1] or item[1][2]:
                    return False
            elif name in ("MAX_REPEAT", "MIN_REPEAT"):
                stack.append(item[1][-1])
            elif name == "BRANCH":
                stack.extend(item[1][-1])
            elif name == "IN":
                stack.extend(item[1])
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
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
