"""`MultiTokenUnitSampler`: draws a whole unit (a word, a clause, ...) of tokens per step.

A token sampler (the *subunit sampler*) draws tokens one at a time after the
flattened context until a `BoundaryPredicate` says the tokens drawn so far
are a unit. The unit's log-weight is the sum of the tokens' log-weights, so
the pair (unit u, weight w) is properly weighted for the target's weight of
the unit after the context x:

    E[exp(w) * 1{unit = u}] = exp(prefix(x + u) - prefix(x))        (u at a boundary)
                              exp(complete(x + u') - prefix(x))     (u = u' + [EOS])

The tokens' weights multiply because each is properly weighted given the
ones before it. A unit that meets no boundary within `max_subunits_per_unit`
tokens gets weight -inf: such units are outside the unit-level target, and
the particle that drew one dies. EOS ends a unit early.

A predicate that declares a `cumulative_logw` parameter (or `**kwargs`) is
also given the unit's running log-weight, and an async predicate is awaited
(genlm-control #147: `SurpriseBoundary`, `CriticBoundary`). Such a boundary
depends on the weights, but with a sampler whose token weights are a function
of the context (the direct sampler's are) it is still a function of the
tokens, and the identity above holds as it is.

`SMC` runs it like any token sampler: the particle's context is then a list
of units (lists of tokens), one per step, so `max_tokens` counts units; a
unit that ends with EOS is stored as the unit without it followed by EOS.
`flatten_units` turns such a context back into its tokens.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Sequence
from typing import Any

from genlm_lab.control.core.constant import EndOfSequence
from genlm_lab.control.core.tokens import Draw
from genlm_lab.control.core.util import flatten_units
from genlm_lab.control.sampler.boundaries import BoundaryPredicate
from genlm_lab.control.sampler.token import TokenSampler

__all__ = ["MultiTokenUnitSampler", "flatten_units"]

#: A boundary predicate: `(unit_context, subunit_buffer) -> bool`.
Boundary = BoundaryPredicate | Callable[[Sequence[Any], Sequence[Any]], bool]


class MultiTokenUnitSampler(TokenSampler):
    """Draws a multi-token unit per call: subunits from `subunit_sampler` until a boundary.

    Its target is the subunit sampler's; `sample(context)` takes a context of
    units (nested lists of tokens, or plain tokens), flattens it for the
    subunit sampler and returns `(unit, logw, logp)`: the list of tokens
    drawn, the sum of their log-weights (-inf if no boundary came within
    `max_subunits_per_unit`) and the sum of their log-probabilities.

    Args:
        subunit_sampler: a `TokenSampler` drawing one token at a time.
        boundary_predicate: a `BoundaryPredicate` (or any callable
            `(unit_context, buffer) -> bool`, possibly async) saying when the
            buffer is a unit; its `finalize_unit(buffer)`, if it has one, gives
            the unit returned.
        max_subunits_per_unit: the most tokens one unit may take.

    Raises:
        TypeError: if `subunit_sampler` is not a TokenSampler or the predicate
            is not callable.
        ValueError: if `max_subunits_per_unit` is not a positive int.
    """

    def __init__(
        self,
        subunit_sampler: TokenSampler,
        boundary_predicate: Boundary,
        max_subunits_per_unit: int = 100,
    ) -> None:
        if not isinstance(subunit_sampler, TokenSampler):
            raise TypeError(
                f"subunit_sampler must be a TokenSampler, got {type(subunit_sampler).__name__}"
            )
        if not callable(boundary_predicate):
            raise TypeError(
                "boundary_predicate must be a BoundaryPredicate or a callable "
                f"(unit_context, subunit_buffer) -> bool, got {type(boundary_predicate).__name__}"
            )
        if (
            isinstance(max_subunits_per_unit, bool)
            or not isinstance(max_subunits_per_unit, int)
            or max_subunits_per_unit < 1
        ):
            raise ValueError(f"max_subunits_per_unit must be >= 1, got {max_subunits_per_unit!r}")
        super().__init__(subunit_sampler.target)
        self.subunit_sampler = subunit_sampler
        self.boundary_predicate = boundary_predicate
        self.max_subunits_per_unit = max_subunits_per_unit
        # read once: whether the predicate is given the running weight (genlm-control's name)
        self._boundary_accepts_cumulative_logw = self._predicate_accepts_cumulative_logw(
            boundary_predicate
        )

    @staticmethod
    def _predicate_accepts_cumulative_logw(predicate: Any) -> bool:
        """Whether `predicate` declares a `cumulative_logw` keyword or `**kwargs`."""
        try:
            parameters = inspect.signature(predicate).parameters.values()
        except (TypeError, ValueError):  # a builtin without a signature: the two arguments
            return False
        return any(
            p.kind is inspect.Parameter.VAR_KEYWORD
            or (p.name == "cumulative_logw" and p.kind is not inspect.Parameter.POSITIONAL_ONLY)
            for p in parameters
        )

    async def _is_boundary(self, context: Sequence[Any], buffer: list[Any], logw: float) -> bool:
        """The predicate's answer (awaited if it is async), given the running weight if it asks."""
        if self._boundary_accepts_cumulative_logw:
            answer = self.boundary_predicate(context, buffer, cumulative_logw=logw)
        else:
            answer = self.boundary_predicate(context, buffer)
        if inspect.isawaitable(answer):
            answer = await answer
        return bool(answer)

    @property
    def rng(self) -> Any:
        """The subunit sampler's random generator (it makes every draw)."""
        return self.subunit_sampler.rng

    async def start_weight(self) -> float:
        """The subunit sampler's weight of the empty sequence."""
        return float(await self.subunit_sampler.start_weight())

    async def logw_eos(self, context: Sequence[Any]) -> float:
        """Log-weight of ending after the flattened `context` (SMC's forced EOS at `max_tokens`)."""
        return float(await self.subunit_sampler.logw_eos(flatten_units(context)))

    async def sample_with_info(
        self, context: Sequence[Any], draw: Draw | None = None
    ) -> tuple[list[Any], float, float, dict]:
        """Draw `(unit, logw, logp, info)` after the unit context `context`.

        `draw` goes to every subunit draw (see `TokenSampler.sample`); info holds
        "subunits" (how many tokens were drawn) and "timed_out". Errors of the
        subunit sampler or the predicate propagate.
        """
        flat = flatten_units(context)
        buffer: list[Any] = []
        logw = logp = 0.0
        for _ in range(self.max_subunits_per_unit):
            token, token_logw, token_logp = await self.subunit_sampler.sample(flat, draw=draw)
            flat.append(token)
            buffer.append(token)
            logw += float(token_logw)
            logp += float(token_logp)
            if isinstance(token, EndOfSequence) or logw == -math.inf:
                # a weight of zero stays zero: no need to draw the rest of the unit
                return buffer, logw, logp, {"subunits": len(buffer), "timed_out": False}
            if await self._is_boundary(context, buffer, logw):
                finalize = getattr(self.boundary_predicate, "finalize_unit", None)
                unit = list(finalize(buffer)) if finalize is not None else buffer
                return unit, logw, logp, {"subunits": len(buffer), "timed_out": False}
        return buffer, -math.inf, logp, {"subunits": len(buffer), "timed_out": True}

    async def cleanup(self) -> None:
        """Release the subunit sampler's resources."""
        await self.subunit_sampler.cleanup()

    def __repr__(self) -> str:
        return (
            f"MultiTokenUnitSampler({self.subunit_sampler!r}, {self.boundary_predicate!r}, "
            f"max_subunits_per_unit={self.max_subunits_per_unit})"
        )
