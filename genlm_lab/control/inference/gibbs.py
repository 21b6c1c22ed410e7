"""`ParticleGibbs`: a Markov chain of conditional SMC sweeps, each keeping the path the last one picked.

One sweep runs `SMC(...)(..., retained_sequence=path)`: particle 0 follows
`path` and survives every resampling while the others draw freely, then one
final particle is picked in proportion to its weight; its path is the next
sweep's retained path. The first sweep, without a path, is plain SMC.

The invariant: let pi be the target restricted to `max_tokens`, pi(y)
proportional to `target.complete(y) * critic(y)` for every y of at most
`max_tokens` tokens (EOS included). If the retained path is distributed as
pi, so is the picked one: each sweep leaves pi invariant (Andrieu, Doucet &
Holenstein 2010, theorem 5), for any n_particles >= 2 and ESS threshold.
Where the proposal reaches every path of pi, the chain is irreducible and
its law converges to pi from any start; tests/control/inference/test_csmc.py
builds the kernel exactly on toys and checks pi K = pi. Unlike one SMC run,
whose pick is biased for a finite number of particles, the chain's
averages over sweeps converge to pi's as it runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from genlm_lab.control.inference.csmc import check_retained
from genlm_lab.control.inference.particle import UnitSampler
from genlm_lab.control.inference.sequences import Sequences
from genlm_lab.control.inference.smc import SMC
from genlm_lab.control.potential.base import Potential
from genlm_lab.smc import make_rng, resample
from genlm_lab.util import Chart

__all__ = ["ParticleGibbs", "ParticleGibbsChain"]


@dataclass
class ParticleGibbsChain:
    """The states of a particle-Gibbs chain and its last sweep.

    Attributes:
        paths: the retained path after each sweep (EOS last), in order.
        picked: the slot each sweep's path was picked from (0: the retained one).
        last: the last sweep's particles, with its record (`last.record`).
    """

    paths: list[list[Any]]
    picked: list[int]
    last: Sequences

    def posterior(self, burn_in: int = 0) -> Chart:
        """How often each path was the chain's state after the first `burn_in` sweeps.

        Raises:
            ValueError: if burn_in leaves no sweep.
        """
        kept = self.paths[burn_in:]
        if burn_in < 0 or not kept:
            raise ValueError(f"burn_in={burn_in} leaves none of the {len(self.paths)} sweeps")
        counts: dict[tuple, float] = {}
        for path in kept:
            counts[tuple(path)] = counts.get(tuple(path), 0.0) + 1.0 / len(kept)
        return Chart(0.0, sorted(counts.items(), key=lambda kv: -kv[1]))

    @property
    def moved(self) -> float:
        """The share of sweeps whose path differs from the one before (a mixing check)."""
        pairs = list(zip(self.paths, self.paths[1:], strict=False))
        return sum(a != b for a, b in pairs) / len(pairs) if pairs else 0.0


class ParticleGibbs:
    """Particle Gibbs over a token sampler: conditional SMC sweeps around a retained path.

    See the module for the invariant: every sweep leaves the target
    restricted to `max_tokens` (times the critic) invariant.

    Args:
        unit_sampler: a token sampler whose weight is a function of the
            token (`direct_token_sampler(target)`, with or without a proposal).
        critic: a potential that multiplies the target, or None.
        record_factors: record each factor's weight of every draw (views);
            off by default, as a chain runs many sweeps.
    """

    def __init__(
        self,
        unit_sampler: UnitSampler,
        critic: Potential | None = None,
        record_factors: bool = False,
    ) -> None:
        self.smc = SMC(unit_sampler, critic, record_factors=record_factors)

    async def step(
        self,
        retained: Sequence[Any] | None,
        n_particles: int,
        ess_threshold: float,
        max_tokens: int,
        rng: np.random.Generator,
        **options: Any,
    ) -> tuple[list[Any], int, Sequences]:
        """One sweep: `(picked path, its slot, the sweep's particles)`.

        Conditional SMC around `retained` (plain SMC when None), then one
        particle picked in proportion to its final weight with `rng`.

        Raises:
            ValueError: if every particle of a plain sweep died (nothing to pick).
        """
        seed = int(rng.integers(2**63))
        sweep = await self.smc(
            n_particles,
            ess_threshold,
            max_tokens,
            retained_sequence=None if retained is None else list(retained),
            seed=seed,
            **options,
        )
        if not np.any(sweep.log_weights > -np.inf):
            raise ValueError(
                f"every one of the {n_particles} particles of the first sweep died, so it has no "
                "path to keep: pass initial= a path of the target, or more particles"
            )
        slot = int(resample(sweep.log_weights, 1, "multinomial", rng)[0])
        return list(sweep.contexts[slot]), slot, sweep

    async def __call__(
        self,
        n_particles: int,
        ess_threshold: float,
        max_tokens: int,
        n_iterations: int,
        initial: Sequence[Any] | None = None,
        seed: int | np.random.Generator | None = None,
        **options: Any,
    ) -> ParticleGibbsChain:
        """Run `n_iterations` sweeps and return the chain.

        Args:
            n_particles: particles per sweep, the retained one included (>= 2).
            ess_threshold: resample when the ESS falls below this fraction.
            max_tokens: maximum length, EOS included (the target is restricted to it).
            n_iterations: how many sweeps (>= 1).
            initial: the first retained path (EOS last), e.g. one of a
                `Sequences`' contexts; None starts with a plain SMC sweep.
            seed: an int or numpy Generator for every choice of the chain.
            **options: keyword options of each sweep's `SMC.__call__`
                (observers, budget, ...; a `ParticleView` follows sweep after sweep).

        Raises:
            ValueError: if n_particles < 2 (a lone retained particle never
                moves), n_iterations < 1, or `initial` is not a whole path of
                the target within max_tokens (see `check_retained`).
        """
        if isinstance(n_particles, bool) or not isinstance(n_particles, int | np.integer):
            raise ValueError(f"n_particles must be an int >= 2, got {n_particles!r}")
        if n_particles < 2:
            raise ValueError(
                f"particle Gibbs needs n_particles >= 2, got {n_particles}: with the retained "
                "particle alone every sweep returns it and the chain never moves"
            )
        if isinstance(n_iterations, bool) or not isinstance(n_iterations, int | np.integer):
            raise ValueError(f"n_iterations must be an int >= 1, got {n_iterations!r}")
        if n_iterations < 1:
            raise ValueError(f"n_iterations must be >= 1, got {n_iterations}")
        if "json_path" in options or "seed" in options:
            raise ValueError("a chain's sweeps take neither json_path nor their own seed")
        rng = make_rng(seed)
        path = None
        if initial is not None:
            target = self.smc.unit_sampler.target
            path = await check_retained(
                target, self.smc.critic, initial, int(max_tokens), finished=True
            )
        paths, picked = [], []
        sweep = None
        for _ in range(int(n_iterations)):
            path, slot, sweep = await self.step(
                path, n_particles, ess_threshold, max_tokens, rng, **options
            )
            paths.append(path)
            picked.append(slot)
        return ParticleGibbsChain(paths, picked, sweep)

    async def cleanup(self) -> None:
        """Release the sampler's and the critic's caches."""
        await self.smc.cleanup()

    def __repr__(self) -> str:
        return f"ParticleGibbs({self.smc!r})"
