"""Toy models whose evidence and posterior can be computed exactly (for tests and teaching)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from genlm_lab.smc.distributions import Bernoulli, Geometric, LogCategorical
from genlm_lab.smc.model import Model

__all__ = ["Coins", "GeometricWalk"]


def _prob_sum_is(probs: Sequence[float], need: int) -> float:
    """P(the number of heads among independent flips with these probabilities == need)."""
    dist = np.zeros(len(probs) + 1)
    dist[0] = 1.0
    for q in probs:
        dist[1:] = dist[1:] * (1 - q) + dist[:-1] * q
        dist[0] *= 1 - q
    return float(dist[need]) if 0 <= need <= len(probs) else 0.0


class Coins(Model):
    """Flip one coin per step (heads with probability `probs[t]`); at the end
    condition on exactly `target` heads.

    With `optimal=True` each flip is proposed from its exact conditional given
    the constraint: then every particle's weight is exactly log P(target heads).

    Args:
        probs: the heads probability of each flip.
        target: the required number of heads.
        optimal: propose from the exact conditional instead of the prior.
    """

    def __init__(
        self,
        probs: Sequence[float] = (0.3, 0.6, 0.2, 0.5, 0.7),
        target: int = 2,
        optimal: bool = False,
    ) -> None:
        super().__init__()
        self.probs, self.target, self.optimal = tuple(probs), target, optimal
        self.flips: list[bool] = []

    def immutable_properties(self) -> set[str]:
        return {"probs"}

    async def step(self) -> None:
        t = len(self.flips)
        q = self.probs[t]
        proposal = None
        if self.optimal:
            need = self.target - sum(self.flips)
            rest = self.probs[t + 1 :]
            weights = [(1 - q) * _prob_sum_is(rest, need), q * _prob_sum_is(rest, need - 1)]
            with np.errstate(divide="ignore"):
                proposal = LogCategorical(np.log(weights))
        flip = await self.sample(Bernoulli(q), proposal)
        self.flips.append(bool(flip))
        if len(self.flips) == len(self.probs):
            self.condition(sum(self.flips) == self.target)
            self.finish()

    def __str__(self) -> str:
        return "".join("H" if f else "T" for f in self.flips)


class GeometricWalk(Model):
    """x ~ Geometric(p), built one Bernoulli(p) "stop?" per step (capped at `cap`),
    then observe y ~ Geometric(1 / (x + 2)).

    Args:
        p: the stopping probability of each step.
        y: the observed value.
        cap: the largest x (reached, x stops there).
    """

    def __init__(self, p: float = 0.35, y: int = 3, cap: int = 60) -> None:
        super().__init__()
        self.p, self.y, self.cap, self.x = p, y, cap, 0

    async def step(self) -> None:
        stop = await self.sample(Bernoulli(self.p))
        if stop or self.x >= self.cap:
            await self.observe(Geometric(1.0 / (self.x + 2)), self.y)
            self.finish()
        else:
            self.x += 1

    def __str__(self) -> str:
        return str(self.x)
