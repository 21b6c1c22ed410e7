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
- `AWRS` (`genlm_lab.control.sampler.awrs`) evaluates a costly boolean condition only
  on the tokens it draws.
- `eager_token_sampler` / `topk_token_sampler` (`genlm_lab.control.sampler.set`)
  draw a weighted *set* of tokens byte by byte through a byte-level
  potential, then one token from the set.
"""

from __future__ import annotations

import asyncio
import inspect
import math
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from genlm_lab.control.core.tokens import Draw, check_log_weights, draw_index
from genlm_lab.control.potential.base import Potential
from genlm_lab.smc.rng import get_rng, make_rng

__all__ = [
    "DirectTokenSampler",
    "FactorRows",
    "TokenSampler",
    "direct_token_sampler",
]


class FactorRows:
    """A potential's next-token log-weights computed factor by factor, and their sum.

    A product's factors are computed apart (concurrently) and added, which is
    what `Product` does, so that each factor's weight of the drawn token comes
    for free for SMC's record. The direct sampler and AWRS both draw from it.

    Args:
        potential: the potential (a product or a single factor).
        autobatch: wrap each factor so concurrent particles' calls batch.
    """

    def __init__(self, potential: Potential, autobatch: bool) -> None:
        self.potential = potential.to_autobatched() if autobatch else potential
        factors = potential.factors()
        self.parts = (
            [f.to_autobatched() if autobatch else f for f in factors] if len(factors) > 1 else None
        )

    async def __call__(self, context: list[Any]) -> tuple[list[np.ndarray], np.ndarray]:
        """`(rows, total)`: each factor's `logw_next` row after `context` and their checked sum."""
        if self.parts is None:
            rows = [np.asarray((await self.potential.logw_next(context)).weights, dtype=float)]
        else:
            parts = await asyncio.gather(*(p.logw_next(context) for p in self.parts))
            rows = [np.asarray(r.weights, dtype=float) for r in parts]
        total = rows[0] if len(rows) == 1 else np.sum(rows, axis=0)
        check_log_weights(total, f"{self.potential.name}.logw_next")
        return rows, total


_NEITHER = "{} defines neither sample() nor sample_with_info()"


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

    #: Read by `inference.budgets.budget_for` (which may not import this room) on the class.
    is_token_sampler: ClassVar[bool] = True

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

    async def sample(
        self, context: Sequence[Any], draw: Draw | None = None
    ) -> tuple[Any, float, float]:
        """Draw `(token, logw, logp)` after `context`, properly weighted for the target.

        `draw`, if given, replaces the random choice: it gets a `Chart` of the
        normalised probabilities of the possible keys and returns one (an
        enumeration without replacement passes one; see `_tokens.draw_index`).

        A subclass implements this or `sample_with_info`; each defaults to the other.

        Raises:
            ValueError: if `draw` is given and `sample_with_info` takes none.
        """
        if type(self).sample_with_info is TokenSampler.sample_with_info:
            raise NotImplementedError(_NEITHER.format(type(self).__name__))
        if draw is None:
            token, logw, logp, _ = await self.sample_with_info(context)
        elif "draw" in inspect.signature(self.sample_with_info).parameters:
            token, logw, logp, _ = await self.sample_with_info(context, draw=draw)
        else:
            raise ValueError(f"{type(self).__name__}.sample_with_info() takes no draw=")
        return token, logw, logp

    async def sample_with_info(self, context: Sequence[Any]) -> tuple[Any, float, float, dict]:
        """`sample(context)` plus a JSON-able dict of details (empty by default)."""
        if type(self).sample is TokenSampler.sample:
            raise NotImplementedError(_NEITHER.format(type(self).__name__))
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
        """Run `SMC(self, critic)` and return its `Sequences` (keyword arguments go to the call).

        The budget is on unless `budget=False`: a token after which the text
        could no longer end within `max_tokens` (EOS included) gets weight
        zero, so AWRS rejects it like any other the condition refuses (see
        `SMC.__call__`).
        """
        # a convenience method; SMC checks its own UnitSampler protocol, so no circle
        from genlm_lab.control.inference.smc import SMC

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
        proposal: draw tokens from this potential's normalised `logw_next`
            instead, weighted target / proposal (same vocabulary, in the same
            order; it must give positive weight wherever the target does).

    Raises:
        ValueError: if `potential` is not a Potential, or `proposal`'s tokens differ.
        TypeError: if `proposal` is given and is not a Potential.
    """

    def __init__(
        self,
        potential: Potential,
        seed: int | np.random.Generator | None = None,
        autobatch: bool = True,
        proposal: Potential | None = None,
    ) -> None:
        if not isinstance(potential, Potential):
            raise ValueError(
                f"direct_token_sampler needs a Potential, got {type(potential).__name__}"
            )
        if proposal is not None:
            _check_proposal(potential, proposal)
        self._rows = FactorRows(potential, autobatch)
        super().__init__(self._rows.potential, seed)
        self.potential = self.target  # genlm-control's name for the (wrapped) seat
        self.proposal = proposal.to_autobatched() if autobatch and proposal else proposal

    async def sample_with_info(
        self, context: Sequence[Any], draw: Draw | None = None
    ) -> tuple[Any, float, float, dict]:
        """Draw a token from the normalised next-token weights; weight = log of their total.

        With a `proposal`, the token is drawn from the proposal's normalised
        weights instead and weighted target[token] - log q(token), an
        importance weight that keeps the pair properly weighted.

        info["factors"] holds each factor's log-weight of the token drawn (in
        the order of `target.factors()`); info["no_mass"] is True when nothing
        could be drawn.
        """
        context = list(context)
        if self.proposal is not None:
            target, proposal = await asyncio.gather(
                self.target.logw_next(context), self.proposal.logw_next(context)
            )
            rows = [np.asarray(target.weights, dtype=float)]
            drawn_from = np.asarray(proposal.weights, dtype=float)
            check_log_weights(drawn_from, f"{self.proposal.name}.logw_next")
            weights = rows[0]
            check_log_weights(weights, f"{self.target.name}.logw_next")
        else:
            rows, weights = await self._rows(context)
            drawn_from = weights
        top = float(np.max(drawn_from))
        if top == -math.inf:
            return self.target.eos, -math.inf, 0.0, {"no_mass": True}
        index = draw_index(drawn_from, self.target.vocab_eos, self.rng, draw)
        log_z = top + math.log(float(np.sum(np.exp(drawn_from - top))))
        logp = float(drawn_from[index]) - log_z
        logw = log_z if self.proposal is None else float(weights[index]) - logp
        info = {"factors": [float(r[index]) for r in rows]}
        return self.target.vocab_eos[index], logw, logp, info


def _check_proposal(potential: Potential, proposal: Any) -> None:
    """A proposal must be a Potential over the same tokens (and EOS), in the same order."""
    if not isinstance(proposal, Potential):
        raise TypeError(f"proposal must be a Potential, got {type(proposal).__name__}")
    if list(proposal.vocab_eos) != list(potential.vocab_eos):
        raise ValueError(
            f"proposal {proposal.name} and target {potential.name} have different tokenizers "
            "(vocabularies); a proposal must weigh the target's tokens, in the same order"
        )


def direct_token_sampler(
    potential: Potential,
    seed: int | np.random.Generator | None = None,
    proposal: Potential | None = None,
) -> DirectTokenSampler:
    """A `DirectTokenSampler` for `potential` (genlm-control's constructor name)."""
    return DirectTokenSampler(potential, seed=seed, proposal=proposal)
