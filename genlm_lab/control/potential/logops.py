"""Weighted means of two weights, computed on log-weights: what `Ensemble` combines with.

For weights `x, y >= 0` given as `log x, log y` and a weight `a` in (0, 1):

- power mean `M_p = (a x^p + (1-a) y^p)^(1/p)`, any real `p != 0`; `p = 0` is
  its limit, the geometric mean `x^a y^(1-a)`. "sum" (arithmetic, `p = 1`),
  "prod" (geometric, `p = 0`) and "harmonic" (`p = -1`) name three of them;
  genlm-control main's names give the exponent in the string: "p2.5" is
  `p = 2.5`, "p-2" and "pm2" are `p = -2` ("pm5", ..., "p5").
- "min" / "max": a geometric interpolation between the extremum `e` of the two
  and one of them: `x^(1-2a) e^(2a)` for `a <= 1/2`, `y^(2a-1) e^(2(1-a))`
  above. `a = 1/2` gives the plain extremum; `a` near 0 gives `x`, near 1
  gives `y` (note: the opposite direction to the means, where `a` weighs `x`).

A zero weight (`-inf`) never turns into NaN: where the formula meets
`inf - inf` or `0 * inf` the mean of the weights is zero, `-inf`.
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["WeightedLogOp", "convert_to_weighted_logop"]

#: The named power means and their exponents.
NAMED_POWERS = {"sum": 1.0, "prod": 0.0, "harmonic": -1.0}
#: The named extrema.
EXTREMA = {"min": np.minimum, "max": np.maximum}
#: genlm-control main's power-mean names: "p" and the exponent, or "pm" and its magnitude
#: when negative ("p2", "p0.5", "p-2", "pm2.5").
POWER_NAME = re.compile(r"p(?:(?P<neg>m)(?P<mag>\d+(?:\.\d+)?)|(?P<p>-?\d+(?:\.\d+)?))", re.ASCII)


def power_of_name(op: str) -> float | None:
    """The exponent a power-mean name such as "pm5" or "p2.5" stands for; None for another string."""
    found = POWER_NAME.fullmatch(op)
    if found is None:
        return None
    return -float(found["mag"]) if found["neg"] else float(found["p"])


def _power_mean(x: np.ndarray, y: np.ndarray, p: float, a: float) -> np.ndarray:
    """`log M_p(e^x, e^y)`: a two-term log-sum-exp of `p x + log a` and `p y + log(1-a)`, over p."""
    if p == 0.0:
        return a * x + (1.0 - a) * y
    u = p * x + math.log(a)
    v = p * y + math.log1p(-a)
    top = np.maximum(u, v)
    finite = np.isfinite(top)
    shift = np.where(finite, top, 0.0)
    total = shift + np.log(np.exp(u - shift) + np.exp(v - shift))
    # An infinite top term is the log-sum-exp itself: +inf for p < 0 and a zero
    # weight (the mean is zero after dividing by p), -inf when both terms vanish.
    return np.where(finite, total, top) / p


def _extremum(x: np.ndarray, y: np.ndarray, f: Callable, a: float) -> np.ndarray:
    """`log` of the weighted min / max (module docstring); no `0 * -inf` term at a = 1/2."""
    e = f(x, y)
    if a == 0.5:
        return e
    if a < 0.5:
        return (1.0 - 2.0 * a) * x + 2.0 * a * e
    return (2.0 * a - 1.0) * y + 2.0 * (1.0 - a) * e


class WeightedLogOp:
    """A weighted mean of two log-weights: `op(x, y)` on floats or arrays (broadcast).

    Built by `convert_to_weighted_logop`. A scalar call returns a float; NaN
    (only from combining infinities) comes back as `-inf`, weight zero.

    Attributes:
        op: the operation's name, or the power-mean exponent.
        a: the weight of the first argument.
        label: a short description, e.g. "sum(a=0.3)".
    """

    def __init__(self, op: str | float, a: float, fn: Callable[[Any, Any], Any]) -> None:
        self.op = op
        self.a = a
        self._fn = fn
        name = op if isinstance(op, str) else f"power {op:g}"
        self.label = f"{name}(a={a:g})"

    def __call__(self, x: Any, y: Any) -> Any:
        """`log op(e^x, e^y)`, elementwise."""
        x = np.asarray(x, dtype=float)
        y = np.asarray(y, dtype=float)
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            out = np.asarray(self._fn(x, y), dtype=float)
        out = np.where(np.isnan(out), -math.inf, out)
        return float(out) if out.ndim == 0 else out

    def __repr__(self) -> str:
        return f"WeightedLogOp({self.label})"


def _check_weight(a: Any) -> float:
    if isinstance(a, bool) or not isinstance(a, numbers.Real) or not 0.0 < float(a) < 1.0:
        raise ValueError(f"the weight a must be a number strictly between 0 and 1, got {a!r}")
    return float(a)


def convert_to_weighted_logop(op: str | float, a: float = 0.5) -> WeightedLogOp:
    """The weighted log-space operation `op` with weight `a` on its first argument.

    Args:
        op: "sum" (arithmetic mean), "prod" (geometric), "harmonic", "min",
            "max", a finite number `p`, the power mean's exponent, or that
            exponent named as genlm-control main does ("p2", "p-2" or "pm2").
        a: the weight in (0, 1); 0.5 weighs both arguments alike.

    Returns:
        A callable `f(logx, logy)` returning the log of the weighted mean,
        elementwise over arrays.

    Raises:
        ValueError: if `a` is not strictly between 0 and 1, or `op` is not
            one of the names nor a finite real number (booleans are not numbers here).

    Example:
        >>> f = convert_to_weighted_logop("sum", a=0.25)
        >>> round(float(np.exp(f(np.log(0.4), np.log(0.8)))), 6)  # 0.25*0.4 + 0.75*0.8
        0.7
    """
    a = _check_weight(a)
    if isinstance(op, str):
        if op in EXTREMA:
            f = EXTREMA[op]
            return WeightedLogOp(op, a, lambda x, y: _extremum(x, y, f, a))
        p = NAMED_POWERS[op] if op in NAMED_POWERS else power_of_name(op)
        if p is not None:
            return WeightedLogOp(op, a, lambda x, y: _power_mean(x, y, p, a))
    elif isinstance(op, numbers.Real) and not isinstance(op, (bool, np.bool_)):
        p = float(op)
        if math.isfinite(p):
            return WeightedLogOp(p, a, lambda x, y: _power_mean(x, y, p, a))
    names = ", ".join(repr(n) for n in [*NAMED_POWERS, *EXTREMA])
    raise ValueError(
        f"Invalid operation: {op!r}. Must be one of {names}, or a finite number p "
        "(the exponent of the weighted power mean), or a power-mean name such as "
        "'p2', 'p-2', 'pm2.5'"
    )
