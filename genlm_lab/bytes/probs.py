"""`LazyByteProbs`: a next-byte distribution over 258 slots, shown readably.

Slots 0..255 are bytes, slot 256 is EOT (end of the current token, used by a
single candidate) and slot 257 is EOS (end of the sequence). The array is
kept as is; a `Chart` is only built when someone asks for one.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterator, Sequence

import numpy as np

from genlm_lab.bytes.errors import ByteProbsLengthError
from genlm_lab.util import Chart, byte_label

EOT = 256
"""Slot of the end-of-token event in a 258-slot distribution."""
EOS = 257
"""Slot of the end-of-sequence event in a 258-slot distribution."""
N_SLOTS = 258


def _slot(b: int | None) -> int:
    if b is None:
        return EOT
    if isinstance(b, bool) or not hasattr(b, "__index__"):
        raise ValueError(f"byte slot {b!r} is not an int: use 0..255, 256 (EOT), 257 (EOS)")
    b = int(b)
    if not 0 <= b < N_SLOTS:
        raise ValueError(f"byte slot {b} is outside 0..257 (bytes, then EOT=256, EOS=257)")
    return b


class LazyByteProbs:
    """(Log-)probabilities of the next byte, EOT and EOS.

    Args:
        ps: 258 values: bytes 0..255, EOT at 256, EOS at 257.
        log_space: whether `ps` holds log-probabilities (the default).

    Indexing takes a byte (0..255), None or 256 for EOT, 257 for EOS.
    `ps` is kept as given; `array` holds the same values as float64 numpy.
    """

    def __init__(self, ps: Sequence[float] | np.ndarray, log_space: bool = True) -> None:
        arr = np.asarray(ps, dtype=np.float64)
        if arr.shape != (N_SLOTS,):
            raise ByteProbsLengthError(
                f"LazyByteProbs needs {N_SLOTS} values, got shape {arr.shape}"
            )
        self.ps = ps  # kept as given (list, array, tensor), as genlm-bytes does
        self.array = arr
        self.log_space = log_space

    def __getitem__(self, b: int | None) -> float:
        return float(self.array[_slot(b)])

    def __len__(self) -> int:
        return N_SLOTS

    def __iter__(self) -> Iterator[float]:
        """The values of the 258 slots, in slot order."""
        return iter(self.array.tolist())

    def prob(self, b: int | None) -> float:
        """Probability (not log) of one slot."""
        v = self[b]
        return math.exp(v) if self.log_space else v

    def total(self) -> float:
        """Sum of the probabilities of all slots (1 for a normalised distribution)."""
        p = np.exp(self.array) if self.log_space else self.array
        return float(p.sum())

    def materialize(self) -> Chart:
        """The distribution as a `Chart`: bytes by int, EOT by None, EOS by 257.

        Every slot is a key, zero-probability ones included (`257 in chart`
        says the slot exists, not that it is possible), as in genlm-bytes.
        """
        zero = -math.inf if self.log_space else 0.0
        return Chart(zero, [(None if i == EOT else i, float(v)) for i, v in enumerate(self.array)])

    def pretty(self, k: int | None = None) -> Chart:
        """Probabilities keyed by readable labels ('a', '␣', '\\n', 'EOS'), largest first."""
        p = np.exp(self.array) if self.log_space else self.array
        order = [int(i) for i in np.argsort(-p, kind="stable") if p[i] > 0]
        if k is not None:
            order = order[:k]
        return Chart(0.0, [(byte_label(i), float(p[i])) for i in order])

    def top(self, k: int = 10) -> list[tuple[int, float]]:
        """The `k` most likely slots as (slot, probability) pairs."""
        return list(self._items(k))

    def _items(self, k: int | None = None):
        p = np.exp(self.array) if self.log_space else self.array
        order = [int(i) for i in np.argsort(-p, kind="stable") if p[i] > 0]
        for i in order[:k] if k is not None else order:
            yield i, float(p[i])

    def __repr__(self) -> str:
        items = ", ".join(f"{byte_label(i)!r}: {p:.3g}" for i, p in self._items(8))
        return f"LazyByteProbs({{{items}{', ...' if self._n_nonzero() > 8 else ''}}})"

    def _n_nonzero(self) -> int:
        return int(np.count_nonzero(np.isfinite(self.array) if self.log_space else self.array > 0))

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td><code>{html.escape(byte_label(i))}</code></td>"
            f"<td style='text-align:right'>{p:.4g}</td></tr>"
            for i, p in self._items(20)
        )
        more = self._n_nonzero() - min(20, self._n_nonzero())
        foot = f"<tr><td colspan=2>… {more} more</td></tr>" if more > 0 else ""
        return (
            "<table class='genlm-byte-probs'><thead><tr><th>next byte</th><th>prob</th>"
            f"</tr></thead><tbody>{rows}{foot}</tbody></table>"
        )
