"""`AutomatonDistance`: the exact fewest tokens to end, for a constraint given by a byte automaton."""

from __future__ import annotations

from collections import OrderedDict, defaultdict, deque
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from genlm_lab.control.constraint.budget.tokens import (
    FAR,
    byte_trie,
)
from genlm_lab.control.constraint.regular.dfa import (
    ByteDfa,
)

__all__ = ["AutomatonDistance"]


class AutomatonDistance:
    """Exact fewest tokens (EOS included) to end, for a constraint given by a byte automaton.

    Args:
        dfa: the constraint's language as a `ByteDfa` (its live part).
        tokens: the byte string of each token of the constraint's vocabulary.
        usable: the tokens the constraint may ever allow (not special, not empty).
        encode: maps a context to token indices (the potential's `encode`).
        lookup: token -> index (the potential's `lookup`).
        max_states: the most states reachable by tokens for which distances are
            worked out; past it `fits` keeps everything (and counts "unproven").
    """

    exact = True
    #: A `FinishGuide` where the constraint names a short finish (JSON), else None.
    guide = None

    def __init__(
        self,
        dfa: ByteDfa,
        tokens: Sequence[bytes],
        usable: Sequence[int],
        encode: Callable[[Sequence[Any]], list[int]],
        lookup: dict[Any, int] | None = None,
        max_states: int = 4096,
    ) -> None:
        self.dfa = dfa
        self.lookup = lookup
        self.tokens = list(tokens)
        self.usable = list(usable)
        self.trie = byte_trie(self.tokens, self.usable)
        self.encode = encode
        self.max_states = max_states
        self._dist: dict[int, int] | None = None
        self._states: OrderedDict[tuple[int, ...], int] = OrderedDict()
        #: kept / refused: answers; unproven: kept because the distances were too many to work out
        self.stats = {"kept": 0, "refused": 0, "unproven": 0}

    def successors(self, state: int) -> np.ndarray:
        """The automaton's state after each usable token from `state` (0: dead)."""
        at = np.empty(self.trie.n_nodes, dtype=np.int64)
        at[0] = state
        table = self.dfa.table
        for nodes, parents, data in self.trie.levels:
            at[nodes] = table[at[parents], data]
        return at[self.trie.token_node]

    def distances(self) -> dict[int, int] | None:
        """Fewest tokens from each state reachable by tokens to an accepting one (None: too many)."""
        if self._dist is not None:
            return self._dist
        start = self.dfa.start
        back: dict[int, set[int]] = defaultdict(set)
        seen = {start}
        todo = deque([start])
        while todo:
            s = todo.popleft()
            for d in np.unique(self.successors(s)).tolist():
                if d == 0:
                    continue
                back[d].add(s)
                if d not in seen:
                    if len(seen) >= self.max_states:
                        return None
                    seen.add(d)
                    todo.append(d)
        dist = {s: 0 for s in seen if self.dfa.final[s]}
        frontier = deque(dist)
        while frontier:
            s = frontier.popleft()
            for p in back[s]:
                if p not in dist:
                    dist[p] = dist[s] + 1
                    frontier.append(p)
        self._dist = dist
        return dist

    def state(self, ids: Sequence[int]) -> int:
        """The automaton's state after the tokens `ids` (0: dead), cached per context."""
        key = tuple(ids)
        found = self._states.get(key)
        if found is not None:
            return found
        parent = self._states.get(key[:-1]) if key else None
        if parent is not None:
            found = self.dfa.run(parent, self.tokens[key[-1]])
        else:
            found = self.dfa.run(self.dfa.start, b"".join(self.tokens[i] for i in key))
        self._states[key] = found
        if len(self._states) > 8192:
            self._states.popitem(last=False)
        return found

    def _text_state(self, ids: Sequence[int]) -> int:
        """The automaton's state after the text of `ids` (an EOS id is not text)."""
        return self.state([i for i in ids if i < len(self.tokens)])

    def _after(self, ids: Sequence[int]) -> np.ndarray:
        """The automaton's state after `ids` then each usable token (`trie.token_ids` order)."""
        return self.successors(self._text_state(ids))

    async def accepts(self, ids: Sequence[int]) -> bool:
        """Whether the text of `ids` is in the language."""
        return bool(self.dfa.final[self._text_state(ids)])

    async def allowed(self, ids: Sequence[int]) -> np.ndarray:
        """The tokens after which the text of `ids` can still end (some accepting state is ahead)."""
        dist = self.distances()
        after = self._after(ids)
        if dist is None:  # too many states to know which are live: every one that is not dead
            return self.trie.token_ids[after != 0]
        return self.trie.token_ids[np.array([s in dist for s in after.tolist()], dtype=bool)]

    async def enders(self, ids: Sequence[int]) -> np.ndarray:
        """The tokens that make the text of `ids` complete: exactly those."""
        return self.trie.token_ids[self.dfa.final[self._after(ids)]]

    def needed(self, context: Sequence[Any], ids: Sequence[int] | None = None) -> int | None:
        """The fewest tokens (EOS included) that end `context`; None if unknown, `FAR` if none.

        `ids`, if given, are the context's token indices (saves encoding it again).
        """
        dist = self.distances()
        if dist is None:
            return None
        ids = self.encode(context) if ids is None else ids
        state = self._text_state(ids)
        return FAR if state == 0 else dist.get(state, FAR - 1) + 1

    def needed_at_least(self, ids: Sequence[int]) -> int | None:
        """The fewest tokens (EOS included) that end the text of `ids` (exact); None where
        unknown or where nothing ends it."""
        needed = self.needed(None, ids)
        return None if needed is None or needed >= FAR - 1 else needed

    async def fits(
        self, context: Sequence[Any], left: int, ids: Sequence[int] | None = None
    ) -> bool:
        """Whether `context` can end within `left` tokens (EOS included): exact."""
        need = self.needed(context, ids)
        if need is None:
            self.stats["unproven"] += 1
            return True
        ok = need <= left
        self.stats["kept" if ok else "refused"] += 1
        return ok
