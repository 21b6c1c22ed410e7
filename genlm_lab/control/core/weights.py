"""`LazyWeights`: one weight per token of a vocabulary plus EOS, as a dense array."""

from __future__ import annotations

import math
import warnings
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from genlm_lab.util import Chart, logsumexp

__all__ = ["LazyWeights", "WeightsBatch", "split_rows"]


class LazyWeights:
    """The (log-)weights a potential gives each token of `vocab_eos`.

    The array stays dense and is only turned into a `Chart` on request
    (`materialize`), so a 49k-token step costs one numpy vector.

    Args:
        weights: one float per entry of `decode`.
        encode: maps a token (or EOS) to its index.
        decode: the tokens, EOS last.
        log: whether `weights` are log-weights.
    """

    def __init__(
        self,
        weights: np.ndarray,
        encode: dict[Hashable, int],
        decode: Sequence[Any],
        log: bool = True,
    ) -> None:
        weights = np.asarray(weights, dtype=np.float64)
        if weights.ndim not in (1, 2) or weights.shape[-1] != len(decode):
            raise ValueError(
                f"weights has shape {weights.shape}; expected ({len(decode)},), one per token "
                f"and EOS (or (n, {len(decode)}) for n contexts)"
            )
        self.weights = weights
        self.encode = encode
        self.decode = decode
        self.is_log = log

    def spawn(self, weights: np.ndarray, log: bool | None = None) -> LazyWeights:
        """The same vocabulary with other weights."""
        return LazyWeights(weights, self.encode, self.decode, self.is_log if log is None else log)

    def __getitem__(self, token: Hashable) -> float:
        """The weight of one token (or EOS); a token outside the vocabulary has weight zero."""
        index = self.encode.get(token)
        if index is None:
            return -math.inf if self.is_log else 0.0
        if type(token) is bytes and type(self.decode[index]) is not bytes:
            warnings.warn(
                "Indexing LazyWeights by bytes is deprecated (genlm-control 0.4); index by "
                "the Token, since several tokens may share the bytes",
                DeprecationWarning,
                stacklevel=2,
            )
        return float(self.weights[index])

    def __len__(self) -> int:
        return len(self.weights)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return self.weights if dtype is None else self.weights.astype(dtype)

    def keys(self) -> Sequence[Any]:
        return self.decode

    def values(self) -> np.ndarray:
        return self.weights

    def items(self):
        return zip(self.decode, self.weights, strict=True)

    def sum(self) -> float:
        """Total weight: logsumexp for log-weights."""
        return logsumexp(self.weights) if self.is_log else float(self.weights.sum())

    def normalize(self) -> LazyWeights:
        """Weights that sum to one (log-weights: logsumexp to 0).

        Raises:
            ValueError: if every weight is zero (nothing to normalise).
        """
        total = self.sum()
        if (self.is_log and total == -math.inf) or (not self.is_log and total == 0):
            raise ValueError("cannot normalise: every token has weight zero")
        return self.spawn(self.weights - total if self.is_log else self.weights / total)

    def exp(self) -> LazyWeights:
        if not self.is_log:
            raise ValueError("weights are not log-weights")
        return self.spawn(np.exp(self.weights), log=False)

    def log(self) -> LazyWeights:
        if self.is_log:
            raise ValueError("weights are already log-weights")
        with np.errstate(divide="ignore"):
            return self.spawn(np.log(self.weights), log=True)

    def argmax(self) -> Any:
        """The token of greatest weight."""
        return self.decode[int(np.argmax(self.weights))]

    def materialize(self, top: int | None = None) -> Chart:
        """A `Chart` of the non-zero weights, greatest first (the `top` ones, or all)."""
        zero = -math.inf if self.is_log else 0.0
        live = np.flatnonzero(self.weights != zero)
        order = live[np.argsort(-self.weights[live], kind="stable")]
        if top is not None:
            order = order[:top]
        return Chart(zero, ((self.decode[i], float(self.weights[i])) for i in order))

    def assert_equal(self, other: LazyWeights, **kwargs: Any) -> None:
        """Assert the same tokens in the same order and weights close (`assert_allclose` kwargs)."""
        assert list(self.decode) == list(other.decode), "the vocabularies differ"
        np.testing.assert_allclose(self.weights, other.weights, **kwargs)

    def assert_equal_unordered(self, other: LazyWeights, **kwargs: Any) -> None:
        """Assert the same tokens (in any order) with close weights (`np.isclose` kwargs)."""
        assert set(self.decode) == set(other.decode), "keys do not match: the vocabularies differ"
        for token in self.decode:
            have, want = self[token], other[token]
            assert have == want or np.isclose(have, want, **kwargs), f"{token!r}: {have} != {want}"

    def __repr__(self) -> str:
        return repr(self.materialize(top=10))


def split_rows(batch: Any) -> list[LazyWeights]:
    """The rows of a `batch_logw_next` result: a list of `LazyWeights`, or one 2-d `LazyWeights`.

    genlm-control's potentials return the second; genlm_lab's return a `WeightsBatch`.
    """
    if isinstance(batch, LazyWeights):
        if batch.weights.ndim == 1:
            return [batch]
        return [batch.spawn(row) for row in batch.weights]
    return list(batch)


class WeightsBatch(list):
    """The `LazyWeights` of several contexts: a list, plus their weights as one 2-d array.

    genlm_lab's samplers iterate the rows; code written for genlm-control reads
    `batch.weights[i]` and `batch.spawn(row)`.
    """

    @property
    def weights(self) -> np.ndarray:
        """Shape (n_contexts, len(vocab_eos))."""
        if not self:
            return np.zeros((0, 0))
        return np.stack([np.asarray(w.weights) for w in self])

    @property
    def is_log(self) -> bool:
        return self[0].is_log

    @property
    def encode(self) -> dict[Hashable, int]:
        return self[0].encode

    @property
    def decode(self) -> Sequence[Any]:
        return self[0].decode

    def spawn(self, weights: np.ndarray, log: bool | None = None) -> LazyWeights | WeightsBatch:
        """One `LazyWeights` over the rows' vocabulary (a `WeightsBatch` for a 2-d array)."""
        weights = np.asarray(weights)
        if weights.ndim == 2:
            return WeightsBatch(self[0].spawn(row, log) for row in weights)
        return self[0].spawn(weights, log)

    def normalize(self) -> WeightsBatch:
        """Every row normalised."""
        return WeightsBatch(w.normalize() for w in self)

    def assert_equal(self, other: Any, **kwargs: Any) -> None:
        """Assert the same rows: same tokens, weights close (`assert_allclose` kwargs)."""
        rows = other if isinstance(other, list) else split_rows(other)
        assert len(self) == len(rows), f"{len(self)} rows != {len(rows)} rows"
        for mine, theirs in zip(self, rows, strict=True):
            mine.assert_equal(theirs, **kwargs)
