"""Sequential Monte Carlo and importance sampling over `Model` particles.

All particles step concurrently (one asyncio task each), so their LM
requests reach the backend together and are batched there. Log-weights
satisfy: the mean of exp(weights) estimates Z at every step, because
resampling gives every particle the average weight. Hence `log_ml` is
`logmeanexp` of the final weights.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from genlm_lab.smc._particles import check_n, clone_all, is_alive
from genlm_lab.smc._run import open_run, run_particles
from genlm_lab.smc.options import RunOptions
from genlm_lab.smc.resample import RESAMPLING_METHODS, resample
from genlm_lab.smc.result import SMCResult, effective_sample_size
from genlm_lab.util import logsumexp

__all__ = ["importance_sampling", "smc_standard"]


async def smc_standard(
    model: Any,
    n_particles: int,
    ess_threshold: float = 0.5,
    resampling_method: str = "stratified",
    **options: Any,
) -> SMCResult:
    """Run sequential Monte Carlo with adaptive resampling.

    Each round every live particle takes one `step` (concurrently); when the
    effective sample size falls below `ess_threshold * n_particles` the
    particles are resampled and all given the average weight.

    Args:
        model: the `Model` to copy into particles (left unchanged).
        n_particles: number of particles.
        ess_threshold: resampling threshold as a fraction of n_particles
            (0 never resamples; 1 resamples after every step whose weights
            are not all equal, since resampling needs ESS strictly below it).
        resampling_method: "multinomial", "stratified", "systematic" or "residual".
        **options: the run's options, as keywords (`RunOptions`: json_file,
            observers, seed, progress, profile, alarms).

    Returns:
        An `SMCResult` of the final particles; `result.record` holds the history.

    Raises:
        ValueError: for invalid settings. Exceptions from the model propagate,
            after the record file is closed and queued LM requests are dropped.
        TypeError: for a keyword that is no run option.
    """
    run_options = RunOptions.of("smc_standard", options)
    n = check_n("n_particles", n_particles)
    ess_threshold = float(ess_threshold)
    if not 0.0 <= ess_threshold <= 1.0:
        raise ValueError(f"ess_threshold must be in [0, 1], got {ess_threshold}")
    if resampling_method not in RESAMPLING_METHODS:
        raise ValueError(
            f"unknown resampling method {resampling_method!r}; expected one of {list(RESAMPLING_METHODS)}"
        )
    params = {"ess_threshold": ess_threshold, "resampling_method": resampling_method}
    return await _smc(
        "smc_standard", model, n, ess_threshold, resampling_method, params, run_options
    )


async def importance_sampling(model: Any, n_particles: int, **options: Any) -> SMCResult:
    """Run every particle to the end without resampling (SMC with ess_threshold = 0).

    `log_ml` is then the log of the plain importance-sampling estimate of Z.
    The arguments mean what they mean for `smc_standard`.
    """
    run_options = RunOptions.of("importance_sampling", options)
    n = check_n("n_particles", n_particles)
    return await _smc("importance_sampling", model, n, 0.0, "multinomial", {}, run_options)


async def _smc(
    algorithm: str,
    model: Any,
    n: int,
    ess_threshold: float,
    method: str,
    params: dict,
    options: RunOptions,
) -> SMCResult:
    run, rng = open_run(algorithm, model, n, params, options)
    return await run_particles(run, model, n, _Adaptive(n, ess_threshold, method, rng), rng)


class _Adaptive:
    """smc_standard's policy: every particle steps; resample when the ESS drops too low."""

    def __init__(self, n: int, ess_threshold: float, method: str, rng: np.random.Generator):
        self.n, self.ess_threshold, self.method, self.rng = n, ess_threshold, method, rng

    def expand(self, particles: list[Any], before: np.ndarray) -> tuple[list[Any], np.ndarray]:
        for slot, p in enumerate(particles):
            p.untwist()
            self.mark(slot, p)
        return particles, before

    def mark(self, slot: int, particle: Any) -> None:
        """Tag a particle by its slot after each step and resampling (nothing here)."""

    def ancestors(self, weights: np.ndarray) -> list[int]:
        """Each new slot's parent: `n` draws of the scheme."""
        return [int(a) for a in resample(weights, self.n, self.method, self.rng)]

    def select(
        self, candidates: list[Any], weights: np.ndarray
    ) -> tuple[list[int] | None, Callable[[], list[Any]]]:
        more = any(is_alive(p) for p in candidates)
        if not more or effective_sample_size(weights) >= self.ess_threshold * self.n:
            return None, lambda: candidates
        ancestors = self.ancestors(weights)

        def resampled() -> list[Any]:
            particles = clone_all(candidates, ancestors)
            average = logsumexp(weights) - math.log(self.n)
            for slot, p in enumerate(particles):
                p.weight = average
                self.mark(slot, p)
            return particles

        return ancestors, resampled
