"""The order AWRS draws in, so that a draw costs O(1), not O(|V|).

Adaptivity makes the i.i.d. draws cheap. A rejected token is never asked
about again. A run of draws that would land in the rejected set R (of mass
m_R) is skipped in O(1): its length is Geometric(1 - m_R), and the next draw
is from q restricted to everything outside R: a repeat of an accepted token
(no check), or the next unseen token of a without-replacement order (Gumbel
keys, sorted lazily in growing chunks), so a draw costs O(1), not O(|V|).
1 - m_R is computed as the sum of the remaining mass, not as one minus a
running sum, so it stays exact when nearly all mass is rejected. Each
iteration is either the first look at a token or a repeat of an accepted
one: at most |V| + max_accepts iterations.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from genlm_lab.control.core.tokens import sample_linear

__all__ = ["UnseenTokens", "draw_from_cdf", "pick_weighted", "skipped_draws"]


def skipped_draws(p_out: float, rng: np.random.Generator) -> int:
    """How many draws land in the rejected set before one lands outside: Geometric(p_out) - 1."""
    u = 1.0 - rng.random()  # in (0, 1]
    if p_out >= 1 or u >= 1:
        return 0
    # floor(log u / log(1 - p_out)), in logs so that a tiny p_out cannot
    # overflow; counts beyond e^700 are capped (see `awrs`'s docstring).
    log_skip = math.log(-math.log(u)) - math.log(-math.log1p(-p_out))
    return math.floor(math.exp(min(log_skip, 700.0)))


def draw_from_cdf(cdf: np.ndarray, q: np.ndarray, rng: np.random.Generator) -> int:
    """An index drawn with probability q / sum(q), from q's cumulative sum."""
    index = min(int(np.searchsorted(cdf, rng.random() * cdf[-1], side="right")), len(cdf) - 1)
    if q[index] <= 0:  # the uniform rounded up to the total
        index = int(np.flatnonzero(q > 0)[-1])
    return index


def pick_weighted(weights: dict[int, float], rng: np.random.Generator) -> int:
    """A key of `weights` drawn in proportion to its value."""
    keys = list(weights)
    return keys[sample_linear(np.array([weights[k] for k in keys]), rng)]


class UnseenTokens:
    """The tokens not drawn yet, in the order that sampling without replacement from q gives.

    Sorting log q + Gumbel noise in decreasing order gives that order. It is
    sorted in chunks of growing size, so a call that draws few tokens sorts
    few. `mass()` is the q-mass of the tokens left, summed over them (never
    one total minus a running sum).
    """

    def __init__(self, q: np.ndarray, seen: Sequence[int], rng: np.random.Generator) -> None:
        with np.errstate(divide="ignore"):
            self.keys = np.log(q) + rng.gumbel(size=len(q))
        self.keys[list(seen)] = -math.inf
        self.q = q
        self.chunk = np.zeros(0, dtype=np.int64)
        self.suffix = np.zeros(1)  # suffix[j]: mass of chunk[j:]
        self.pos = 0
        self.rest = float(q[self.keys > -math.inf].sum())  # mass outside the chunk
        self.size = 32

    def mass(self) -> float:
        return self.rest + float(self.suffix[self.pos])

    def pop(self) -> int | None:
        """The next token of the order (None when none with mass is left)."""
        if self.pos == len(self.chunk):
            self._next_chunk()
            if not len(self.chunk):
                return None
        index = int(self.chunk[self.pos])
        self.pos += 1
        return index

    def _next_chunk(self) -> None:
        live = np.flatnonzero(self.keys > -math.inf)
        k = min(self.size, live.size)
        self.size *= 4
        if k < live.size:
            live = live[np.argpartition(-self.keys[live], k - 1)[:k]]
        chunk = live[np.argsort(-self.keys[live], kind="stable")]
        self.keys[chunk] = -math.inf
        self.chunk, self.pos = chunk, 0
        self.suffix = np.append(np.cumsum(self.q[chunk][::-1])[::-1], 0.0)
        self.rest = float(self.q[self.keys > -math.inf].sum())
