"""`csmc_standard`: conditional SMC, the kernel of particle Gibbs.

Conditional SMC (Andrieu, Doucet & Holenstein 2010, section 4.3) is SMC in
which slot 0 holds the *retained particle*: a path fixed in advance that the
run extends move by move instead of drawing, and that resampling never
drops. The loop tells each particle which it is through a writeable
`is_retained` attribute (True on slot 0, False on the others, set again
after every resampling: it belongs to the slot, not to the path); the
model's `step` forces the next move of the retained path when it is True
(`genlm_lab.control`'s `SequenceModel` with a `RetainedTokenSampler`).

Resampling keeps slot 0 as it is and draws the other n - 1 slots' ancestors
multinomially from all n weights, slot 0's included; every slot then gets
the average weight. Everything else is `smc_standard`'s loop: the same
record (each entry carries "retained": 0), observers, seed and alarms.

Why it matters: let pi be the distribution the final weights of an SMC run
are proper for. If the retained path is drawn from pi, then a final particle
picked in proportion to its weight is again distributed as pi: the kernel
"retained path -> picked path" leaves pi invariant, for any number of
particles and ESS threshold (whether to resample depends on the weights
only). Repeating it is particle Gibbs (`genlm_lab.control.ParticleGibbs`).
The mean final weight is no estimate of Z here: the retained path is not
drawn by the run. Resampling is multinomial only, as in genlm-control: the
invariance argument needs the free slots' ancestors drawn independently in
proportion to the weights.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from genlm_lab.smc._run import open_run, run_particles
from genlm_lab.smc.inference import _Adaptive
from genlm_lab.smc.options import RunOptions
from genlm_lab.smc.resample import resample
from genlm_lab.smc.result import SMCResult

__all__ = ["RETAINED_SLOT", "csmc_standard"]

#: The slot of the retained particle, in every step (genlm-control's convention).
RETAINED_SLOT = 0


async def csmc_standard(
    model: Any, n_particles: int, ess_threshold: float = 0.5, **options: Any
) -> SMCResult:
    """Run conditional SMC: slot 0 follows the retained path and survives every resampling.

    Args:
        model: the `Model` to copy into particles; its `step` must read the
            writeable `is_retained` attribute and force the retained path's
            next move when it is True.
        n_particles: all particles, the retained one included (1 runs it alone).
        ess_threshold: resample when the ESS falls below this fraction of n_particles.
        **options: the run's options (`RunOptions`: json_file, observers, seed,
            progress, profile, alarms).

    Returns:
        An `SMCResult`: slot 0 holds the retained path; the others may descend
        from any slot, slot 0 included. `result.record` holds the history.

    Raises:
        ValueError: if n_particles is not a positive int or ess_threshold is
            outside [0, 1] (the message names genlm-control's bound).
    """
    run_options = RunOptions.of("csmc_standard", options)
    if isinstance(n_particles, bool) or not isinstance(n_particles, (int, np.integer)):
        raise ValueError(f"n_particles must be an int >= 1, got {n_particles!r}")
    if n_particles < 1:
        raise ValueError(f"n_particles must be >= 1, got {n_particles}")
    ess_threshold = float(ess_threshold)
    if not 0.0 <= ess_threshold <= 1.0:
        raise ValueError(f"ess_threshold must be in [0, 1], got {ess_threshold}")
    n = int(n_particles)
    params = {
        "ess_threshold": ess_threshold,
        "resampling_method": "multinomial",
        "retained": RETAINED_SLOT,
    }
    run, rng = open_run("csmc_standard", model, n, params, run_options)
    return await run_particles(run, model, n, _Conditional(n, ess_threshold, rng), rng)


class _Conditional(_Adaptive):
    """csmc_standard's policy: tag the slots; on a low ESS keep slot 0, draw the rest."""

    def __init__(self, n: int, ess_threshold: float, rng: np.random.Generator) -> None:
        super().__init__(n, ess_threshold, "multinomial", rng)

    def mark(self, slot: int, particle: Any) -> None:
        particle.is_retained = slot == RETAINED_SLOT

    def ancestors(self, weights: np.ndarray) -> list[int]:
        """Slot 0 keeps its own particle; the other n - 1 are drawn from all the weights."""
        free = resample(weights, self.n - 1, self.method, self.rng) if self.n > 1 else []
        return [RETAINED_SLOT, *(int(a) for a in free)]
