"""The `AsyncLM` contract every backend implements, and its shared checks."""

from __future__ import annotations

import asyncio
import math
import operator
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence, Set
from numbers import Real
from typing import Any

import numpy as np
import torch

from genlm_lab.tokenization import Token


def new_stats() -> dict[str, int]:
    """Zeroed counters: the common `stats` layout of every backend."""
    return {"queries": 0, "batches": 0, "cache_hits": 0, "tokens_computed": 0}


def check_sampling_args(max_tokens: int, temperature: float) -> None:
    """Raise a ValueError unless `max_tokens` is an int >= 0 and `temperature` a finite number > 0.

    NaN, infinity, a bool or a str would otherwise fail later, inside torch's sampler.
    """
    if isinstance(temperature, bool) or not isinstance(temperature, Real):
        raise ValueError(f"temperature must be a number > 0, got {temperature!r}")
    if not math.isfinite(temperature) or temperature <= 0:
        raise ValueError(f"temperature must be a finite number > 0, got {temperature}")
    if isinstance(max_tokens, bool) or not hasattr(max_tokens, "__index__"):
        raise ValueError(f"max_tokens must be an int >= 0, got {max_tokens!r}")
    if max_tokens < 0:
        raise ValueError(f"max_tokens must be >= 0, got {max_tokens}")


def _stop_ids(eos_token_ids: Any) -> set[int]:
    """The stop ids of `sample` as a set; one ValueError for anything but a collection of ints."""
    try:
        stop = set(eos_token_ids)
    except TypeError:
        raise ValueError(
            f"eos_token_ids must be a list of token ids, got {eos_token_ids!r} "
            f"(for one id write [{eos_token_ids!r}])"
        ) from None
    return stop


class AsyncLM(ABC):
    """An asynchronous language model over a byte-level vocabulary.

    Subclasses compute normalised next-token log-probabilities. Concurrent
    `next_token_logprobs` calls may be batched by the subclass; callers only
    need to issue their requests concurrently (`asyncio.gather`).

    Attributes:
        tokenizer: the tokenizer (HF or toy) that maps text to token ids.
        byte_vocab: one `Token` per token id (index == token id).
        str_vocab: the same tokens as text.
        bos_token_id: the id prepended to prompts, or None.
        eos_token_ids: ids that end a generation.
        stats: counters (`queries`, `batches` = model forward calls,
            `cache_hits`, `tokens_computed`) that views and benchmarks read.
    """

    #: Whether an empty context is a valid query (a model without BOS).
    allows_empty_context: bool = False
    #: Longest context the model accepts, or None for no limit.
    max_context_length: int | None = None

    def __deepcopy__(self, memo: dict) -> AsyncLM:
        """The LM itself: weights, caches and batcher are one service that copies share.

        SMC clones each particle's program with `copy.deepcopy`; a program that
        keeps its LM in an attribute must share it, not copy the weights (or fail
        on the LM's locks).
        """
        return self

    def __init__(
        self,
        tokenizer: Any,
        byte_vocab: Sequence[Token],
        str_vocab: Sequence[str] | None = None,
        bos_token_id: int | None = None,
        eos_token_ids: Sequence[int] = (),
    ) -> None:
        if len(byte_vocab) == 0:
            raise ValueError("the vocabulary is empty: an AsyncLM needs at least one token")
        self.tokenizer = tokenizer
        self.byte_vocab = list(byte_vocab)
        self.str_vocab = (
            list(str_vocab)
            if str_vocab is not None
            else [bytes(t).decode("utf-8", errors="replace") for t in self.byte_vocab]
        )
        if len(self.str_vocab) != len(self.byte_vocab):
            raise ValueError(
                f"str_vocab has {len(self.str_vocab)} tokens but byte_vocab has "
                f"{len(self.byte_vocab)}: pass one text per token id"
            )
        self.bos_token_id = bos_token_id
        self.eos_token_ids = list(eos_token_ids)
        self.stats = new_stats()

    @property
    def vocab_size(self) -> int:
        """Number of token ids (the length of every log-prob vector)."""
        return len(self.byte_vocab)

    def validate_context(self, token_ids: Sequence[int]) -> tuple[int, ...]:
        """Check a context and return it as a tuple of Python ints.

        Raises:
            ValueError: for an empty context (where the model needs one),
                non-integer ids, ids outside the vocabulary, or a context longer
                than `max_context_length`.
        """
        if isinstance(token_ids, (str, bytes)):
            raise ValueError(
                f"token_ids must be a sequence of int token ids, got {type(token_ids).__name__}"
            )
        if isinstance(token_ids, (Mapping, Set)):
            raise ValueError(
                f"token_ids must be an ordered sequence of int token ids, got "
                f"{type(token_ids).__name__}"
            )
        if isinstance(token_ids, (torch.Tensor, np.ndarray)):
            if token_ids.ndim != 1:
                raise ValueError(
                    f"token_ids must be one context, a 1-D sequence of token ids; got an "
                    f"array of shape {tuple(token_ids.shape)} (for several contexts use "
                    "batch_next_token_logprobs)"
                )
            if token_ids.dtype in (torch.bool, np.bool_):
                raise ValueError("token_ids is a bool array; token ids must be ints")
            token_ids = token_ids.tolist()
        try:
            ids = list(token_ids)
        except TypeError:
            raise ValueError(
                f"token_ids must be a sequence of int token ids, got {type(token_ids).__name__}"
            ) from None
        if not ids and not self.allows_empty_context:
            raise ValueError(
                "empty context: this model needs at least one token (e.g. its BOS token "
                f"{self.bos_token_id}) to predict the next one"
            )
        n = self.vocab_size
        if set(map(type, ids)) <= {int} and (not ids or 0 <= min(ids) <= max(ids) < n):
            out = ids  # the common case, checked at C speed (this runs on every query)
        else:
            out = self._checked_ids(ids)
        limit = self.max_context_length
        if limit is not None and len(out) > limit:
            raise ValueError(
                f"context of {len(out)} tokens is longer than the model allows ({limit})"
            )
        return tuple(out)

    def _checked_ids(self, ids: list[Any]) -> list[int]:
        """Plain ints from ids of any integer type; one ValueError at the first bad id."""
        out = []
        n = self.vocab_size
        for pos, tok in enumerate(ids):
            try:
                if isinstance(tok, (bool, np.bool_)):
                    raise TypeError
                # operator.index, not int(): a float tensor or a 1-element array
                # must not be truncated or unwrapped into an id.
                tok = operator.index(tok)
            except TypeError:
                raise ValueError(
                    f"token id {tok!r} at position {pos} is not an int (got {type(tok).__name__})"
                ) from None
            if not 0 <= tok < n:
                raise ValueError(
                    f"token id {tok} at position {pos} is outside the vocabulary ({n} tokens)"
                )
            out.append(tok)
        return out

    @abstractmethod
    async def next_token_logprobs(self, token_ids: Sequence[int]) -> torch.Tensor:
        """Normalised log-probabilities of the next token, shape (vocab_size,)."""

    @abstractmethod
    def next_token_logprobs_sync(self, token_ids: Sequence[int]) -> torch.Tensor:
        """Blocking version of `next_token_logprobs` (no batching with others)."""

    async def batch_next_token_logprobs(
        self, token_ids_list: Sequence[Sequence[int]]
    ) -> torch.Tensor:
        """Log-probabilities for several contexts at once, shape (n, vocab_size)."""
        rows = await asyncio.gather(*(self.next_token_logprobs(c) for c in token_ids_list))
        return self._stack(list(rows))

    def batch_next_token_logprobs_sync(
        self, token_ids_list: Sequence[Sequence[int]]
    ) -> torch.Tensor:
        """Blocking version of `batch_next_token_logprobs`."""
        return self._stack([self.next_token_logprobs_sync(c) for c in token_ids_list])

    def _stack(self, rows: list[torch.Tensor]) -> torch.Tensor:
        """Rows stacked to (n, vocab_size); no contexts give an empty (0, vocab_size)."""
        if not rows:
            return torch.empty((0, self.vocab_size), device=getattr(self, "device", None))
        return torch.stack(rows)

    async def sample(
        self,
        prompt_token_ids: Sequence[int],
        max_tokens: int,
        eos_token_ids: Sequence[int] | None = None,
        temperature: float = 1.0,
        seed: int | None = None,
    ) -> list[int]:
        """Sample a continuation of the prompt, token by token.

        Args:
            prompt_token_ids: the context to continue.
            max_tokens: the most tokens to generate.
            eos_token_ids: ids that stop generation (included in the output);
                defaults to the model's `eos_token_ids`.
            temperature: divides the log-probs before sampling (> 0).
            seed: seeds a private generator, for reproducible samples.

        Returns:
            The generated token ids (without the prompt). Generation also stops
            when the context reaches `max_context_length`.
        """
        check_sampling_args(max_tokens, temperature)
        stop = _stop_ids(self.eos_token_ids if eos_token_ids is None else eos_token_ids)
        generator = torch.Generator()
        if seed is not None:
            generator.manual_seed(seed)
        else:
            generator.seed()
        context = list(self.validate_context(prompt_token_ids))
        limit = self.max_context_length
        if limit is not None:  # a longer context could not be scored: stop, keep the tokens
            max_tokens = min(max_tokens, limit + 1 - len(context))
        generated: list[int] = []
        for _ in range(max_tokens):
            logprobs = (await self.next_token_logprobs(context)).double().cpu()
            # Shifted so that the likeliest token stays at 0 however small the temperature.
            probs = torch.softmax((logprobs - logprobs.max()) / temperature, dim=-1)
            token = int(torch.multinomial(probs, 1, generator=generator).item())
            generated.append(token)
            context.append(token)
            if token in stop:
                break
        return generated

    async def batch_sample(
        self,
        prompt_token_ids_list: Sequence[Sequence[int]],
        max_tokens: int,
        eos_token_ids: Sequence[int] | None = None,
        temperature: float = 1.0,
        seed: int | None = None,
    ) -> list[list[int]]:
        """`sample` a continuation of each prompt, all at once.

        The prompts advance concurrently, so each step's log-probs are computed
        in one batched forward pass. Arguments as in `sample`; a `seed` seeds
        every prompt's generator alike (as genlm-backend does).

        Returns:
            One list of generated token ids per prompt, in order.
        """
        check_sampling_args(max_tokens, temperature)
        return list(
            await asyncio.gather(
                *(
                    self.sample(p, max_tokens, eos_token_ids, temperature, seed)
                    for p in prompt_token_ids_list
                )
            )
        )

    def clear_cache(self) -> None:
        """Forget cached log-probs (and KV states); results stay the same."""

    def reset_async_queries(self) -> None:
        """Drop queued, not yet computed requests (after an interrupted run)."""

    def reset_stats(self) -> None:
        """Zero the `stats` counters."""
        for key in self.stats:
            self.stats[key] = 0
