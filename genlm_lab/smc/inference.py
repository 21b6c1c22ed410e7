"""Sequential Monte Carlo and importance sampling over `Model` particles.

All particles step concurrently (one asyncio task each), so their LM
requests reach the backend together and are batched there. Log-weights
satisfy: the mean of exp(weights) estimates Z at every step, because
resampling gives every particle the average weight. Hence `log_ml` is
`logmeanexp` of the final weights.
"""

from __future__ import annotations

import copy
import math
import os
from typing import Any

import numpy as np

from genlm_lab.smc._run import (
    Run,
    call_all,
    check_n,
    checked_weights,
    clone_all,
    gather_all,
    is_alive,
    seed_param,
    start_all,
    untwist_finished,
    weights_of,
)
from genlm_lab.smc.resample import RESAMPLING_METHODS, resample
from genlm_lab.smc.result import SMCResult, effective_sample_size
from genlm_lab.smc.rng import make_rng, using_rng
from genlm_lab.util import logsumexp
from genlm_lab.util.progress import progress_enabled

__all__ = ["importance_sampling", "smc_standard"]


async def smc_standard(
    model: Any,
    n_particles: int,
    ess_threshold: float = 0.5,
    resampling_method: str = "stratified",
    json_file: str | os.PathLike | None = None,
    observers: Any = (),
    seed: int | np.random.Generator | None = None,
    progress: bool | None = None,
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
        json_file: if given, the `SMCRecord` is written there step by step (JSON lines).
        observers: objects with `on_step(entry)` (and optionally `on_finish(record)`).
        seed: an int or numpy Generator for every random choice of the run.
        progress: a bar of steps, live particles and ESS; None shows it in a
            notebook (IPython kernel) only, not in terminals, scripts or tests.

    Returns:
        An `SMCResult` of the final particles; `result.record` holds the history.

    Raises:
        ValueError: for invalid settings. Exceptions from the model propagate,
            after the record file is closed and queued LM requests are dropped.
    """
    n = check_n("n_particles", n_particles)
    ess_threshold = float(ess_threshold)
    if not 0.0 <= ess_threshold <= 1.0:
        raise ValueError(f"ess_threshold must be in [0, 1], got {ess_threshold}")
    if resampling_method not in RESAMPLING_METHODS:
        raise ValueError(
            f"unknown resampling method {resampling_method!r}; expected one of {list(RESAMPLING_METHODS)}"
        )
    params = {
        "ess_threshold": ess_threshold,
        "resampling_method": resampling_method,
        "seed": seed_param(seed),
    }
    return await _smc(
        "smc_standard",
        model,
        n,
        ess_threshold,
        resampling_method,
        json_file,
        observers,
        seed,
        params,
        progress,
    )


async def importance_sampling(
    model: Any,
    n_particles: int,
    json_file: str | os.PathLike | None = None,
    observers: Any = (),
    seed: int | np.random.Generator | None = None,
    progress: bool | None = None,
) -> SMCResult:
    """Run every particle to the end without resampling (SMC with ess_threshold = 0).

    `log_ml` is then the log of the plain importance-sampling estimate of Z.
    The arguments mean what they mean for `smc_standard`.
    """
    n = check_n("n_particles", n_particles)
    params = {"seed": seed_param(seed)}
    return await _smc(
        "importance_sampling",
        model,
        n,
        0.0,
        "multinomial",
        json_file,
        observers,
        seed,
        params,
        progress,
    )


async def _smc(
    algorithm: str,
    model: Any,
    n: int,
    ess_threshold: float,
    method: str,
    json_file: Any,
    observers: Any,
    seed: Any,
    params: dict,
    progress: bool | None,
) -> SMCResult:
    rng = make_rng(seed)
    run = Run(algorithm, model, n, params, json_file, observers, progress_enabled(progress))
    particles: list[Any] = []
    with using_rng(rng):
        try:
            particles = [copy.deepcopy(model) for _ in range(n)]
            before = weights_of(particles)
            if await start_all(particles):
                return await run.stop_all_dead(particles, None)
            while any(is_alive(p) for p in particles):
                for p in particles:
                    p.untwist()
                await gather_all(call_all([p for p in particles if is_alive(p)], "step"))
                untwist_finished(particles)
                weights = checked_weights(particles, run.steps + 1)
                if np.all(weights == -math.inf):
                    return await run.stop_all_dead(particles, before)
                ancestors = None
                more = any(is_alive(p) for p in particles)
                if more and effective_sample_size(weights) < ess_threshold * n:
                    ancestors = resample(weights, n, method, rng)
                    stepped = particles
                    await run.emit(stepped, before, ancestors)
                    particles = clone_all(stepped, ancestors)
                    average = logsumexp(weights) - math.log(n)
                    for p in particles:
                        p.weight = average
                else:
                    await run.emit(particles, before, None)
                before = weights_of(particles)
            return await run.finish(particles, "finished")
        except BaseException:
            run.interrupted(particles)
            raise
