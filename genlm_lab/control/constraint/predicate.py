"""`BoolPredicate`: any Python check on the text so far, as a constraint over bytes.

The expensive-check case: nothing is known about the check but its answers,
so a full next-token mask costs one call per token (per byte-trie node when
coerced onto an LM's vocabulary). `AWRS` exists for it: it calls the check
only on the tokens it draws.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from genlm_lab.control.core.weights import LazyWeights
from genlm_lab.control.potential.base import Potential

__all__ = ["BoolPredicate"]


class BoolPredicate(Potential):
    """A constraint over bytes given by Python functions of the text.

    Args:
        prefix_ok: `prefix_ok(text: bytes) -> bool`: can `text` still be
            extended into an acceptable string? It must be prefix-closed (once
            False, False for every extension), as every potential's prefix is.
        complete_ok: `complete_ok(text: bytes) -> bool`: is `text` acceptable
            as a whole? Default: `prefix_ok`.
        name: a label for views.
    """

    is_boolean = True

    def __init__(
        self,
        prefix_ok: Callable[[bytes], Any],
        complete_ok: Callable[[bytes], Any] | None = None,
        name: str | None = None,
    ) -> None:
        if not callable(prefix_ok) or (complete_ok is not None and not callable(complete_ok)):
            raise ValueError("BoolPredicate takes functions of the text (bytes) that return bools")
        super().__init__(list(range(256)))
        self.prefix_ok = prefix_ok
        self.complete_ok = prefix_ok if complete_ok is None else complete_ok
        if name is not None:
            self.name = name
        self.calls = 0

    def _text(self, context: Sequence[Any]) -> bytes:
        return bytes(self.encode(context))

    async def prefix(self, context: Sequence[Any]) -> float:
        self.calls += 1
        return 0.0 if self.prefix_ok(self._text(context)) else -math.inf

    async def complete(self, context: Sequence[Any]) -> float:
        self.calls += 1
        text = self._text(context)
        return 0.0 if self.prefix_ok(text) and self.complete_ok(text) else -math.inf

    async def logw_next(self, context: Sequence[Any]) -> LazyWeights:
        text = self._text(context)
        if not self.prefix_ok(text):
            raise ValueError(f"the context {text!r:.60} is already ruled out by {self.name}")
        out = np.full(257, -math.inf)
        for b in range(256):
            if self.prefix_ok(text + bytes([b])):
                out[b] = 0.0
        if self.complete_ok(text):
            out[256] = 0.0
        self.calls += 258
        return self.make_lazy_weights(out)
