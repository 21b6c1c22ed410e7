"""Small exact potentials over ToyLM vocabularies, and brute-force enumeration, for the control tests."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import regex

from genlm_lab.backend.toy import ToyLM
from genlm_lab.control import EOS, EndOfSequence, Potential, PromptedLLM

VOCAB = [b"a", b"b", b"ab", b"c", b"\xc3", b"<eos>"]


def toy_llm(seed: int = 3, vocab: Sequence[bytes] = VOCAB, **kw: Any) -> PromptedLLM:
    """A PromptedLLM over a seeded ToyLM whose last token is EOS."""
    return PromptedLLM(ToyLM(list(vocab), seed=seed, eos=vocab[-1], **kw))


def text_of(context: Sequence[Any]) -> bytes:
    return b"".join(bytes(t) for t in context if not isinstance(t, EndOfSequence))


class RegexConstraint(Potential):
    """Boolean: a prefix is alive iff its bytes can still be extended to a full match.

    The obviously correct reference (the `regex` module's partial matching),
    written with prefix / complete only: `logw_next` is the base class's
    token-by-token default.
    """

    is_boolean = True

    def __init__(self, vocabulary: Sequence[Any], pattern: bytes) -> None:
        super().__init__(vocabulary)
        self.pattern = regex.compile(pattern)
        self.calls = 0

    async def prefix(self, context: Sequence[Any]) -> float:
        self.calls += 1
        ok = self.pattern.fullmatch(text_of(context), partial=True) is not None
        return 0.0 if ok else -math.inf

    async def complete(self, context: Sequence[Any]) -> float:
        self.calls += 1
        return 0.0 if self.pattern.fullmatch(text_of(context)) is not None else -math.inf


class ByteRegex(Potential):
    """The same check over bytes (tokens 0..255), for coerce and the set samplers."""

    is_boolean = True

    def __init__(self, pattern: bytes) -> None:
        super().__init__(list(range(256)))
        self.pattern = regex.compile(pattern)
        self._rows: dict[bytes, np.ndarray] = {}

    def _alive(self, text: bytes) -> bool:
        return self.pattern.fullmatch(text, partial=True) is not None

    async def prefix(self, context: Sequence[Any]) -> float:
        return 0.0 if self._alive(bytes(context)) else -math.inf

    async def complete(self, context: Sequence[Any]) -> float:
        return 0.0 if self.pattern.fullmatch(bytes(context)) is not None else -math.inf

    async def logw_next(self, context: Sequence[Any]):
        text = bytes(context)
        if text not in self._rows:  # cached: the set samplers ask the same prefixes often
            row = [0.0 if self._alive(text + bytes([b])) else -math.inf for b in range(256)]
            row.append(0.0 if self.pattern.fullmatch(text) is not None else -math.inf)
            self._rows[text] = np.array(row)
        return self.make_lazy_weights(self._rows[text].copy())


class LengthCritic(Potential):
    """A non-boolean critic: log-weight -scale * (number of bytes), finite everywhere."""

    def __init__(self, vocabulary: Sequence[Any], scale: float = 0.3) -> None:
        super().__init__(vocabulary)
        self.scale = scale

    async def prefix(self, context: Sequence[Any]) -> float:
        return -self.scale * len(text_of(context))

    async def complete(self, context: Sequence[Any]) -> float:
        return -self.scale * len(text_of(context)) - 0.5


class TablePotential(Potential):
    """Next-token log-weights given by a function of the context (prefix = their running sum)."""

    def __init__(self, vocabulary: Sequence[Any], fn: Callable[[tuple], np.ndarray]) -> None:
        super().__init__(vocabulary)
        self.fn = fn

    async def logw_next(self, context: Sequence[Any]):
        return self.make_lazy_weights(np.asarray(self.fn(tuple(context)), dtype=float))

    async def prefix(self, context: Sequence[Any]) -> float:
        total = 0.0
        for i, token in enumerate(context):
            total += float(self.fn(tuple(context[:i]))[self.lookup[token]])
        return total

    async def complete(self, context: Sequence[Any]) -> float:
        return await self.prefix(context) + float(self.fn(tuple(context))[-1])


async def exact_completions(
    target: Potential, max_tokens: int, forced_eos: bool = True
) -> dict[tuple, float]:
    """Every sequence SMC can return with max_tokens (EOS included), with its exact weight.

    Sequences of at most max_tokens - 1 tokens get `complete`. With
    `forced_eos=False` (the deliberately wrong target, without genlm-control
    #145's correction) those of exactly max_tokens - 1 tokens get `prefix`.
    """
    out: dict[tuple, float] = {}

    async def visit(context: list[Any]) -> None:
        if len(context) == max_tokens - 1 and not forced_eos:
            w = await target.prefix(context)
        else:
            w = await target.complete(context)
        if w > -math.inf:
            out[(*context, EOS)] = math.exp(w)
        if len(context) == max_tokens - 1:
            return
        for token in target.vocab:
            longer = [*context, token]
            if await target.prefix(longer) > -math.inf:
                await visit(longer)

    await visit([])
    return out


def within(samples: np.ndarray, exact: float, k: float = 3.0) -> bool:
    """Whether the mean of `samples` is within k standard errors of `exact`."""
    samples = np.asarray(samples, dtype=float)
    se = samples.std(ddof=1) / math.sqrt(len(samples))
    return abs(samples.mean() - exact) <= k * se + 1e-12 * abs(exact)  # se 0: equal


def assert_step_properly_weighted(
    draws: Sequence[tuple[Any, float]], exact: dict[Any, float], label: Any = None
) -> None:
    """Each token's E[w 1{t = y}], estimated from `(token, log-weight)` draws, is within
    4 standard errors of `exact[y]` (weight-zero draws add nothing; none may fall outside).
    """
    n = len(draws)
    seen: dict = {}
    squares: dict = {}
    for token, logw in draws:
        if logw == -math.inf:
            continue
        w = math.exp(logw)
        seen[token] = seen.get(token, 0.0) + w / n
        squares[token] = squares.get(token, 0.0) + w * w / n
    assert exact and set(seen) <= set(exact), (label, set(seen) - set(exact))
    for token, value in exact.items():
        se = math.sqrt(max(squares.get(token, 0.0) - seen.get(token, 0.0) ** 2, 0) / n)
        assert abs(seen.get(token, 0.0) - value) <= 4 * se + 1e-9, (label, token)


def normalise(weights: dict) -> dict:
    total = sum(weights.values())
    return {k: v / total for k, v in weights.items()}


def tv_distance(p: dict, q: dict) -> float:
    """Total variation distance between two distributions given as dicts."""
    return 0.5 * sum(abs(p.get(k, 0.0) - q.get(k, 0.0)) for k in set(p) | set(q))


def pooled_runs(
    make: Callable[[], tuple[Any, Any]], runs: int, max_tokens: int, counted: str
) -> tuple[np.ndarray, dict, int]:
    """`runs` SMC runs (10 particles, seeds 0..runs-1) of `make() -> (sampler, budget)`:
    each run's Z, the posterior pooled by Z, and the budget's `guide_stats[counted]` summed."""
    import asyncio

    from genlm_lab.control import SMC

    z, pooled, twisted = [], {}, 0
    for seed in range(runs):
        sampler, budget = make()
        sequences = asyncio.run(SMC(sampler)(10, 0.5, max_tokens, seed=seed, budget=False))
        z.append(math.exp(sequences.log_ml))
        for key, p in dict(sequences.posterior).items():  # runs pooled by their Z
            pooled[key] = pooled.get(key, 0.0) + z[-1] * p
        twisted += budget.guide_stats[counted]
    return np.array(z), pooled, twisted


async def live_contexts(potential, max_tokens: int) -> dict[tuple, bool]:
    """Every live context of fewer than `max_tokens` tokens: can it end within the tokens left?"""
    memo: dict[tuple, float] = {}

    async def best(context: tuple, r: int) -> float:
        """Fewest tokens (EOS included), at most r, that end `context` (math.inf if none)."""
        key = (context, r)
        if key in memo:
            return memo[key]
        out = math.inf
        if r >= 1 and await potential.complete(list(context)) == 0:
            out = 1
        elif r >= 2:
            for token in potential.vocab:
                child = (*context, token)
                if await potential.prefix(list(child)) == 0:
                    out = min(out, 1 + await best(child, r - 1))
        memo[key] = out
        return out

    live: dict[tuple, bool] = {}

    async def visit(context: tuple) -> None:
        live[context] = await best(context, max_tokens - len(context)) < math.inf
        if len(context) + 1 < max_tokens:
            for token in potential.vocab:
                child = (*context, token)
                if await potential.prefix(list(child)) == 0:
                    await visit(child)

    await visit(())
    return live
