"""`smc_steer`: SMC with `n_beam` children per particle and resampling without replacement.

Each round every live particle is copied into `n_beam` children that step
independently; the `n_particles * n_beam` candidates are then cut back to
`n_particles` by the without-replacement scheme of Fearnhead & Clifford:
find c with sum_i min(1, c w_i) = N; candidates with c w_i >= 1 are kept
with their weight, the others are kept with probability c w_i (systematic
sampling, each at most once) and given weight 1/c. The mean weight remains
an unbiased estimate of Z, so `log_ml` is `logmeanexp` of the final weights.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from genlm_lab.smc._particles import check_n, is_alive
from genlm_lab.smc._run import open_run, run_particles
from genlm_lab.smc.options import RunOptions
from genlm_lab.smc.result import SMCResult
from genlm_lab.util import logsumexp

__all__ = ["smc_steer"]


def _threshold(desc: np.ndarray, n: int) -> tuple[int, float]:
    """How many candidates are kept surely, and log(c * w) of the first one that is not.

    `desc` holds more than `n` finite log-weights, sorted descending; c solves
    sum(min(1, c * w)) == n. Every quantity is taken relative to `desc[k]`, so
    weights hundreds of nats apart (whose ratios underflow) stay exact.

    Returns:
        (k, log_c) where candidates 0..k-1 have c * w >= 1 and
        log_c = log(c * w[k]) < 0.
    """
    for k in range(n):
        log_c = math.log(n - k) - logsumexp(desc[k:] - desc[k])
        if log_c < 0.0 and (k == 0 or log_c + (desc[k - 1] - desc[k]) >= 0.0):
            return k, log_c
    # Unreachable in exact arithmetic; after rounding, keep none surely.
    return 0, min(0.0, math.log(n) - logsumexp(desc - desc[0]))


def resample_without_replacement(
    log_weights: np.ndarray, n: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Keep at most `n` of the candidates; return (kept indices, their new log-weights).

    New weights are scaled so that their mean over the kept candidates equals
    the mean over all candidates in expectation.
    """
    log_weights = np.asarray(log_weights, dtype=np.float64)
    m = log_weights.size
    positive = np.flatnonzero(log_weights > -math.inf)
    if positive.size <= n:
        new = log_weights[positive] + math.log(positive.size / m) if positive.size else positive
        return positive, np.asarray(new, dtype=np.float64)
    order = positive[np.argsort(-log_weights[positive], kind="stable")]
    desc = log_weights[order]
    k, log_c = _threshold(desc, n)
    keep_all = np.sort(order[:k])
    rest = np.sort(order[k:])  # index order, as the systematic draw has always used
    # Inclusion probability c * w of each other candidate (each < 1, summing to n - k).
    probs = np.exp(np.minimum(0.0, log_c + (log_weights[rest] - desc[k])))
    cumulative = np.cumsum(probs)
    cumulative *= (n - k) / cumulative[-1]
    points = rng.random() + np.arange(n - k)
    where = np.minimum(np.searchsorted(cumulative, points, side="right"), rest.size - 1)
    picked = rest[np.unique(where)]
    scale = math.log(n / m)
    # A candidate kept with probability c * w gets weight 1 / c: log(1/c) = desc[k] - log_c.
    new = np.concatenate(
        [log_weights[keep_all] + scale, np.full(picked.size, desc[k] - log_c + scale)]
    )
    return np.concatenate([keep_all, picked]), new


async def smc_steer(model: Any, n_particles: int, n_beam: int, **options: Any) -> SMCResult:
    """SMC steering: expand each particle into `n_beam` children, keep `n_particles`.

    Args:
        model: the `Model` to copy into particles.
        n_particles: particles kept after every round.
        n_beam: children per live particle each round.
        **options: the run's options, as keywords (`RunOptions`: json_file,
            observers, seed, progress, profile, alarms).

    Returns:
        An `SMCResult` of the final particles.
    """
    run_options = RunOptions.of("smc_steer", options)
    n = check_n("n_particles", n_particles)
    beam = check_n("n_beam", n_beam)
    run, rng = open_run("smc_steer", model, n, {"n_beam": beam}, run_options)
    return await run_particles(run, model, n, _Beam(n, beam, rng), rng)


class _Beam:
    """smc_steer's policy: each live particle becomes `beam` children; cut back to `n`."""

    def __init__(self, n: int, beam: int, rng: np.random.Generator) -> None:
        self.n, self.beam, self.rng = n, beam, rng

    def expand(self, particles: list[Any], before: np.ndarray) -> tuple[list[Any], np.ndarray]:
        return _expand(particles, before, self.beam)

    def select(
        self, candidates: list[Any], weights: np.ndarray
    ) -> tuple[list[int] | None, Callable[[], list[Any]]]:
        kept, new_weights = resample_without_replacement(weights, self.n, self.rng)

        def cut() -> list[Any]:
            particles = [candidates[i] for i in kept]
            for p, w in zip(particles, new_weights, strict=True):
                p.weight = float(w)
            return particles

        return kept.tolist(), cut


def _expand(particles: list[Any], before: np.ndarray, beam: int) -> tuple[list[Any], np.ndarray]:
    """Children of every particle; weights scaled so their mean still estimates Z."""
    n_live = sum(is_alive(p) for p in particles)
    m = len(particles) - n_live + n_live * beam
    scale = math.log(m / len(particles))
    candidates: list[Any] = []
    starts: list[float] = []
    for p, start in zip(particles, before, strict=True):
        p.untwist()
        if is_alive(p):
            p.weight += scale - math.log(beam)
            children = [p] + [copy.deepcopy(p) for _ in range(beam - 1)]
            candidates.extend(children)
            starts.extend([start] * beam)
        else:
            p.weight += scale
            candidates.append(p)
            starts.append(start)
    return candidates, np.array(starts, dtype=np.float64)
