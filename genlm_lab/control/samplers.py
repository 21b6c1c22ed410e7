"""Token samplers: draw a properly weighted next token from a potential.

A token sampler has a `target` potential. Given a context x, `sample(x)`
returns a token y (or EOS), a log-weight w and the log-probability of the
random choices made. The pair is *properly weighted* for the target's
next-token weights: for every y,

    E[exp(w) * 1{token = y}] = exp(target.logw_next(x)[y]).

So the mean of exp(w) is the target's next-token mass Z(x), and weighting
draws by exp(w) gives the normalised next-token distribution. SMC multiplies
these weights along a sequence, which is what makes its estimate of the
normaliser unbiased.

- `DirectTokenSampler` computes the whole `logw_next` and draws from it
  exactly: the weight is log Z(x) itself (no variance). Cheap when the
  target's `logw_next` is (LMs, token-level masks).
- `AWRS` (`genlm_lab.control.awrs`) evaluates a costly boolean condition only
  on the tokens it draws.
- `eager_token_sampler` / `topk_token_sampler` (`genlm_lab.control.set_samplers`)
  draw a weighted *set* of tokens byte by byte through a byte-level
  potential, then one token from the set.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from genlm_lab.control._tokens import check_log_weights, sample_index
from genlm_lab.control.potential import Potential
from genlm_lab.smc.rng import get_rng, make_rng

__all__ = [
    "DirectTokenSampler",
    "TokenSampler",
    "direct_token_sampler",
]


class TokenSampler:
    """Base class: draws a next token properly weighted for `target.logw_next`.

    Subclasses implement `sample`; `sample_with_info` adds a dict of details
    (SMC records it per step for the views).

    Args:
        target: the potential whose next-token weights the samples are weighted for.
        seed: a seed (or numpy Generator) for this sampler's own random stream;
            None draws from the generator of the running inference (seeded by
            `SMC(...)(seed=...)`), or a process-wide one outside a run.
    """

    def __init__(self, target: Potential, seed: int | np.random.Generator | None = None) -> None:
        if not isinstance(target, Potential):
            raise ValueError(
                f"a token sampler needs a Potential as its target, got {type(target).__name__}"
            )
        self.target = target
        self._rng = None if seed is None else make_rng(seed)

    @property
    def rng(self) -> np.random.Generator:
        """The random generator draws come from (see `seed`)."""
        return self._rng if self._rng is not None else get_rng()

    async def start_weight(self) -> float:
        """Log-weight of the empty sequence under the target: `target.prefix([])`."""
        return float(await self.target.prefix([]))

    async def logw_eos(self, context: Sequence[Any]) -> float:
        """Log-weight of ending after `context`, used when SMC forces EOS at `max_tokens`."""
        return float(await self.target.logw_eos(list(context)))

    async def sample(self, context: Sequence[Any]) -> tuple[Any, float, float]:
        """Draw `(token, logw, logp)` after `context`, properly weighted for the target."""
        raise NotImplementedError(f"{type(self).__name__}.sample() is not defined")

    async def sample_with_info(self, context: Sequence[Any]) -> tuple[Any, float, float, dict]:
        """`sample(context)` plus a JSON-able dict of details (empty by default)."""
        token, logw, logp = await self.sample(context)
        return token, logw, logp, {}

    async def cleanup(self) -> None:
        """Release the target's caches and background work."""
        await self.target.cleanup()

    async def smc(
        self,
        n_particles: int,
        ess_threshold: float,
        max_tokens: int,
        critic: Potential | None = None,
        **kwargs: Any,
    ) -> Any:
        """Run `SMC(self, critic)` and return its `Sequences` (keyword arguments go to the call)."""
        # a convenience method: SMC's module imports this one (it checks unit samplers' type)
        from genlm_lab.control.smc import SMC

        return await SMC(self, critic)(n_particles, ess_threshold, max_tokens, **kwargs)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.target.name})"


class DirectTokenSampler(TokenSampler):
    """Draws from the normalised `logw_next` of a potential; the weight is its log total mass.

    A context after which the potential gives every token (and EOS) weight zero
    yields EOS with weight -inf: the particle dies, nothing raises.

    For a product, the factors' `logw_next` are computed (concurrently) and
    added here, which is what `Product` does, so that each factor's weight of
    the drawn token comes for free in `sample_with_info`'s info["factors"]
    (SMC records it for the views).

    Args:
        potential: the target.
        seed: see `TokenSampler`.
        autobatch: wrap the potential (each factor of a product) so that
            concurrent particles' calls go out as one batch.
    """

    def __init__(
        self,
        potential: Potential,
        seed: int | np.random.Generator | None = None,
        autobatch: bool = True,
    ) -> None:
        if not isinstance(potential, Potential):
            raise ValueError(
                f"direct_token_sampler needs a Potential, got {type(potential).__name__}"
            )
        self.potential = potential
        super().__init__(potential.to_autobatched() if autobatch else potential, seed)
        factors = potential.factors()
        self._parts = (
            [f.to_autobatched() if autobatch else f for f in factors] if len(factors) > 1 else None
        )

    async def sample(self, context: Sequence[Any]) -> tuple[Any, float, float]:
        token, logw, logp, _ = await self.sample_with_info(context)
        return token, logw, logp

    async def sample_with_info(self, context: Sequence[Any]) -> tuple[Any, float, float, dict]:
        """Draw a token from the normalised next-token weights; weight = log of their total.

        info["factors"] holds each factor's log-weight of the token drawn (in
        the order of `target.factors()`); info["no_mass"] is True when nothing
        could be drawn.
        """
        context = list(context)
        if self._parts is None:
            rows = [np.asarray((await self.target.logw_next(context)).weights, dtype=float)]
        else:
            parts = await asyncio.gather(*(p.logw_next(context) for p in self._parts))
            rows = [np.asarray(r.weights, dtype=float) for r in parts]
        weights = rows[0] if len(rows) == 1 else np.sum(rows, axis=0)
        check_log_weights(weights, f"{self.target.name}.logw_next")
        top = float(np.max(weights))
        if top == -math.inf:
            return self.target.eos, -math.inf, 0.0, {"no_mass": True}
        index = sample_index(weights, self.rng)
        log_z = top + math.log(float(np.sum(np.exp(weights - top))))
        info = {"factors": [float(r[index]) for r in rows]}
        return self.target.vocab_eos[index], log_z, float(weights[index]) - log_z, info


def direct_token_sampler(
    potential: Potential, seed: int | np.random.Generator | None = None
) -> DirectTokenSampler:
    """A `DirectTokenSampler` for `potential` (genlm-control's constructor name)."""
    return DirectTokenSampler(potential, seed=seed)
