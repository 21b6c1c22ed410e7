"""A lipogram: text that never uses some letters (by default no "e" or "E")."""

from __future__ import annotations

from typing import Any

from genlm_lab.smc.lm_context import LMContext
from genlm_lab.smc.masks import token_masks
from genlm_lab.smc.model import Model

__all__ = ["Lipogram"]


class Lipogram(Model):
    """Generate up to `max_tokens` tokens without the `forbidden` letters.

    Each step observes that the next token avoids the letters (weighting the
    particle by the probability of that event) and then draws the token from
    the LM restricted to such tokens. EOS (shown as nothing) ends the text.

    Args:
        lm: an `AsyncLM`.
        prompt: the text to continue.
        forbidden: letters no generated token may contain.
        max_tokens: the most tokens to generate.
        temp: sampling temperature.
    """

    def __init__(
        self,
        lm: Any,
        prompt: str = "Write a sentence about the sea:",
        forbidden: str = "eE",
        max_tokens: int = 20,
        temp: float = 1.0,
    ) -> None:
        super().__init__()
        masks = token_masks(lm)
        self.lm = lm
        self.forbidden = forbidden
        self.max_tokens = max_tokens
        self.mask = masks.without_bytes(forbidden, keep_special=False) | masks.EOS
        self.context = LMContext(lm, prompt, temp, show_eos=False)

    def immutable_properties(self) -> set[str]:
        return {"lm", "mask", "forbidden"}

    async def step(self) -> None:
        await self.observe(self.context.mask_dist(self.mask), True)
        await self.sample(self.context.next_token())
        if self.context.ended or self.context.token_count >= self.max_tokens:
            self.finish()

    def satisfied(self) -> bool:
        """The hard constraint: no forbidden letter in the text."""
        text = self.context.text_bytes()
        return not any(ch.encode() in text for ch in self.forbidden)

    def __str__(self) -> str:
        return str(self.context)
