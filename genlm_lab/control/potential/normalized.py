"""`Normalized`: a potential whose next-token rows each sum to one (`p.normalize()`).

`p.normalize()` is the distribution a sampler that draws token by token from
`p`'s rows produces, written as a potential: `logw_next` is `p`'s row
renormalised, and `prefix(x)` is `p.prefix(x)` less the log-normaliser of
every row along `x`, so the three methods stay one consistent function.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from genlm_lab.control.core.weights import LazyWeights, WeightsBatch
from genlm_lab.control.potential.base import Potential
from genlm_lab.util import logsumexp

__all__ = ["Normalized"]


class Normalized(Potential):
    """`potential` with each `logw_next` row renormalised (`potential.normalize()`).

    `prefix` and `complete` cost one `batch_logw_next` over the context's prefixes.

    Args:
        potential: the potential to renormalise.
    """

    def __init__(self, potential: Potential) -> None:
        self.potential = potential
        self._share_vocabulary(potential)
        self.is_boolean = False

    def _default_name(self) -> str:
        return f"{self.potential.name}.normalize()"

    async def logw_next(self, context: Sequence[Any]) -> LazyWeights:
        return (await self.potential.logw_next(context)).normalize()

    async def batch_logw_next(self, contexts: Sequence[Sequence[Any]]) -> WeightsBatch:
        rows = await self.potential.batch_logw_next(contexts)
        return WeightsBatch(w.normalize() for w in rows)

    async def _log_normalisers(self, context: Sequence[Any]) -> float:
        """Sum of the log-normalisers of the rows after each proper prefix of `context`."""
        context = list(context)
        if not context:
            return 0.0
        rows = await self.potential.batch_logw_next([context[:t] for t in range(len(context))])
        return float(sum(logsumexp(np.asarray(w.weights)) for w in rows))

    async def prefix(self, context: Sequence[Any]) -> float:
        return await self.potential.prefix(context) - await self._log_normalisers(context)

    async def complete(self, context: Sequence[Any]) -> float:
        last = await self.potential.logw_next(context)
        total = await self.potential.complete(context) - await self._log_normalisers(context)
        return total - logsumexp(np.asarray(last.weights))

    def spawn(self) -> Normalized:
        return Normalized(self.potential.spawn())

    async def cleanup(self) -> None:
        await self.potential.cleanup()

    def __repr__(self) -> str:
        return f"{self.potential!r}.normalize()"
