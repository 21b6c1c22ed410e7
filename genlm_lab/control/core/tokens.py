"""Helpers shared by the samplers, `Sequences` and `SMC`: token bytes, labels, categorical draws."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from genlm_lab.control.core.constant import EndOfSequence
from genlm_lab.util import Chart, escape_bytes


def token_bytes(token: Any) -> bytes:
    """The bytes a token stands for: bytes / `Token` as is, a byte value 0..255 as one byte, EOS empty.

    A multi-token unit (a list of tokens, from `MultiTokenUnitSampler`) stands for its tokens' bytes.
    """
    if isinstance(token, EndOfSequence):
        return b""
    if isinstance(token, list):
        return join_bytes(token)
    if isinstance(token, (bytes, bytearray)):
        return bytes(token)
    if isinstance(token, (int, np.integer)) and not isinstance(token, bool) and 0 <= token < 256:
        return bytes([int(token)])
    return str(token).encode("utf-8")


def token_label(token: Any) -> str:
    """A token as readable text for records and views: escaped bytes, "EOS" for the end."""
    if isinstance(token, EndOfSequence):
        return "EOS"
    if isinstance(token, list):  # a multi-token unit
        return "".join(token_label(t) for t in token)
    return escape_bytes(token_bytes(token))


def join_bytes(tokens: Iterable[Any]) -> bytes:
    """The bytes of a token sequence (EOS contributes nothing)."""
    return b"".join(token_bytes(t) for t in tokens)


def check_log_weights(weights: np.ndarray, what: str) -> None:
    """ValueError naming `what` if the log-weights hold NaN or +inf (no distribution to draw from)."""
    bad = np.flatnonzero(np.isnan(weights) | (weights == math.inf))
    if bad.size:
        i = int(bad[0])
        raise ValueError(
            f"{what} gave log-weight {weights[i]} at index {i}; log-weights must be finite or -inf"
        )


def sample_index(log_weights: np.ndarray, rng: np.random.Generator) -> int:
    """One index drawn with probability proportional to exp(log_weights); one must be finite."""
    return sample_linear(np.exp(log_weights - float(np.max(log_weights))), rng)


def sample_linear(weights: np.ndarray, rng: np.random.Generator) -> int:
    """One index drawn with probability proportional to `weights` (>= 0, not all zero).

    Inverse CDF on the cumulative sum, so no "probabilities do not sum to 1"
    error can arise; the index drawn always has positive weight.
    """
    cdf = np.cumsum(weights)
    u = rng.random() * cdf[-1]
    index = min(int(np.searchsorted(cdf, u, side="right")), len(cdf) - 1)
    if weights[index] <= 0:  # u rounded up to the total: take the last index with weight
        index = int(np.flatnonzero(weights > 0)[-1])
    return index


#: A custom draw: takes a `Chart` from the keys still possible to their probabilities
#: (summing to one) and returns one of its keys. SWOR tracers and tests pass one.
Draw = Callable[[Chart], Any]


def draw_index(
    log_weights: np.ndarray,
    keys: Sequence[Any],
    rng: np.random.Generator,
    draw: Draw | None = None,
) -> int:
    """An index drawn in proportion to exp(log_weights): from `rng`, or by `draw` if given.

    `draw` is offered the normalised probabilities of the keys with positive
    weight, as a `Chart`, and answers with one of those keys.

    Raises:
        ValueError: if `draw` answers with a key it was not offered.
    """
    if draw is None:
        return sample_index(log_weights, rng)
    probs = np.exp(log_weights - float(np.max(log_weights)))
    probs /= probs.sum()
    live = [int(i) for i in np.flatnonzero(probs > 0)]
    choice = draw(Chart(0.0, ((keys[i], float(probs[i])) for i in live)))
    for i in live:
        if keys[i] is choice or keys[i] == choice:
            return i
    raise ValueError(f"draw returned {choice!r}, which is not one of the keys it was offered")
