"""Distributions that models `sample`, `observe` and `intervene`.

Every distribution has `async sample() -> (value, log_prob)` and
`async log_prob(value) -> float`. Randomness comes from the generator of the
current inference run (`genlm_lab.smc.rng.get_rng`), so seeded runs repeat.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from genlm_lab.smc.rng import get_rng

__all__ = [
    "Bernoulli",
    "Distribution",
    "Geometric",
    "LogCategorical",
    "TokenCategorical",
    "Transformer",
]


class Distribution:
    """Interface of a distribution usable in a `Model`."""

    async def sample(self) -> tuple[Any, float]:
        """Draw a value; return it with its log-probability."""
        raise NotImplementedError

    async def log_prob(self, x: Any) -> float:
        """Log-probability of `x` (may have side effects, e.g. advance an LM context)."""
        raise NotImplementedError

    async def argmax(self, idx: int) -> tuple[Any, float]:
        """The `idx`-th most probable value and its log-probability."""
        raise NotImplementedError(f"{type(self).__name__} does not rank its values")


class _MaskEvent(Distribution):
    """Bernoulli event "the next item of `ctx` lies in `mask`"; it narrows the context's mask.

    Sampling or observing the event sets `ctx._mask` to the allowed items on
    the chosen side and `ctx._log_mass` to their log-mass. Subclasses give
    `_masses()` and, if the context can be dead (weight zero, nothing to draw), `_closed()`.
    """

    def __init__(self, ctx: Any, mask: np.ndarray) -> None:
        self.ctx = ctx
        self.mask = mask

    def _closed(self) -> bool:
        return False

    async def _masses(self) -> tuple[np.ndarray, np.ndarray, float, float]:
        """(allowed & mask, allowed & ~mask, mass of the first, mass of the second)."""
        raise NotImplementedError

    def _narrow(self, keep: np.ndarray, mass: float) -> None:
        self.ctx._mask = keep
        self.ctx._log_mass = math.log(mass) if mass > 0 else -math.inf

    async def sample(self) -> tuple[bool, float]:
        if self._closed():
            return True, -math.inf
        yes, no, m_yes, m_no = await self._masses()
        total = m_yes + m_no
        if total <= 0:
            self._narrow(yes, m_yes)
            return True, -math.inf
        value = bool(get_rng().random() * total < m_yes)
        mass = m_yes if value else m_no
        self._narrow(yes if value else no, mass)
        return value, math.log(mass / total) if mass > 0 else -math.inf

    async def log_prob(self, v: Any) -> float:
        if self._closed():
            return -math.inf
        yes, no, m_yes, m_no = await self._masses()
        total = m_yes + m_no
        mass = m_yes if v else m_no
        self._narrow(yes if v else no, mass)
        return math.log(mass / total) if mass > 0 and total > 0 else -math.inf


def sample_index(logprobs: np.ndarray, rng: np.random.Generator | None = None) -> int:
    """Draw an index with probability proportional to `exp(logprobs)`.

    Raises:
        ValueError: if every entry is -inf (nothing can be drawn) or one is NaN.
    """
    rng = get_rng() if rng is None else rng
    logprobs = np.asarray(logprobs, dtype=np.float64)
    top = logprobs.max() if logprobs.size else -math.inf
    if not np.isfinite(top) or np.isnan(logprobs).any():
        raise ValueError(
            f"cannot sample from {logprobs.size} log-probabilities that are all -inf or hold NaN"
        )
    cdf = np.cumsum(np.exp(logprobs - top))
    index = int(np.searchsorted(cdf, rng.random() * cdf[-1], side="right"))
    return min(index, logprobs.size - 1)


_BLOCK = 256


def sample_weighted(weights: np.ndarray, rng: np.random.Generator | None = None) -> int:
    """Draw an index with probability proportional to non-negative `weights` (not all zero).

    Two-level inversion: block sums, then a cumulative sum inside one block.
    Over a 49k vocabulary this costs tens of microseconds, where a full
    cumulative sum costs hundreds.
    """
    rng = get_rng() if rng is None else rng
    n = weights.size
    starts = np.arange(0, n, _BLOCK)
    block_cdf = np.cumsum(np.add.reduceat(weights, starts, dtype=np.float64))
    total = block_cdf[-1]
    if not total > 0 or not np.isfinite(total):
        raise ValueError(f"cannot sample from weights summing to {total}")
    u = rng.random() * total
    b = min(int(np.searchsorted(block_cdf, u, side="right")), starts.size - 1)
    inside = weights[starts[b] : starts[b] + _BLOCK]
    cdf = np.cumsum(inside, dtype=np.float64)
    i = int(np.searchsorted(cdf, u - (block_cdf[b - 1] if b > 0 else 0.0), side="right"))
    if i >= inside.size or inside[i] <= 0:  # rounding at the block's end
        i = int(np.flatnonzero(inside > 0)[-1])
    return int(starts[b]) + i


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """Normalise logits into log-probabilities (float64).

    Raises:
        ValueError: for no logits, a NaN or +inf logit, or all -inf.
    """
    logits = np.asarray(logits, dtype=np.float64)
    if logits.size == 0:
        raise ValueError("no logits given: a categorical needs at least one value")
    bad = np.flatnonzero(np.isnan(logits) | (logits == math.inf))
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"logit {i} is {logits.flat[i]}: logits must be finite or -inf")
    top = logits.max()
    if not np.isfinite(top):
        raise ValueError("logits hold no finite value: nothing has positive probability")
    shifted = logits - top
    return shifted - np.log(np.exp(shifted).sum())


def _ranked(logprobs: np.ndarray, idx: int) -> int:
    if not 0 <= idx < logprobs.size:
        raise ValueError(f"rank {idx} is outside 0..{logprobs.size - 1}")
    return int(np.argsort(-logprobs, kind="stable")[idx])


class Bernoulli(Distribution):
    """True with probability `p`, False otherwise."""

    def __init__(self, p: float) -> None:
        p = float(p)
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"Bernoulli probability must be in [0, 1], got {p}")
        self.p = p

    async def sample(self) -> tuple[bool, float]:
        value = bool(get_rng().random() < self.p)
        return value, await self.log_prob(value)

    async def log_prob(self, x: Any) -> float:
        """log P(x) for x in {True, False} (1 and 0 too); -inf for any other value.

        Truthiness would read "no", 0.5 or a list as True and None as False.
        """
        if not isinstance(x, (bool, np.bool_, int, np.integer, float)) or x not in (0, 1):
            return -math.inf
        q = self.p if x else 1.0 - self.p
        return math.log(q) if q > 0 else -math.inf

    async def argmax(self, idx: int) -> tuple[bool, float]:
        order = [True, False] if self.p >= 0.5 else [False, True]
        value = order[idx]
        return value, await self.log_prob(value)


class Geometric(Distribution):
    """Number of failures before the first success, success probability `p`: P(k) = p (1-p)^k."""

    def __init__(self, p: float) -> None:
        p = float(p)
        if not 0.0 < p <= 1.0:
            raise ValueError(f"Geometric success probability must be in (0, 1], got {p}")
        self.p = p

    async def sample(self) -> tuple[int, float]:
        value = int(get_rng().geometric(self.p)) - 1
        return value, await self.log_prob(value)

    async def log_prob(self, x: Any) -> float:
        if isinstance(x, bool) or not isinstance(x, (int, np.integer)) or x < 0:
            return -math.inf
        if self.p == 1.0:
            return 0.0 if x == 0 else -math.inf
        return math.log(self.p) + int(x) * math.log1p(-self.p)

    async def argmax(self, idx: int) -> tuple[int, float]:
        return idx, await self.log_prob(idx)


class LogCategorical(Distribution):
    """A categorical over indices 0..n-1 given unnormalised log-weights."""

    def __init__(self, logits: Sequence[float] | np.ndarray) -> None:
        self.log_probs = log_softmax(np.asarray(logits, dtype=np.float64).ravel())

    async def sample(self) -> tuple[int, float]:
        index = sample_index(self.log_probs)
        return index, float(self.log_probs[index])

    async def log_prob(self, x: Any) -> float:
        """log P(x) for an index x (2 or 2.0); -inf outside 0..n-1 and for 1.7, "1", True, None.

        int(x) would read 1.7 and "1" as the index 1.
        """
        if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer, float)):
            return -math.inf
        if not 0 <= x < self.log_probs.size or x != int(x):
            return -math.inf
        return float(self.log_probs[int(x)])

    async def argmax(self, idx: int) -> tuple[int, float]:
        index = _ranked(self.log_probs, idx)
        return index, float(self.log_probs[index])


def _token_id(lm: Any, x: Any) -> int:
    token_id = getattr(x, "token_id", x)
    if isinstance(token_id, bool) or not isinstance(token_id, (int, np.integer)):
        raise ValueError(f"expected a token id or Token, got {x!r}")
    token_id = int(token_id)
    if not 0 <= token_id < lm.vocab_size:
        raise ValueError(f"token id {token_id} is outside the vocabulary ({lm.vocab_size} tokens)")
    return token_id


class TokenCategorical(Distribution):
    """A distribution over the tokens of `lm` given one logit per token id.

    Values are `Token`s (`lm.byte_vocab[i]`); `log_prob` takes a Token or an id.
    """

    def __init__(self, lm: Any, logits: Sequence[float] | np.ndarray) -> None:
        logits = np.asarray(logits, dtype=np.float64).ravel()
        if logits.size != lm.vocab_size:
            raise ValueError(f"got {logits.size} logits for a vocabulary of {lm.vocab_size} tokens")
        self.lm = lm
        self.log_probs = log_softmax(logits)

    async def sample(self) -> tuple[Any, float]:
        index = sample_index(self.log_probs)
        return self.lm.byte_vocab[index], float(self.log_probs[index])

    async def log_prob(self, x: Any) -> float:
        return float(self.log_probs[_token_id(self.lm, x)])

    async def argmax(self, idx: int) -> tuple[Any, float]:
        index = _ranked(self.log_probs, idx)
        return self.lm.byte_vocab[index], float(self.log_probs[index])


def as_numpy(logprobs: Any) -> np.ndarray:
    """Log-probs from a backend as numpy: a torch tensor (genlm_lab, genlm-backend) or an array."""
    if hasattr(logprobs, "detach"):
        t = logprobs.detach().cpu()
        return (t.float() if str(t.dtype) in ("torch.bfloat16", "torch.float16") else t).numpy()
    return np.asarray(logprobs)


def encode_prompt(lm: Any, prompt: str | Sequence[int]) -> list[int]:
    """Token ids of a prompt (text via `lm.tokenizer.encode`), with BOS where the LM needs one."""
    if isinstance(prompt, str):
        ids = list(lm.tokenizer.encode(prompt))
    else:
        ids = [int(getattr(t, "token_id", t)) for t in prompt]
    if not ids and not getattr(lm, "allows_empty_context", True):
        if lm.bos_token_id is None:
            raise ValueError("the prompt is empty and this LM needs at least one token of context")
        ids = [lm.bos_token_id]
    return list(lm.validate_context(ids))


class Transformer(Distribution):
    """The next token of `lm` after a fixed context, at temperature `temp` (no state).

    Args:
        lm: an `AsyncLM`.
        prompt: the context, as text (tokenised with `lm.tokenizer`), token ids
            or `Token`s; an empty prompt gets BOS where the LM needs one, as in
            `LMContext`.
        temp: divides the log-probs before renormalising (> 0).
    """

    def __init__(self, lm: Any, prompt: str | Sequence[int], temp: float = 1.0) -> None:
        if not temp > 0 or not math.isfinite(temp):
            raise ValueError(f"temperature must be a finite number > 0, got {temp}")
        self.lm = lm
        self.prompt = encode_prompt(lm, prompt)
        self.temp = float(temp)

    async def _log_probs(self) -> np.ndarray:
        raw = np.asarray(as_numpy(await self.lm.next_token_logprobs(self.prompt)), np.float64)
        return log_softmax(raw / self.temp)

    async def sample(self) -> tuple[Any, float]:
        log_probs = await self._log_probs()
        index = sample_index(log_probs)
        return self.lm.byte_vocab[index], float(log_probs[index])

    async def log_prob(self, x: Any) -> float:
        return float((await self._log_probs())[_token_id(self.lm, x)])

    async def argmax(self, idx: int) -> tuple[Any, float]:
        log_probs = await self._log_probs()
        index = _ranked(log_probs, idx)
        return self.lm.byte_vocab[index], float(log_probs[index])
