"""`MaskWeights`: the 0 / -inf log-weights of a constraint, kept as a packed bit mask.

A grammar mask over a 262k-token vocabulary is 32 KB of bits as llguidance
writes it, 256 KB as one bool per token, and 2 MB as float64 log-weights.
Writing the float vector cost more than computing the mask itself, so a
constraint's `logw_next` hands back the bits and builds the dense vector
only when something reads `.weights` (once per object). Reading one token's
weight, or the bool mask, never builds it.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from genlm_lab.control.core.weights import LazyWeights

__all__ = ["MaskWeights", "read_only_masks", "unpack_mask"]

_TABLE = np.array([-math.inf, 0.0])


def unpack_mask(bits: np.ndarray, n: int) -> np.ndarray:
    """Bool array of the first `n` bits of a little-endian packed uint8 mask (a fresh array)."""
    return np.unpackbits(bits, count=n, bitorder="little").view(bool)


def read_only_masks(packed: Sequence[np.ndarray], n: int) -> list[np.ndarray]:
    """`unpack_mask` of each packed mask, read-only: engines share them through their caches."""
    out = []
    for bits in packed:
        mask = unpack_mask(bits, n)
        mask.flags.writeable = False
        out.append(mask)
    return out


class MaskWeights(LazyWeights):
    """Log-weights 0 (allowed) or -inf (not) for each entry of `decode`, from packed bits.

    Behaves exactly as `LazyWeights(np.where(mask, 0.0, -inf), ...)`; the
    dense array is computed on the first read of `.weights` and kept.

    Args:
        bits: uint8 array, bit i (little-endian within each byte) set iff entry i is allowed;
            bits past `len(decode)` are ignored.
        encode: maps a token (or EOS) to its index.
        decode: the tokens, EOS last.
    """

    def __init__(
        self, bits: np.ndarray, encode: dict[Hashable, int], decode: Sequence[Any]
    ) -> None:
        if bits.dtype != np.uint8 or bits.ndim != 1 or bits.size * 8 < len(decode):
            raise ValueError(
                f"bits must be a 1-d uint8 array of at least {len(decode)} bits, got "
                f"{bits.dtype} of shape {bits.shape}"
            )
        self.bits = bits
        self.encode = encode
        self.decode = decode
        self.is_log = True
        self._dense: np.ndarray | None = None

    @property
    def mask(self) -> np.ndarray:
        """Bool array over `decode`: which entries have weight 1 (log-weight 0)."""
        return unpack_mask(self.bits, len(self.decode))

    @property
    def weights(self) -> np.ndarray:  # type: ignore[override]
        """The dense log-weights (built on first read)."""
        if self._dense is None:
            flags = np.unpackbits(self.bits, count=len(self.decode), bitorder="little")
            self._dense = _TABLE[flags]
        return self._dense

    def __getitem__(self, token: Hashable) -> float:
        index = self.encode.get(token)
        if index is None:
            return -math.inf
        return 0.0 if (self.bits[index >> 3] >> (index & 7)) & 1 else -math.inf

    def __len__(self) -> int:
        return len(self.decode)
