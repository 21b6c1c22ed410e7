"""Reading a constraint as a deterministic byte automaton, where its language is one.

`AutomatonDistance` is exact only on an automaton that is exactly the
constraint's language: an explicit `BoolFSA(automaton)`, or a regex (llguidance's
or the `regex` module's) made only of ASCII literals, sets of them, groups,
alternation and repeats (`plain_ascii_regex`), where every dialect reads the
same language and `automata.regex_automaton` compiles it.
"""

from __future__ import annotations

import re
import warnings
from collections import defaultdict, deque
from collections.abc import Hashable
from typing import Any

import numpy as np

from genlm_lab.control.potential.base import Potential

__all__ = ["ByteDfa", "dfa_of", "plain_ascii_regex", "regex_dfa", "relaxed_dfa"]


class ByteDfa:
    """A deterministic byte automaton as a table: `table[s, b]` is the next state, 0 is dead."""

    def __init__(self, table: np.ndarray, final: np.ndarray, start: int) -> None:
        self.table = table
        self.final = final
        self.start = start

    @classmethod
    def from_nfa(
        cls,
        start: frozenset,
        moves: dict[Hashable, dict[int, set[Hashable]]],
        finals: frozenset,
        max_states: int = 20000,
    ) -> ByteDfa | None:
        """The subset construction of an NFA over bytes (None past `max_states` states)."""
        ids: dict[frozenset, int] = {frozenset(): 0}
        rows: list[np.ndarray] = [np.zeros(256, dtype=np.int64)]
        final = [False]
        todo = deque()

        def state(s: frozenset) -> int:
            found = ids.get(s)
            if found is None:
                found = ids[s] = len(rows)
                rows.append(np.zeros(256, dtype=np.int64))
                final.append(bool(s & finals))
                todo.append(s)
            return found

        first = state(frozenset(start))
        while todo:
            if len(rows) > max_states:
                return None
            s = todo.popleft()
            by_byte: dict[int, set] = defaultdict(set)
            for q in s:
                for b, dsts in moves.get(q, {}).items():
                    by_byte[b].update(dsts)
            row = rows[ids[s]]
            for b, dsts in by_byte.items():
                row[b] = state(frozenset(dsts))
        return cls(np.array(rows), np.array(final), first)

    def intersect(self, other: ByteDfa, max_states: int = 20000) -> ByteDfa | None:
        """The automaton of both languages at once (pairs of states; None past `max_states`)."""
        ids = {(0, 0): 0}
        pairs = [(0, 0)]
        rows = [np.zeros(256, dtype=np.int64)]
        first = ids[(self.start, other.start)] = 1
        pairs.append((self.start, other.start))
        rows.append(np.zeros(256, dtype=np.int64))
        todo = deque([first])
        while todo:
            if len(rows) > max_states:
                return None
            at = todo.popleft()
            left, right = pairs[at]
            row = rows[at]
            a, b = self.table[left], other.table[right]
            for byte in np.flatnonzero((a != 0) & (b != 0)).tolist():
                pair = (int(a[byte]), int(b[byte]))
                found = ids.get(pair)
                if found is None:
                    found = ids[pair] = len(rows)
                    pairs.append(pair)
                    rows.append(np.zeros(256, dtype=np.int64))
                    todo.append(found)
                row[byte] = found
        final = np.array([bool(self.final[p]) and bool(other.final[q]) for p, q in pairs])
        final[0] = False
        return ByteDfa(np.array(rows), final, first)

    def run(self, state: int, data: bytes) -> int:
        for b in data:
            state = int(self.table[state, b])
            if state == 0:
                return 0
        return state


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

    from genlm_lab.control.constraint.finish_distance.regex_relax import (
        class_troubles,
        parsed_alike,
    )

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
    from genlm_lab.control.constraint.automata import regex_automaton

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


def dfa_of(language: Potential) -> ByteDfa | None:
    """The exact automaton of a byte-level constraint, where one is known (see the docstring)."""
    from genlm_lab.control.constraint.fsa import AutomatonBoolFSA, BoolFSA
    from genlm_lab.control.constraint.python_regex import PythonRegex

    if isinstance(language, AutomatonBoolFSA):
        moves = {s: {b: set(d) for b, d in by.items()} for s, by in language._moves.items()}
        return ByteDfa.from_nfa(language._start, moves, language._finals)
    if isinstance(language, BoolFSA) and language.kind == "regex":
        return regex_dfa(language.source) if plain_ascii_regex(language.source) else None
    if isinstance(language, PythonRegex) and not language.flags:
        return regex_dfa(language.pattern) if plain_ascii_regex(language.pattern) else None
    return None


#: The longest relaxed regex compiled (a rule used in many places is written out in each),
#: and the most states its automaton may have: a bound, not the constraint, so it is
#: given up where it would cost more than it saves (each state reads the vocabulary once;
#: a 10,774-character grammar of 300 keywords took 2.6 s to 3,959 states).
MAX_RELAXED = 4000
MAX_RELAXED_STATES = 512


def relaxed_dfa(language: Potential) -> ByteDfa | None:
    """An automaton holding every text of a constraint whose exact one is not known: a
    regex or Python regex that is not plain (`regex_relax`), a regular Lark grammar
    (`cfg_relax`); None for anything else. A lower bound on the tokens to end, not exact."""
    from genlm_lab.control.constraint.cfg_relax import regular_relaxation
    from genlm_lab.control.constraint.finish_distance.regex_relax import relaxed_regex_dfa
    from genlm_lab.control.constraint.llg.grammar import GrammarPotential
    from genlm_lab.control.constraint.python_regex import PythonRegex

    pattern = None
    if isinstance(language, GrammarPotential) and language.kind == "Lark grammar":
        pattern = regular_relaxation(language.source)
    elif isinstance(language, GrammarPotential) and language.kind == "regex":
        pattern = language.source
    elif isinstance(language, PythonRegex) and not language.flags:
        pattern = language.pattern
    if pattern is None or len(pattern) > MAX_RELAXED:
        return None
    return relaxed_regex_dfa(pattern, max_states=MAX_RELAXED_STATES)
