"""Conditional SMC over token samplers: `RetainedTokenSampler` and the retained path's checks.

`SMC(sampler)(..., retained_sequence=z)` runs `genlm_lab.smc.csmc_standard`
on particles whose sampler is a `RetainedTokenSampler(sampler, z)`: slot 0
(the retained particle) gets z's tokens one by one, every other slot draws
as usual. The retained token is not drawn, but it is *weighed* as if it
had been: the base sampler runs with a `draw=` that picks z's token, so its
weight is the one a free particle would get for the same token. That is
what makes the kernel leave the target invariant (`genlm_lab.smc.csmc`),
and it is why only a sampler whose weight is a function of the context and
the token can be forced (`direct_token_sampler`, with or without a
proposal). AWRS's weight depends on its rejections and a set sampler's on
the set it drew: forcing their token would need those choices drawn given
the token, which they do not offer, so they are refused by name.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Sequence
from typing import Any

from genlm_lab.control.core.constant import EndOfSequence
from genlm_lab.control.core.tokens import Draw
from genlm_lab.control.inference.budgets import BudgetedSampler
from genlm_lab.control.inference.particle import UnitSampler
from genlm_lab.control.potential.base import Potential
from genlm_lab.smc import csmc_standard  # the loop; here too, as genlm-control's module has both

__all__ = ["RetainedTokenSampler", "check_retained", "csmc_standard", "forcible"]


def forcible(sampler: Any) -> bool:
    """Whether a retained token can be weighed through `sampler` (see the module)."""
    while isinstance(sampler, BudgetedSampler | RetainedTokenSampler):
        sampler = sampler.sampler if isinstance(sampler, BudgetedSampler) else sampler.base
    if not getattr(type(sampler), "is_token_sampler", False):
        return False  # a unit sampler: its units would have to be forced token by token
    method = getattr(sampler, "sample_with_info", None)
    return method is not None and "draw" in inspect.signature(method).parameters


class _WeightZero(Exception):
    """A forced token that the sampler offers with probability zero (no weight to give it)."""

    def __init__(self, token: Any) -> None:
        super().__init__(f"the sampler gives {token!r} weight zero")
        self.token = token


def _forcing(token: Any) -> Draw:
    """A `draw=` that picks `token` among those offered, or says it has weight zero."""

    def draw(chart: Any) -> Any:
        if token not in chart:
            raise _WeightZero(token)
        return token

    return draw


class RetainedTokenSampler:
    """A token sampler that forces the retained particle along a fixed path (genlm-control's name).

    For the particle whose `is_retained` is True (slot 0 of `csmc_standard`),
    each step draws the next token of `retained_sequence` through the base
    sampler's `draw=`, so it is weighed exactly as a free draw of that token
    would be; past the path's end, and for every other particle, it is the
    base sampler unchanged.

    Args:
        base: the token sampler (`direct_token_sampler(...)`, with or without a proposal).
        retained_sequence: the retained path's tokens, in order (EOS last, or a
            prefix whose continuation is drawn freely).

    Raises:
        ValueError: if `base` is no token sampler, or one whose weight carries
            random choices of its own (AWRS, set samplers), which cannot be forced.
    """

    #: Read on the class by `inference.budgets.budget_for`: a budget applies as to the base.
    is_token_sampler = True

    def __init__(self, base: UnitSampler, retained_sequence: Sequence[Any]) -> None:
        if not isinstance(base, UnitSampler):
            raise ValueError(
                f"RetainedTokenSampler needs a token sampler, got {type(base).__name__}"
            )
        if not forcible(base):
            raise ValueError(
                f"conditional SMC cannot force the retained tokens through {base!r}: its weight "
                "carries random choices of its own (AWRS's rejections, a set sampler's set) that "
                "a forced token would have to be drawn given; use direct_token_sampler(target), "
                "with proposal= for another proposal"
            )
        if isinstance(retained_sequence, str | bytes | bytearray):
            raise ValueError(
                "retained_sequence is a list of tokens, got "
                f"{type(retained_sequence).__name__} {retained_sequence!r:.40}"
            )
        self.base = base
        self.target: Potential = base.target
        self.retained_sequence = list(retained_sequence)
        #: Tokens forced so far through `forward` (genlm-control's per-copy counter).
        self.retained_idx = 0

    def retained_draw(self, context: Sequence[Any]) -> Draw | None:
        """The `draw=` that picks the retained path's token after `context` (None past its end)."""
        if len(context) >= len(self.retained_sequence):
            return None
        return _forcing(self.retained_sequence[len(context)])

    async def start_weight(self) -> float:
        return float(await self.base.start_weight())

    async def logw_eos(self, context: Sequence[Any]) -> float:
        return float(await self.base.logw_eos(context))

    async def sample(self, context: Sequence[Any], draw: Draw | None = None) -> tuple:
        """The base sampler's `(token, logw, logp)`, its token chosen by `draw` if given.

        A forced token the base gives weight zero comes back with log-weight -inf.
        """
        if draw is None:
            return await self.base.sample(context)
        try:
            return await self.base.sample(context, draw=draw)
        except _WeightZero as zero:
            return zero.token, -math.inf, -math.inf

    async def sample_with_info(self, context: Sequence[Any], draw: Draw | None = None) -> tuple:
        """The base sampler's `(token, logw, logp, info)`, its token chosen by `draw` if given."""
        if draw is None:
            return await self.base.sample_with_info(context)
        try:
            return await self.base.sample_with_info(context, draw=draw)
        except _WeightZero as zero:
            return zero.token, -math.inf, -math.inf, {}

    async def forward(self) -> Any:
        """One step for a host particle `self.parent` (genlm-control's submodel protocol).

        The host supplies `token_ctx`, `is_retained`, `score` and `logp`; a
        retained host gets the path's next token while the path lasts.
        """
        parent = self.parent
        draw = None
        if getattr(parent, "is_retained", False) and self.retained_idx < len(
            self.retained_sequence
        ):
            draw = _forcing(self.retained_sequence[self.retained_idx])
            self.retained_idx += 1
        token, logw, logp = await self.sample(list(parent.token_ctx), draw=draw)
        parent.score(logw)
        parent.logp += logp
        return token

    async def cleanup(self) -> None:
        await self.base.cleanup()

    def __repr__(self) -> str:
        return f"RetainedTokenSampler({self.base!r}, {len(self.retained_sequence)} tokens)"


async def check_retained(
    target: Potential,
    critic: Potential | None,
    path: Sequence[Any],
    max_tokens: int,
    *,
    finished: bool = False,
) -> list[Any]:
    """The retained path as the target's own tokens, after checking it can be a run's path.

    Args:
        target: the sampler's target.
        critic: the run's critic, or None.
        path: the tokens (EOS last for a whole sequence; else a prefix).
        max_tokens: the run's length limit, EOS included.
        finished: require EOS last (particle Gibbs retains whole sequences).

    Raises:
        ValueError: naming a token outside the vocabulary, a misplaced EOS, a
            path too long for `max_tokens`, a missing EOS where `finished`, or
            a path of weight zero under the target (times the critic).
    """
    if isinstance(path, str | bytes | bytearray) or not isinstance(path, Sequence):
        raise ValueError(
            f"the retained path is a list of tokens, got {type(path).__name__} {path!r:.40}"
        )
    tokens = [target.vocab_eos[i] for i in target.encode(list(path))]
    ends = bool(tokens) and isinstance(tokens[-1], EndOfSequence)
    if finished and not ends:
        raise ValueError(
            f"the retained path must be a whole sequence ending with EOS, got {len(tokens)} "
            "tokens without it (take one of Sequences.contexts)"
        )
    limit = max_tokens if ends else max_tokens - 1
    if len(tokens) > limit:
        raise ValueError(
            f"the retained path has {len(tokens)} tokens{' (EOS included)' if ends else ''}, "
            f"more than max_tokens={max_tokens} allows ({limit})"
        )
    weight = float(await target.score(tokens))
    if weight > -math.inf and critic is not None:
        weight += float(await critic.score(tokens))
    if weight == -math.inf:
        who = target.name if critic is None else f"{target.name} times the critic {critic.name}"
        raise ValueError(
            f"the retained path has weight zero under {who}: it is outside the support "
            "the run samples from, so no run could have produced it"
        )
    return tokens
