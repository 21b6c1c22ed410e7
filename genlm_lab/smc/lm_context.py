"""`LMContext`: a generation in progress, sampled token by token inside a model.

The context holds the token ids so far and a *mask*: the next-token ids not yet
ruled out. `next_token()` draws (or observes) the next token, restricted to
the mask and renormalised. `mask_dist(mask)` is the Bernoulli event "the next
token lies in `mask`"; sampling or observing it narrows the mask, which is
how a model constrains a token before drawing it (observe `True` to weight
the particle by the mask's probability and then draw inside the mask: the
locally optimal proposal for a hard token constraint).

Log-probs are fetched lazily, when a particle first needs them in a step, so
all particles ask the backend at once and the backend batches their requests.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from genlm_lab.smc._context import GrowingContext, NextUnit, read_only
from genlm_lab.smc.distributions import (
    _MaskEvent,
    _token_id,
    as_numpy,
    encode_prompt,
    sample_index,
    sample_weighted,
)
from genlm_lab.smc.masks import as_mask, token_masks
from genlm_lab.smc.rng import get_rng

__all__ = ["LMContext", "LMNextToken", "LMTokenMask"]

# Below this mass (relative to the top token) float32 probabilities are
# subnormal or zero (exp(-103) underflows): such masses and draws are taken
# from the float64 log-probs instead. Rare, so off the hot path.
_FLOAT32_TINY = 1e-30
_LOG_FLOAT32_TINY = math.log(_FLOAT32_TINY)


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


class LMContext(GrowingContext):
    """A sequence of tokens from `lm` that a model extends, with an optional mask.

    Args:
        lm: an `AsyncLM` (`next_token_logprobs`, `byte_vocab`, `tokenizer`).
        prompt: the text (or token ids) the generation continues.
        temp: temperature of the next-token distribution (> 0).
        show_prompt: include the prompt in `str(context)`.
        show_eos: include EOS tokens in `str(context)`.

    Attributes:
        tokens: all token ids, prompt included.
        prompt_token_count: how many of `tokens` are the prompt.
    """

    UNIT, GROWING = "token", "tokens"

    def __init__(
        self,
        lm: Any,
        prompt: str | Sequence[int],
        temp: float = 1.0,
        show_prompt: bool = False,
        show_eos: bool = True,
    ) -> None:
        if not temp > 0 or not math.isfinite(temp):
            raise ValueError(f"temperature must be a finite number > 0, got {temp}")
        self.lm = lm
        self.tokens = encode_prompt(lm, prompt)
        self.prompt_token_count = len(self.tokens)
        self.temp = float(temp)
        self.show_prompt = show_prompt
        self.show_eos = show_eos
        self._eos = frozenset(lm.eos_token_ids)
        self._invalidate()

    @classmethod
    async def create(
        cls, lm: Any, prompt: str | Sequence[int], temp: float = 1.0, **kwargs: Any
    ) -> LMContext:
        """Build a context and fetch its first next-token distribution now."""
        ctx = cls(lm, prompt, temp, **kwargs)
        await ctx.ensure_logprobs()
        return ctx

    # ------------------------------------------------------------ state
    def _invalidate(self) -> None:
        # Arrays are replaced, never mutated in place: copies share them safely.
        self._raw: np.ndarray | None = None  # float32 log-probs / temp
        self._shift = 0.0  # max of _raw
        self._probs: np.ndarray | None = None  # float32 exp(_raw - _shift), unnormalised
        self._mask: np.ndarray | None = None  # None: every token allowed
        self._log_mass: float | None = None  # log of the allowed part of _probs' mass

    async def ensure_logprobs(self) -> None:
        """Fetch the next-token log-probs of the current tokens if not yet known.

        The hot path stays in float32 numpy (one exp per fetch); masses are
        summed in float64, so weights keep float64 accuracy relative to the
        backend's float32 log-probs.
        """
        if self._raw is None:
            self._set_raw(await self.lm.next_token_logprobs(self.tokens))

    def _set_raw(self, raw: Any) -> None:
        if self._raw is None:
            raw = np.asarray(as_numpy(raw), dtype=np.float32)  # numpy: no torch pool
            if self.temp != 1.0:
                raw = raw / np.float32(self.temp)
            shift = float(raw.max())
            if not math.isfinite(shift):
                raise ValueError(f"the LM gave no finite log-prob after {len(self.tokens)} tokens")
            self._raw, self._shift = raw, shift
            self._probs = np.exp(raw - np.float32(shift))

    def _require(self) -> np.ndarray:
        if self._raw is None and not _loop_running():
            # llamppl fetches in its constructor; outside async code, fetch now (blocking)
            sync = getattr(self.lm, "next_token_logprobs_unbatched", None)
            self._set_raw((sync or self.lm.next_token_logprobs_sync)(self.tokens))
        if self._raw is None:
            raise RuntimeError(
                "the next-token distribution is not fetched yet: `await ctx.ensure_logprobs()`"
            )
        return self._raw

    def _allowed_log_mass(self) -> float:
        if self._log_mass is None:
            self._log_mass = math.log(float(self._probs.sum(dtype=np.float64)))
        return self._log_mass

    def _token_log_prob(self, token_id: int) -> float:
        if self._mask is not None and not self._mask[token_id]:
            return -math.inf
        log_mass = self._allowed_log_mass()
        if log_mass == -math.inf:
            return -math.inf
        return float(self._raw[token_id]) - self._shift - log_mass

    @property
    def model_mask(self) -> np.ndarray:
        """Boolean array of the token ids not yet ruled out as the next token.

        Read-only: the mask is shared with this context's copies.
        """
        if self._mask is None:
            return np.ones(self.lm.vocab_size, dtype=bool)
        return read_only(self._mask)

    @property
    def next_token_logprobs(self) -> np.ndarray:
        """Log-probs of the next token under temperature and mask, renormalised (-inf outside)."""
        raw = self._require().astype(np.float64)
        log_mass = self._allowed_log_mass()
        if log_mass == -math.inf:
            return np.full_like(raw, -np.inf)
        out = raw - (self._shift + log_mass)
        return out if self._mask is None else np.where(self._mask, out, -np.inf)

    def _push(self, token_id: int) -> None:
        self.tokens.append(token_id)
        self._invalidate()

    @property
    def token_count(self) -> int:
        """Number of tokens generated after the prompt."""
        return len(self.tokens) - self.prompt_token_count

    @property
    def generated_ids(self) -> list[int]:
        """Token ids after the prompt."""
        return self.tokens[self.prompt_token_count :]

    @property
    def ended(self) -> bool:
        """Whether the last generated token is an EOS token."""
        return self.token_count > 0 and self.tokens[-1] in self._eos

    def _ending(self) -> str:
        return f"{self.token_count} tokens generated, the last one EOS"

    # ----------------------------------------------------- distributions
    def next_token(self) -> LMNextToken:
        """The distribution of the next token; sampling or observing it appends the token.

        Sampling or observing it raises RuntimeError once the context has ended
        with EOS (`ended`): the model should `finish()` at EOS.
        """
        return LMNextToken(self)

    def mask_dist(self, mask: Any) -> LMTokenMask:
        """Bernoulli: True iff the next token lies in `mask` (bool array or token ids).

        Sampling or observing it narrows this context's mask to `mask` (True)
        or to its complement (False), so `next_token()` then draws accordingly.
        A bool array is used as is, not copied: treat masks as read-only.
        Like `next_token()`, it raises RuntimeError on a context that has `ended`.
        """
        return LMTokenMask(self, as_mask(mask, self.lm.vocab_size))

    @property
    def masks(self) -> Any:
        """The `TokenMasks` of this context's LM."""
        return token_masks(self.lm)

    # ---------------------------------------------------------- display
    def text_bytes(self) -> bytes:
        """The context as bytes (prompt and EOS shown per `show_prompt` / `show_eos`)."""
        ids = self.tokens if self.show_prompt else self.generated_ids
        if not self.show_eos:
            ids = [i for i in ids if i not in self._eos]
        return b"".join(bytes(self.lm.byte_vocab[i]) for i in ids)

    def __repr__(self) -> str:
        return f"LMContext({str(self)!r}, tokens={self.token_count})"


class LMNextToken(NextUnit):
    """The next token of an `LMContext`; drawing or observing it advances the context."""

    ctx: LMContext

    async def sample(self) -> tuple[Any, float]:
        ctx = self.ctx
        ctx._check_open()
        await ctx.ensure_logprobs()
        if ctx._allowed_log_mass() == -math.inf:
            # A dead particle (its mask has no mass): any token, with weight 0.
            token_id, log_p = int(np.argmax(ctx._raw)), -math.inf
        else:
            if ctx._mask is None:
                token_id = sample_weighted(ctx._probs, get_rng())
            elif ctx._allowed_log_mass() < _LOG_FLOAT32_TINY:
                token_id = sample_index(np.where(ctx._mask, ctx._raw, -np.inf), get_rng())
            else:
                token_id = sample_weighted(ctx._probs * ctx._mask, get_rng())
            log_p = ctx._token_log_prob(token_id)
        ctx._push(token_id)
        return ctx.lm.byte_vocab[token_id], log_p

    async def log_prob(self, x: Any) -> float:
        ctx = self.ctx
        token_id = _token_id(ctx.lm, x)
        ctx._check_open()
        await ctx.ensure_logprobs()
        log_p = ctx._token_log_prob(token_id)
        ctx._push(token_id)
        return log_p


class LMTokenMask(_MaskEvent):
    """Bernoulli event "the next token of `ctx` lies in `mask`"; it narrows the context's mask."""

    async def _masses(self) -> tuple[np.ndarray, np.ndarray, float, float]:
        ctx = self.ctx
        ctx._check_open()
        await ctx.ensure_logprobs()
        allowed = ctx._mask
        yes = self.mask if allowed is None else allowed & self.mask
        no = ~self.mask if allowed is None else allowed & ~self.mask
        probs = ctx._probs
        m_yes = float(np.dot(probs, yes))  # BLAS: ~40x faster than a masked sum
        m_no = float(np.dot(probs, no))
        return yes, no, self._exact(m_yes, yes), self._exact(m_no, no)

    def _exact(self, mass: float, where: np.ndarray) -> float:
        """`mass`, or the float64 sum where float32 probabilities underflow."""
        if mass >= _FLOAT32_TINY:
            return mass
        ctx = self.ctx
        return float(np.exp(ctx._raw[where].astype(np.float64) - ctx._shift).sum())
