"""`recursive_awrs` and `geometric_awrs`: genlm-control's AWRS estimators over one next-token row.

Both walk the tokens of one row of log-probabilities in a without-replacement
order (descending `make_keys(logps)`, Gumbel-perturbed log-probabilities for
a Plackett-Luce order), ask the async `accept` about the tokens they reach,
and return `(token, log_weight, nan)` where the weight estimates the accepted
share of the row's mass: E[w 1{token = y}] = p(y) accept(y), p the row
normalised over its finite entries. `AWRS` (awrs.py) is the sampler built on
the same idea; these functions are the public building blocks of
`genlm.control.sampler.token` (recursive_awrs, geometric_awrs) with its
keyword signatures.

`max_rejects` bounds the rejected draws; a run that hits it is cut short (the
weight is then biased towards zero, -inf if nothing was accepted).
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import numpy as np

__all__ = ["geometric_awrs", "recursive_awrs"]


def _numpy(values: Any) -> np.ndarray:
    """A float64 numpy copy of a numpy array, list or (any device's) torch tensor."""
    if hasattr(values, "detach"):
        values = values.detach().cpu().numpy()
    return np.array(values, dtype=np.float64)


def _order(logps: Any, make_keys: Callable[[Any], Any]) -> tuple[np.ndarray, np.ndarray]:
    """(indices of the finite entries in descending key order, the row as float64 numpy)."""
    lp = _numpy(logps)
    keys = _numpy(make_keys(logps))
    order = np.argsort(-keys, kind="stable")
    return order[np.isfinite(lp[order])], lp


async def recursive_awrs(
    *,
    logps: Any,
    toks: Sequence[Any],
    accept: Callable[[Any], Awaitable[bool]],
    make_keys: Callable[[Any], Any],
    max_rejects: float,
) -> tuple[Any, float, float]:
    """The first accepted token of one without-replacement walk, with a recursive weight.

    With x_k the first accepted token (after k rejections), T_k the mass of
    the tokens not yet walked (x_k's included) and Z the row's total,
    E[f] = p(x_k)/T_k f(x_k) + (1 - p(x_k)/T_k) E[f | x != x_k] applied to the
    accepted share: the tail expectation is a one-draw coin flip on the next
    token in the walk, so the weight is T_k / Z if that token is accepted (or
    there is none) and p(x_k) / Z if it is rejected. The rejections before
    x_k contribute the telescoping factor T_k / Z. Computed in logs from the
    walk's reverse cumulative log-sum, so a finite accepted token has a finite
    weight however small its mass.

    Returns -inf with the last token asked about when every token is rejected
    or `max_rejects` rejections come first; at the `max_rejects`-th token an
    accepted one returns T_k / Z without the coin flip.
    """
    if not max_rejects >= 1:
        raise ValueError(f"max_rejects must be >= 1, got {max_rejects!r}")
    order, lp = _order(logps, make_keys)
    if len(order) == 0:
        return toks[0], -math.inf, math.nan
    walked = lp[order]
    log_tail = np.logaddexp.accumulate(walked[::-1])[::-1]  # log T_k
    log_z = float(log_tail[0])
    for k, index in enumerate(order):
        tok = toks[index]
        last = k + 1 == len(order)
        if await accept(tok):
            if k + 1 >= max_rejects or last:
                return tok, float(log_tail[k]) - log_z, math.nan
            nxt = await accept(toks[order[k + 1]])
            log_w = float(log_tail[k] if nxt else walked[k]) - log_z
            return tok, min(log_w, 0.0), math.nan
        if last or k + 1 >= max_rejects:
            return tok, -math.inf, math.nan
    raise AssertionError("unreachable: the walk returns at its last token")


async def geometric_awrs(
    *,
    logps: Any,
    toks: Sequence[Any],
    accept: Callable[[Any], Awaitable[bool]],
    make_keys: Callable[[Any], Any],
    rng: Any,
    max_rejects: float,
    max_accepts: int,
) -> tuple[Any, float, float]:
    """A with-replacement rejection run rebuilt from without-replacement walks.

    Up to `max_accepts` rounds; each walks the tokens not yet rejected in a
    fresh order until one is accepted (which stays in play, as with
    replacement). Before each token reached, the draws a with-replacement
    sampler would have spent on the rejected mass m are added as
    `rng.geometric(1 - m) - 1` phantom rejections. With a accepts and r
    rejections (r capped at `max_rejects`) the weight is
    min(max_accepts - 1, a) / (a + r - 1), the Rao-Blackwellised estimate of
    the accepted share from the counts; the token is the first accepted.

    `rng` needs only `geometric(p)` (a numpy Generator will do).
    """
    if max_accepts < 2:
        raise ValueError(
            f"max_accepts must be >= 2 for a properly weighted sample, got {max_accepts}"
        )
    if not max_rejects >= 1:
        raise ValueError(f"max_rejects must be >= 1, got {max_rejects!r}")
    current = logps.clone() if hasattr(logps, "clone") else _numpy(logps)
    n_accepts, n_rejects, rejected_mass = 0, 0, 0.0
    first = first_rejected = None
    for _ in range(max_accepts):
        if n_rejects >= max_rejects:
            break
        order, lp = _order(current, make_keys)
        for index in order:
            if rejected_mass >= 1:  # rounding: the live mass is below float precision
                return first_rejected, -math.inf, math.nan
            if rejected_mass > 0:
                n_rejects += int(rng.geometric(1 - rejected_mass)) - 1
            if n_rejects >= max_rejects:
                break
            tok = toks[index]
            if await accept(tok):
                n_accepts += 1
                first = tok if first is None else first
                break
            first_rejected = tok if first_rejected is None else first_rejected
            n_rejects += 1
            rejected_mass += math.exp(lp[index])
            current[int(index)] = -math.inf
    if n_accepts == 0:
        return (toks[0] if first_rejected is None else first_rejected), -math.inf, math.nan
    n_rejects = min(n_rejects, max_rejects)
    estimate = min(max_accepts - 1, n_accepts) / (n_accepts + n_rejects - 1)
    return first, math.log(estimate), math.nan
