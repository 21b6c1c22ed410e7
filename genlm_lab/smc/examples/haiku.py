"""A haiku-like line: one line of at most `max_bytes` bytes that ends cleanly."""

from __future__ import annotations

from typing import Any

import numpy as np

from genlm_lab.smc.lm_context import LMContext
from genlm_lab.smc.masks import token_masks
from genlm_lab.smc.model import Model

__all__ = ["ShortLine"]


class ShortLine(Model):
    """Generate one line of at most `max_bytes` bytes, ended by a newline token or EOS.

    At each step only tokens that fit in the bytes left (and hold no newline)
    or that end the line are allowed; observing that event and then drawing
    inside it keeps every particle within the budget.

    Args:
        lm: an `AsyncLM`.
        prompt: the text to continue (e.g. a request for a haiku line).
        max_bytes: the most bytes the line may have.
        temp: sampling temperature.
    """

    def __init__(
        self,
        lm: Any,
        prompt: str = "A haiku about autumn leaves, first line:\n",
        max_bytes: int = 30,
        temp: float = 1.0,
    ) -> None:
        super().__init__()
        if max_bytes < 1:
            raise ValueError(f"max_bytes must be >= 1, got {max_bytes}")
        masks = token_masks(lm)
        vocab = [bytes(t) for t in lm.byte_vocab]
        newline_only = np.array([v == b"\n" for v in vocab], dtype=bool) & ~masks.SPECIAL
        self.lm = lm
        self.max_bytes = max_bytes
        self.ends = masks.EOS | newline_only
        self.inner = ~masks.SPECIAL & ~masks.containing("\n\r") & masks.token_length_mask(min=1)
        self.lengths = masks.token_lengths
        self.context = LMContext(lm, prompt, temp, show_eos=False)
        self.line = b""
        self.done = False

    def immutable_properties(self) -> set[str]:
        return {"lm", "ends", "inner", "lengths", "max_bytes"}

    async def step(self) -> None:
        left = self.max_bytes - len(self.line)
        allowed = self.ends | (self.inner & (self.lengths <= left))
        await self.observe(self.context.mask_dist(allowed), True)
        token = await self.sample(self.context.next_token())
        if self.ends[token.token_id]:
            self.done = True
            self.finish()
        else:
            self.line += bytes(token)

    def satisfied(self) -> bool:
        """The hard constraint: a finished line within the budget, without newlines."""
        return self.done and len(self.line) <= self.max_bytes and b"\n" not in self.line

    def __str__(self) -> str:
        return self.line.decode("utf-8", errors="replace")
