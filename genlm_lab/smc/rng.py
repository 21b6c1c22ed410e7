"""The random generator that distributions draw from, set per inference run (public:
samplers and the evaluation runner bind it too).

Inference functions bind a `numpy.random.Generator` (seeded when the caller
passes `seed`) for the duration of a run; distributions read it with
`get_rng()`. A context variable keeps concurrent runs apart, and asyncio
tasks inherit it, so every particle of one run shares one seeded stream.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

import numpy as np

_RNG: contextvars.ContextVar[np.random.Generator | None] = contextvars.ContextVar(
    "genlm_lab_smc_rng", default=None
)
_FALLBACK = np.random.default_rng()


def get_rng() -> np.random.Generator:
    """The generator of the current run (a process-wide one outside any run)."""
    rng = _RNG.get()
    return _FALLBACK if rng is None else rng


def make_rng(seed: int | np.random.Generator | None) -> np.random.Generator:
    """A generator from a seed, an existing generator, or fresh entropy (None)."""
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer))):
        raise ValueError(f"seed must be an int, a numpy Generator or None, got {seed!r}")
    return np.random.default_rng(seed)


@contextlib.contextmanager
def using_rng(rng: np.random.Generator) -> Iterator[np.random.Generator]:
    """Make `rng` the generator that `get_rng()` returns inside the block."""
    token = _RNG.set(rng)
    try:
        yield rng
    finally:
        _RNG.reset(token)
