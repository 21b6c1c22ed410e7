"""Small models with exactly computable evidence and posteriors."""

import itertools
import math

import numpy as np

from genlm_lab.smc import Bernoulli, Geometric, LogCategorical, Model

PROBS = (0.3, 0.6, 0.2, 0.5, 0.7)
TARGET = 2


def coin_sequences(probs=PROBS, target=TARGET):
    """Every flip sequence with its prior probability, and the exact evidence of the sum."""
    rows = []
    for flips in itertools.product([False, True], repeat=len(probs)):
        p = math.prod(q if f else 1 - q for f, q in zip(flips, probs, strict=True))
        rows.append((flips, p))
    z = sum(p for flips, p in rows if sum(flips) == target)
    return rows, z


def exact_flip_marginals(probs=PROBS, target=TARGET):
    rows, z = coin_sequences(probs, target)
    return [sum(p for f, p in rows if sum(f) == target and f[i]) / z for i in range(len(probs))]


def prob_sum_is(probs, need):
    """P(sum of independent flips with these probabilities == need)."""
    dist = np.zeros(len(probs) + 1)
    dist[0] = 1.0
    for q in probs:
        dist[1:] = dist[1:] * (1 - q) + dist[:-1] * q
        dist[0] *= 1 - q
    return dist[need] if 0 <= need <= len(probs) else 0.0


class Coins(Model):
    """Flip coins one per step; at the end condition on the number of heads.

    With `optimal=True` each flip is proposed from its exact conditional
    given the constraint, the locally optimal (here globally exact) proposal.
    """

    def __init__(self, probs=PROBS, target=TARGET, optimal=False):
        super().__init__()
        self.probs, self.target, self.optimal = probs, target, optimal
        self.flips = []

    async def step(self):
        t = len(self.flips)
        q = self.probs[t]
        proposal = None
        if self.optimal:
            need = self.target - sum(self.flips)
            rest = self.probs[t + 1 :]
            yes = q * prob_sum_is(rest, need - 1)
            no = (1 - q) * prob_sum_is(rest, need)
            with np.errstate(divide="ignore"):
                proposal = LogCategorical(np.log([no, yes]))
        flip = await self.sample(Bernoulli(q), proposal)
        self.flips.append(bool(flip))
        if len(self.flips) == len(self.probs):
            self.condition(sum(self.flips) == self.target)
            self.finish()

    def __str__(self):
        return "".join("H" if f else "T" for f in self.flips)


class GeometricWalk(Model):
    """x ~ Geometric(p) built one Bernoulli per step, then observe y ~ Geometric(1/(x+2)).

    Each step also observes a soft Bernoulli, so weights change every step.
    """

    def __init__(self, p=0.35, y=3, cap=60):
        super().__init__()
        self.p, self.y, self.cap, self.x = p, y, cap, 0

    async def step(self):
        stop = await self.sample(Bernoulli(self.p))
        if stop or self.x >= self.cap:
            await self.observe(Geometric(1.0 / (self.x + 2)), self.y)
            self.finish()
        else:
            self.x += 1

    def __str__(self):
        return str(self.x)


def geometric_walk_exact(p=0.35, y=3, cap=60):
    """Evidence and posterior of GeometricWalk by summation."""
    prior = [p * (1 - p) ** x for x in range(cap)] + [(1 - p) ** cap]
    like = [(1 / (x + 2)) * (1 - 1 / (x + 2)) ** y for x in range(cap + 1)]
    joint = [a * b for a, b in zip(prior, like, strict=True)]
    z = sum(joint)
    return z, [j / z for j in joint]
