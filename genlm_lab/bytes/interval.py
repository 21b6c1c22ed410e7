"""The certified interval of a byte beam: what pruning may have cost, as a bound.

Every candidate a beam drops (pruned by K or `prune_threshold`, or a token
extension left unevaluated by a threshold) carries a weight that bounds the
mass of all its continuations: a candidate's weight is the probability that
the model's tokens spell the bytes read so far along its token path, and any
longer text it could still spell is a subset of that event. Candidates are
disjoint sets of tokenizations. So the true probability of the bytes read
(every tokenization, nothing pruned) lies in

    [Z, Z + dropped]

where Z is the beam's summed weight (`logZ`) and `dropped` the total weight
set aside so far (`log_dropped`). The upper end is `logZ_upper`; its width
`logZ_upper - logZ` says how far the beam may be from the exact answer.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

from genlm_lab.bytes.errors import IntervalWarning
from genlm_lab.util import logsumexp

__all__ = ["IntervalWarning", "add_log", "keep_for_width"]


def add_log(a: float, b: float) -> float:
    """log(exp(a) + exp(b)), with -inf as zero."""
    if a == -math.inf:
        return b
    if b == -math.inf:
        return a
    hi, lo = (a, b) if a >= b else (b, a)
    return hi + math.log1p(math.exp(lo - hi))


def keep_for_width(
    weights: Sequence[float],
    keep: list[int],
    log_dropped: float,
    max_width: float,
    most: int | None = None,
) -> list[int]:
    """`keep` plus the heaviest other candidates needed to hold the width within `max_width`.

    Pruning moves weight from Z to the dropped mass, so Z + dropped stays the
    same and the width is log((Z + dropped) / Z_kept): candidates are added
    back, heaviest first, until Z_kept >= (Z + dropped) * exp(-max_width) or
    `most` candidates are kept. (Mass dropped earlier bounds continuations
    that may no longer read the text, so later bytes can widen the interval
    whatever this prune keeps: `most` keeps the beam from growing without end.)

    Args:
        weights: log-weights of all candidates, heaviest first.
        keep: indices the usual rules keep (K, prune_threshold).
        log_dropped: log of the weight dropped before this prune.
        max_width: largest allowed `logZ_upper - logZ` (nats).
        most: the most candidates to keep (None: no limit).
    """
    upper = add_log(logsumexp(list(weights)), log_dropped)
    need = upper - max_width
    kept = set(keep)
    z = logsumexp([weights[i] for i in keep]) if keep else -math.inf
    out = list(keep)
    for i, w in enumerate(weights):
        if z >= need or (most is not None and len(out) >= most):
            break
        if i not in kept:
            out.append(i)
            z = add_log(z, w)
    return sorted(out)


def warn_width(position: int, width: float, max_width: float) -> None:
    """Warn that the interval at `position` is `width` nats wide, past `max_width`."""
    warnings.warn(
        f"the byte beam's certified interval is {width:.3g} nats wide after {position} bytes "
        f"(max_width={max_width}): logZ may be that far below the exact log-probability; "
        "raise K, lower the thresholds, or use BeamParams(on_wide='widen')",
        IntervalWarning,
        stacklevel=3,
    )
