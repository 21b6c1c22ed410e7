"""Lookahead: when the next bytes are known, evaluate tomorrow's extensions in today's forward.

A beam reading a known text (`prefill`, scoring a text, the benchmark's read
loop) knows every token boundary ahead. The extensions its candidates may
need over the next `depth` bytes are token contexts spelled by that text, so
they can join the batched forward the beam runs anyway: one forward of many
rows costs far less than many one-row forwards. Their log-probabilities land
in the backend's cache; when the beam reaches them it reads them from there.

Nothing the beam computes changes: the same candidates, weights, records and
next-byte distributions as without lookahead (only the backend's cache is
warmer). Rows that turn out unneeded (their candidate was pruned first) are
the waste, counted in `LookaheadStats`.

Which rows: every token that a candidate could commit within the known
bytes, and tokens after those (tilings of the text), each with an upper
bound on its weight (a candidate's weight only falls as it reads). Rows whose
bound is below the K-th best weight known exactly at that byte are left out,
as are rows more than `MAX_NEW_TOKENS` tokens beyond a computed context, and
all but the first `budget` (the next byte's rows first, heaviest bound first;
by default `ROWS_PER_CANDIDATE` rows per unit of beam width, and never past
the backend's batch size). This choice only affects speed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from genlm_lab.bytes.trie_state import LazyTrieState, eot_edges

__all__ = [
    "DEFAULT_DEPTH",
    "MAX_NEW_TOKENS",
    "ROWS_PER_CANDIDATE",
    "Lookahead",
    "LookaheadStats",
    "check_budget",
    "check_depth",
    "check_text",
    "speculative_rows",
]

DEFAULT_DEPTH = 1
"""Bytes ahead whose extensions join a forward, by default (see `ByteBeamState.expect`)."""
MAX_NEW_TOKENS = 2
"""Rows ahead need at most this many tokens beyond a computed context.

A forward pads every row to its longest, so one row of three new tokens
makes every row cost three positions: past the cap, the padding costs what
the fewer forwards save.
"""
ROWS_PER_CANDIDATE = 2
"""Default budget: most rows added to one forward per unit of beam width K.

A candidate commits a token at the next byte or not, and its fresh
extension may commit a one-byte token there: about two rows per candidate.
A smaller budget leaves rows for later forwards; a larger one saves none.
"""


@dataclass
class LookaheadStats:
    """What lookahead evaluated: rows issued ahead, and how many the beam then needed."""

    rows: int = 0
    used: int = 0

    @property
    def waste(self) -> float:
        """Share of the rows issued ahead that no candidate needed."""
        return 1 - self.used / self.rows if self.rows else 0.0


@dataclass
class Lookahead:
    """Bytes a beam will read next, from `start`, and what was evaluated ahead of them.

    Args:
        text: the known bytes.
        start: the beam position of `text[0]`.
        depth: how many bytes ahead to evaluate extensions for.
        budget: most speculative rows added to one forward (None:
            `ROWS_PER_CANDIDATE` times the beam width).
    """

    text: bytes
    start: int
    depth: int = DEFAULT_DEPTH
    budget: int | None = None
    stats: LookaheadStats = field(default_factory=LookaheadStats)
    issued: set = field(default_factory=set)

    def ahead(self, position: int) -> bytes:
        """The known bytes from `position`, at most `depth` of them."""
        i = position - self.start
        return self.text[i : i + self.depth] if 0 <= i < len(self.text) else b""

    def expects(self, position: int, byte: int) -> bool:
        """Whether the byte at `position` is known to be `byte`."""
        i = position - self.start
        return 0 <= i < len(self.text) and self.text[i] == byte


def speculative_rows(
    states: list[LazyTrieState],
    fresh: list[LazyTrieState],
    ahead: bytes,
    K: int,
    budget: int,
    max_new: int = MAX_NEW_TOKENS,
) -> list[Any]:
    """Token contexts (`StatefulTokenizedLM`s) the beam may need while reading `ahead`.

    Args:
        states: the beam's candidates (materialized), at the current position.
        fresh: extensions evaluated in this forward (at the root, not yet materialized).
        ahead: the known next bytes.
        K: beam width (rows of candidates that cannot be in the top K are left out).
        budget: the most rows returned (heaviest upper bound first).
        max_new: rows needing more tokens than this beyond a computed context
            are left out (every row of a forward is padded to its longest).

    Returns:
        Contexts not among those of `fresh`: the nearest byte's first, and
        within a byte the heaviest bound first.
    """
    if not ahead or budget <= 0:
        return []
    trie = (states or fresh)[0].trie.trie
    children = trie.children
    # frontier: (lm_state, node, weight bound, mass or None, tokens beyond a computed
    # context); mass known means exact weight
    frontier = [(s.lm_state, s.node, s.weight, s._mass, 0) for s in states if s._mass is not None]
    frontier += [(e.lm_state, e.node, e.weight, None, 1) for e in fresh]
    rows: list[tuple[int, float, Any]] = []  # (bytes ahead, weight bound, context)
    seen = {e.lm_state.context for e in fresh}
    for step, b in enumerate(ahead):
        moved = []
        for lm, node, w, mass, new in frontier:
            child = children[node].get(b)
            if child is None:
                continue
            if mass is not None:
                m = float(mass[child])
                if m <= 0:
                    continue
                w = w + math.log(m) - math.log(float(mass[node]))
            moved.append((lm, child, w, mass, new))
        exact = sorted((w for _, _, w, mass, _ in moved if mass is not None), reverse=True)
        bar = exact[K - 1] if len(exact) >= K else -math.inf
        frontier = []
        for lm, node, w, mass, new in moved:
            if w < bar:
                continue  # K candidates known to be heavier: it would be pruned here
            frontier.append((lm, node, w, mass, new))
            if new >= max_new:
                continue  # its rows would pad every row of the forward to more tokens
            for leaf, token_id in eot_edges(trie, node):
                ub = w
                if mass is not None:
                    m = float(mass[leaf])
                    if m <= 0:
                        continue
                    ub = w + math.log(m) - math.log(float(mass[node]))
                nxt = lm << token_id
                if nxt.context in seen:
                    continue
                seen.add(nxt.context)
                rows.append((step, ub, nxt))
                frontier.append((nxt, trie.root, ub, None, new + 1))
    rows.sort(key=lambda r: (r[0], -r[1]))  # the next byte's rows first, heaviest first
    return [lm for _, _, lm in rows[:budget]]


def check_text(text: Any) -> bytes:
    """The bytes a beam is told to expect: text (UTF-8), bytes, or ints 0..255."""
    if isinstance(text, str):
        return text.encode("utf-8")
    if isinstance(text, (bytes, bytearray, memoryview)):
        return bytes(text)
    if isinstance(text, (list, tuple)) and all(
        hasattr(b, "__index__") and not isinstance(b, bool) and 0 <= int(b) <= 255 for b in text
    ):
        return bytes(int(b) for b in text)
    raise ValueError(f"expect reads text, bytes or a list of byte ints 0..255, got {text!r}")


def check_budget(budget: Any) -> int | None:
    if budget is None:
        return None
    if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)) or budget < 0:
        raise ValueError(f"budget must be None or an int >= 0 (rows per forward), got {budget!r}")
    return int(budget)


def check_depth(depth: Any) -> int:
    if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)) or depth < 0:
        raise ValueError(f"lookahead must be an int >= 0 (bytes ahead), got {depth!r}")
    return int(depth)
