"""Boundaries set by a signal instead of the surface tokens (genlm-control #147).

A unit ends where a number crosses a threshold, so that SMC resamples (and a
critic weighs) where the weights say something is happening:

- `SurpriseBoundary`: the unit's running log-weight, the sum of its tokens'
  log-weights that `MultiTokenUnitSampler` passes as `cumulative_logw`. Under
  a direct sampler a token's weight is the log of the target's next-token
  mass, so a unit ends once the target has cut (or added) enough mass.
- `CriticBoundary`: how far a critic's prefix weight has moved over the unit,
  `critic.prefix(context + buffer) - critic.prefix(context)`.

Both fire only from `min_subunits` tokens on and always at `max_subunits`,
and `sign` says which direction counts: "abs" (|x| >= threshold), "down"
(x <= -threshold) or "up" (x >= threshold). A NaN or non-numeric signal
never fires; -inf (a dead particle) fires under "abs" and "down".

The target is unchanged: a boundary only decides where units end, and the
weights of the tokens drawn multiply the same way wherever that is.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

from genlm_lab.control.core.constant import EndOfSequence
from genlm_lab.control.core.util import LRUCache, flatten_units
from genlm_lab.control.sampler.boundaries import BoundaryPredicate

__all__ = ["CriticBoundary", "SurpriseBoundary"]

_SIGNS = ("abs", "down", "up")

#: Baselines kept per CriticBoundary: one per distinct completed context (particles x steps).
_BASELINES = 4096


class _ThresholdBoundary(BoundaryPredicate):
    """What both boundaries share: argument checks, the length gate and the signed test."""

    def __init__(self, threshold: float, min_subunits: int, max_subunits: int, sign: str) -> None:
        if sign not in _SIGNS:
            raise ValueError(f"sign must be 'abs', 'down', or 'up', got {sign!r}")
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)):
            raise TypeError(f"threshold must be a number, got {threshold!r}")
        if not threshold > 0:
            raise ValueError(f"threshold must be positive, got {threshold}")
        for name, value in (("min_subunits", min_subunits), ("max_subunits", max_subunits)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{name} must be an int, got {value!r}")
        if min_subunits < 1:
            raise ValueError(f"min_subunits must be >= 1, got {min_subunits}")
        if max_subunits < min_subunits:
            raise ValueError(
                f"max_subunits ({max_subunits}) must be >= min_subunits ({min_subunits})"
            )
        self.threshold = float(threshold)
        self.min_subunits = min_subunits
        self.max_subunits = max_subunits
        self.sign = sign

    def _gate(self, n_subunits: int) -> bool | None:
        """True at `max_subunits`, False below `min_subunits`, None: the signal decides."""
        if n_subunits >= self.max_subunits:
            return True
        if n_subunits < self.min_subunits:
            return False
        return None

    def _crosses(self, value: Any) -> bool:
        """Whether `value` crosses the threshold in the direction of `sign`."""
        if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
            return False
        if self.sign == "abs":
            return abs(value) >= self.threshold
        if self.sign == "down":
            return value <= -self.threshold
        return value >= self.threshold

    def _settings(self) -> str:
        return (
            f"threshold={self.threshold}, sign={self.sign!r}, "
            f"min_subunits={self.min_subunits}, max_subunits={self.max_subunits}"
        )


class SurpriseBoundary(_ThresholdBoundary):
    """A unit ends when its running log-weight `cumulative_logw` crosses `threshold`.

    Args:
        threshold: the log-weight that ends a unit (> 0).
        min_subunits: fewest tokens in a unit.
        max_subunits: a unit ends at this many tokens whatever the signal.
        sign: "abs", "down" (only losses of mass count: a boolean constraint's
            weights are at most 0) or "up".

    Raises:
        ValueError: for an unknown sign, a threshold <= 0, min_subunits < 1 or
            max_subunits < min_subunits.
        TypeError: for a non-numeric threshold or non-int lengths.
    """

    def __init__(
        self,
        threshold: float = 1.5,
        min_subunits: int = 1,
        max_subunits: int = 50,
        sign: str = "abs",
    ) -> None:
        super().__init__(threshold, min_subunits, max_subunits, sign)

    def __call__(
        self, unit_context: Sequence[Any], subunit_buffer: Sequence[Any], **kwargs: Any
    ) -> bool:
        """Whether the buffer is a unit, given `cumulative_logw=` (0 when not given)."""
        gate = self._gate(len(subunit_buffer))
        if gate is not None:
            return gate
        return self._crosses(kwargs.get("cumulative_logw", 0.0))

    def __repr__(self) -> str:
        return f"SurpriseBoundary({self._settings()})"


class CriticBoundary(_ThresholdBoundary):
    """A unit ends when a critic's prefix weight has moved by `threshold` over it.

    The change is `critic.prefix(ctx + buffer) - critic.prefix(ctx)`, with ctx
    the completed units flattened (EOS left out). The baseline is cached per
    completed context, so the predicate keeps no state of its own across
    resampling. `__call__` is async; `MultiTokenUnitSampler` awaits it.

    A critic that raises does not end the unit (as in genlm-control); the
    error is reported in a `RuntimeWarning` rather than dropped silently.

    Args:
        critic: anything with an async `prefix(tokens) -> float` (a `Potential`).
        threshold: as in `SurpriseBoundary`.
        min_subunits: as in `SurpriseBoundary`.
        max_subunits: as in `SurpriseBoundary`.
        sign: as in `SurpriseBoundary`.
        coalesce_grammar: also add the unit's `cumulative_logw` to the change.

    Raises:
        TypeError: if `critic` has no `prefix` method; otherwise as `SurpriseBoundary`.
    """

    def __init__(
        self,
        critic: Any,
        threshold: float = 1.5,
        min_subunits: int = 1,
        max_subunits: int = 50,
        sign: str = "abs",
        coalesce_grammar: bool = False,
    ) -> None:
        if not callable(getattr(critic, "prefix", None)):
            raise TypeError(
                f"critic must have an async prefix(tokens) method (a Potential), "
                f"got {type(critic).__name__}"
            )
        super().__init__(threshold, min_subunits, max_subunits, sign)
        self.critic = critic
        self.coalesce_grammar = bool(coalesce_grammar)
        self._baseline_cache: LRUCache = LRUCache(_BASELINES)

    def reset(self) -> None:
        """Forget the cached baselines (between independent runs)."""
        self._baseline_cache.clear()

    async def _baseline(self, flat: list[Any]) -> float:
        key = tuple(flat)
        if key not in self._baseline_cache:
            self._baseline_cache[key] = float(await self.critic.prefix(flat))
        return self._baseline_cache[key]

    async def __call__(
        self, unit_context: Sequence[Any], subunit_buffer: Sequence[Any], **kwargs: Any
    ) -> bool:
        """Whether the critic's change over the buffer (plus `cumulative_logw`, if coalesced)
        crosses the threshold."""
        gate = self._gate(len(subunit_buffer))
        if gate is not None:
            return gate
        context = [t for t in flatten_units(unit_context) if not isinstance(t, EndOfSequence)]
        buffer = [t for t in subunit_buffer if not isinstance(t, EndOfSequence)]
        try:
            base = await self._baseline(context)
            delta = float(await self.critic.prefix(context + buffer)) - base
        except Exception as e:  # genlm-control: a failing critic ends no unit
            warnings.warn(
                f"CriticBoundary: the critic {type(self.critic).__name__} failed "
                f"({type(e).__name__}: {e}); the unit goes on",
                RuntimeWarning,
                stacklevel=2,
            )
            return False
        if self.coalesce_grammar:
            extra = kwargs.get("cumulative_logw", 0.0)
            if not isinstance(extra, bool) and isinstance(extra, (int, float)) and extra == extra:
                delta += extra
        return self._crosses(delta)

    def __repr__(self) -> str:
        return f"CriticBoundary({self._settings()}, coalesce_grammar={self.coalesce_grammar})"
