"""`ByteLMContext`: a generation in progress, sampled byte by byte from a `ByteBeamState`.

Constraints on characters are exact at the byte level: the beam sums over
the tokenizations of the bytes so far, so a model can forbid a byte without
the tokenization artefacts of token masks. Like `LMContext`, the context
keeps a *mask* of the next-byte slots not yet ruled out (0..255 and EOS =
257); `mask_dist(allowed)` is the event "the next byte is allowed", and
observing it True then drawing `next_byte()` is the locally optimal proposal
for a byte constraint.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from genlm_lab.bytes import EOS, BeamParams, ByteBeamState
from genlm_lab.bytes.lookahead import DEFAULT_DEPTH
from genlm_lab.smc._context import GrowingContext, NextUnit, read_only
from genlm_lab.smc.distributions import _MaskEvent, sample_index
from genlm_lab.smc.rng import get_rng

__all__ = ["ByteLMContext", "ByteMask", "NextByte", "byte_mask"]

_SLOTS = 258  # bytes 0..255, EOT (never drawn), EOS


def byte_mask(allowed: Any) -> np.ndarray:
    """A boolean array over the 258 byte slots from bytes, ints (257 = EOS) or a bool array.

    Raises:
        ValueError: for a value outside 0..255 and 257.
    """
    if isinstance(allowed, np.ndarray) and allowed.dtype == np.bool_:
        if allowed.shape != (_SLOTS,):
            raise ValueError(f"byte mask has shape {allowed.shape}, expected ({_SLOTS},)")
        return allowed
    if isinstance(allowed, str) or not hasattr(allowed, "__iter__"):
        raise ValueError(
            f"a byte mask is bytes, ints 0..255 (257 = EOS) or a bool array, got {allowed!r}"
        )
    values = list(allowed)
    if values and all(isinstance(v, (bool, np.bool_)) for v in values):
        return byte_mask(np.array(values, dtype=bool))  # bools: one per slot, not bytes 0 and 1
    out = np.zeros(_SLOTS, dtype=bool)
    for v in values:
        out[_byte_value(v)] = True
    return out


def _byte_value(x: Any) -> int:
    """`x` as a byte slot (0..255 or EOS), or one ValueError naming it."""
    try:
        # int(b"7") would read the digit, int(True) gives byte 1, int(97.5) drops the fraction
        if isinstance(x, (str, bytes, bytearray, bool, np.bool_)) or not hasattr(x, "__index__"):
            raise TypeError
        b = int(x)
    except (TypeError, ValueError):
        raise ValueError(f"a byte is an int 0..255 (or {EOS} for EOS), got {x!r}") from None
    if not (0 <= b <= 255 or b == EOS):
        raise ValueError(f"byte {b} is outside 0..255 (use {EOS} for EOS)")
    return b


class ByteLMContext(GrowingContext):
    """Bytes generated from a byte-level beam LM, extended by a model.

    Build it with `await ByteLMContext.create(llm, prompt, BeamParams(K=...))`
    (or from a ready beam with `ByteLMContext(beam)`). Copies made for
    particles share the (immutable) beam states; each copy advances its own.

    Attributes:
        beam: the `ByteBeamState` after the bytes so far.
        lm: the `AsyncLM` under the beam (shared by copies; what an
            interrupted run resets).
        generated: the bytes drawn or observed after the prompt.
        ended: whether EOS was drawn.
    """

    EOS = EOS
    UNIT, GROWING = "byte", "generated"

    def __init__(self, beam: ByteBeamState, prompt: bytes = b"") -> None:
        if not isinstance(beam, ByteBeamState):
            raise ValueError(f"ByteLMContext needs a ByteBeamState, got {type(beam).__name__}")
        self.beam = beam
        self.lm = beam.states[0].lm_state.model if beam.states else None
        self.prompt = bytes(prompt)
        self.generated = bytearray()
        self.ended = False
        self.dead = False
        self._invalidate()

    @classmethod
    async def create(
        cls, llm: Any, prompt: bytes | str = b"", params: BeamParams | None = None
    ) -> ByteLMContext:
        """A context whose beam has read `prompt` (UTF-8 encoded if text).

        Args:
            llm: an `AsyncLM`.
            prompt: the bytes the generation continues.
            params: beam parameters; default K=4 with the LM's EOS tokens as EOS.
        """
        if params is None:
            eos = [bytes(llm.byte_vocab[i]) for i in llm.eos_token_ids]
            params = BeamParams(K=4, eos_byte_strings=eos)
        prompt = prompt.encode("utf-8") if isinstance(prompt, str) else bytes(prompt)
        beam = await ByteBeamState.initial(llm, params)
        if prompt:
            beam = await beam.prefill(prompt)
        return cls(beam, prompt)

    def expect(self, text: bytes | str, lookahead: int = DEFAULT_DEPTH) -> None:
        """Tell the context the bytes it is about to observe (lookahead batching).

        A model that observes a known string byte by byte then evaluates the
        token extensions of the next bytes in the forwards it runs anyway (see
        `ByteBeamState.expect`): the same weights in about half the forwards.
        Observing another byte simply ends the lookahead.
        """
        self.beam = self.beam.expect(text, lookahead)

    # ------------------------------------------------------------ state
    def _invalidate(self) -> None:
        self._log_probs: np.ndarray | None = None  # shared by copies, never mutated
        self._mask: np.ndarray | None = None
        self._log_mass = 0.0

    async def ensure_logprobs(self) -> None:
        """Fetch the next-byte distribution of the current beam if not yet known."""
        if self._log_probs is None:
            probs = await self.beam.logp_next()
            log_probs = np.array(probs.ps, dtype=np.float64)
            log_probs[256] = -np.inf  # EOT is internal to the beam, never a next byte
            finite = np.isfinite(log_probs)
            if finite.any():
                top = log_probs[finite].max()
                log_probs -= top + np.log(np.exp(log_probs[finite] - top).sum())
            self._log_probs = log_probs

    @property
    def next_byte_logprobs(self) -> np.ndarray:
        """Log-probs of the 258 slots under the mask, renormalised (-inf outside)."""
        if self._log_probs is None:
            raise RuntimeError("the next-byte distribution is not fetched: await ensure_logprobs()")
        if self._mask is None:  # shared with this context's copies: a read-only view
            return read_only(self._log_probs)
        if self._log_mass == -math.inf:
            return np.full(_SLOTS, -np.inf)
        return np.where(self._mask, self._log_probs - self._log_mass, -np.inf)

    def _ending(self) -> str:
        return f"{len(self.generated)} bytes generated, then EOS"

    async def _push(self, b: int) -> None:
        if b == EOS:
            self.ended = True
        else:
            self.beam = await (self.beam.prune() << b)
            self.generated.append(b)
        self._invalidate()

    # ----------------------------------------------------- distributions
    def next_byte(self) -> NextByte:
        """The next byte (int 0..255, or `ByteLMContext.EOS` = 257); drawing it advances the beam.

        Drawing or observing it (or a `mask_dist`) after EOS raises RuntimeError.
        """
        return NextByte(self)

    def mask_dist(self, allowed: Any) -> ByteMask:
        """Bernoulli: True iff the next byte is in `allowed` (bytes, ints with 257 = EOS)."""
        return ByteMask(self, byte_mask(allowed))

    # ---------------------------------------------------------- display
    def text_bytes(self) -> bytes:
        """The bytes generated after the prompt (EOS is no byte)."""
        return bytes(self.generated)

    def __repr__(self) -> str:
        return f"ByteLMContext({bytes(self.generated)!r}, ended={self.ended})"


class NextByte(NextUnit):
    """The next byte of a `ByteLMContext` (257 = EOS)."""

    ctx: ByteLMContext

    async def sample(self) -> tuple[int, float]:
        ctx = self.ctx
        ctx._check_open()
        if ctx.dead:
            return EOS, -math.inf
        await ctx.ensure_logprobs()
        log_probs = ctx.next_byte_logprobs
        if not np.isfinite(log_probs).any():
            ctx.dead = True
            ctx._invalidate()
            return EOS, -math.inf
        b = sample_index(log_probs, get_rng())
        log_p = float(log_probs[b])
        await ctx._push(b)
        return b, log_p

    async def log_prob(self, x: Any) -> float:
        ctx = self.ctx
        b = _byte_value(x)
        ctx._check_open()
        if ctx.dead:
            return -math.inf
        await ctx.ensure_logprobs()
        log_p = float(ctx.next_byte_logprobs[b])
        if log_p == -math.inf:
            ctx.dead = True  # the beam cannot read a byte of probability 0
            ctx._invalidate()
            return log_p
        await ctx._push(b)
        return log_p


class ByteMask(_MaskEvent):
    """Bernoulli event "the next byte of `ctx` is in the mask"; it narrows the context's mask."""

    def _closed(self) -> bool:
        self.ctx._check_open()  # after EOS: an error, not a silent weight of zero
        return self.ctx.dead

    async def _masses(self) -> tuple[np.ndarray, np.ndarray, float, float]:
        ctx = self.ctx
        await ctx.ensure_logprobs()
        allowed = ctx._mask if ctx._mask is not None else np.isfinite(ctx._log_probs)
        yes, no = allowed & self.mask, allowed & ~self.mask
        probs = np.exp(ctx._log_probs)
        return yes, no, float(probs[yes].sum()), float(probs[no].sum())
