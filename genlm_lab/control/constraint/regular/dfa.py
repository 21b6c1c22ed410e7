"""`ByteDfa`: a deterministic automaton over bytes, as a table, built from a byte NFA.

What budgets count tokens on (`budget.AutomatonDistance`): a constraint's
exact automaton, or one holding every text of it (a superset, for a lower
bound). `regular.plain` and `regular.superset` build them from regexes.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Hashable

import numpy as np

__all__ = ["ByteDfa"]


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
