"""`_BatchedLM`: what the model-backed backends share (HF and vLLM).

Vocabulary from the tokenizer, a log-prob cache keyed by LoRA adapter, an
`AutoBatcher` in front of the model, the cache-first query paths and the
adapter switch. A subclass supplies `_forward(contexts)` (one model call for
distinct contexts, at most `batch_size` of them) and `_activate(name)`.
"""

from __future__ import annotations

import asyncio
from abc import abstractmethod
from collections.abc import Sequence
from typing import Any

import torch

from genlm_lab.backend._batcher import AutoBatcher
from genlm_lab.backend._cache import CachedPrefix, KVHandle, TokenTrieCache
from genlm_lab.backend.base import AsyncLM


class _BatchedLM(AsyncLM):
    """An `AsyncLM` over a real model: auto-batched, cached per adapter, LoRA-switchable.

    Args:
        tokenizer: the model's tokenizer; gives BOS / EOS and, without
            `byte_vocab`, the vocabulary (decoded with `decode_vocab`).
        cache: the token-trie cache of this backend.
        batch_size: most distinct contexts in one model call.
        timeout: seconds after the first queued query when a batch goes anyway.
        byte_vocab: the vocabulary as `Token`s, when already decoded.
        str_vocab: the vocabulary as text, with `byte_vocab`.
        extra_stats: counters added to `stats`, besides the common ones.

    Attributes:
        device: where the log-prob tensors live (set by the subclass).
    """

    device: torch.device

    def __init__(
        self,
        tokenizer: Any,
        cache: TokenTrieCache,
        batch_size: int,
        timeout: float,
        byte_vocab: Sequence[Any] | None,
        str_vocab: Sequence[str] | None,
        extra_stats: Sequence[str],
    ) -> None:
        if byte_vocab is None:
            from genlm_lab.tokenization import decode_vocab

            byte_vocab, str_vocab = decode_vocab(tokenizer)
        eos = getattr(tokenizer, "eos_token_id", None)
        super().__init__(
            tokenizer,
            byte_vocab,
            str_vocab,
            bos_token_id=getattr(tokenizer, "bos_token_id", None),
            eos_token_ids=[eos] if eos is not None else [],
        )
        self._cache = cache
        self._adapter: str | None = None
        self._loras: dict[str, str] = {}
        self._batcher = AutoBatcher(self._run_batch, batch_size, timeout, self._on_batch)
        # Every batcher of this backend (a subclass may add one, e.g. for samples):
        # the settings and `reset_async_queries` apply to all of them.
        self._batchers = [self._batcher]
        for key in ("deduplicated", "rows", "max_batch_size", *extra_stats):
            self.stats[key] = 0

    # -- settings ----------------------------------------------------------------

    @property
    def batch_size(self) -> int:
        """Most distinct contexts in one model call."""
        return self._batcher.batch_size

    @batch_size.setter
    def batch_size(self, value: int) -> None:
        for batcher in self._batchers:  # checked by the first: an int >= 1
            batcher.batch_size = value

    @property
    def timeout(self) -> float:
        """Seconds after the first queued query when a batch goes anyway."""
        return self._batcher.timeout

    @timeout.setter
    def timeout(self, value: float) -> None:
        for batcher in self._batchers:  # checked by the first: a number >= 0
            batcher.timeout = value

    # -- queries -----------------------------------------------------------------

    async def next_token_logprobs(self, token_ids: Sequence[int]) -> torch.Tensor:
        """Normalised next-token log-probs, shape (vocab_size,), auto-batched with others.

        The returned tensor is shared with the cache: do not modify it in place.

        Raises:
            ValueError: for an empty, out-of-vocabulary, non-int or too long context.
        """
        ids = self.validate_context(token_ids)
        self.stats["queries"] += 1
        hit = self._cache.get_logprobs(self._adapter, ids)
        if hit is not None:
            self.stats["cache_hits"] += 1
            return hit
        return await self._batcher.submit((self._adapter, ids), ids)

    def next_token_logprobs_sync(self, token_ids: Sequence[int]) -> torch.Tensor:
        """Blocking `next_token_logprobs` (cached, not batched with other callers)."""
        ids = self.validate_context(token_ids)
        self.stats["queries"] += 1
        return self._compute([ids], count_hits=True)[0]

    def batch_next_token_logprobs_sync(
        self, token_ids_list: Sequence[Sequence[int]]
    ) -> torch.Tensor:
        """Blocking log-probs for several contexts in batched model calls, shape (n, vocab_size)."""
        contexts = [self.validate_context(c) for c in token_ids_list]
        self.stats["queries"] += len(contexts)
        if not contexts:
            return torch.empty((0, self.vocab_size), device=self.device)
        return torch.stack(self._compute(contexts, count_hits=True))

    # -- cache and queue control -------------------------------------------------

    @property
    def cache(self) -> TokenTrieCache:
        """The token-trie cache (read it for sizes; clear it with `clear_cache`)."""
        return self._cache

    def clear_cache(self) -> None:
        """Forget everything this backend cached, under every adapter."""
        self._cache.clear()

    def reset_async_queries(self) -> None:
        """Drop queued queries (their callers get `CancelledError`), e.g. after an interrupt."""
        for batcher in self._batchers:
            batcher.reset()

    def walk_cache(
        self, token_ids: Sequence[int]
    ) -> tuple[CachedPrefix, int, KVHandle | None, int]:
        """Look up what the cache holds for a context, as genlm-backend's `walk_cache`.

        Returns:
            (node, matched, past, base): `node` is the longest prefix of
            `token_ids` on a cached path (a `CachedPrefix`: its log-probs and
            keys and values, where stored), `matched` its length; `past` the
            cached keys and values of the first `base` tokens (at most all
            but the last, so that the last token's logits are computed), or
            None with `base` 0. A query for `token_ids` runs the model on
            `token_ids[base:]` only.
        """
        ids = self.validate_context(token_ids)
        node = self._cache.walk(self._adapter, ids)
        past = self._cache.longest_kv(self._adapter, ids, len(ids) - 1)
        if past.length == 0:
            return node, node.length, None, 0
        return node, node.length, past, past.length

    # -- the queue ---------------------------------------------------------------

    def add_query(self, query: Sequence[int], future: asyncio.Future, past: Any = None) -> None:
        """Queue a context for the next batch; its next-token log-probs go to `future`.

        What `next_token_logprobs` does without the await, for code that holds
        its own future (call it in the event loop the future belongs to). A
        cached context resolves `future` at once. Unlike genlm-backend, whose
        future receives the raw logits of the query's positions, the future
        receives the normalised log-probs, shape (vocab_size,).

        Args:
            query: the whole context's token ids.
            future: where the result goes.
            past: must be None: genlm_lab finds the cached keys and values itself.

        Raises:
            ValueError: for a bad context, a `past`, or a future of another loop.
            RuntimeError: if no event loop runs in this thread.
        """
        if past is not None:
            raise ValueError(
                "add_query takes the whole context and past=None: genlm_lab looks up "
                "cached keys and values itself"
            )
        ids = self.validate_context(query)
        if future.get_loop() is not asyncio.get_running_loop():
            raise ValueError("the future belongs to another event loop than the running one")
        self.stats["queries"] += 1
        hit = self._cache.get_logprobs(self._adapter, ids)
        if hit is not None:
            self.stats["cache_hits"] += 1
            if not future.done():  # a caller may have cancelled it already
                future.set_result(hit)
            return
        self._batcher.enqueue((self._adapter, ids), ids, future)

    def batch_evaluate_queries(self) -> None:
        """Run every queued query now, without waiting for the batch to fill or time out."""
        for batcher in self._batchers:
            batcher.flush()

    @property
    def queries(self) -> list[tuple[int, ...]]:
        """The distinct contexts queued for the next batch (a snapshot).

        Assigning an empty list drops them, as `reset_async_queries` does
        (genlm-backend code writes `llm.queries = []`).
        """
        return list(self._batcher.queued())

    @queries.setter
    def queries(self, value: Sequence[Any]) -> None:
        if len(value) != 0:
            raise ValueError("only an empty list can be assigned to queries; use add_query")
        self.reset_async_queries()

    # -- LoRA ----------------------------------------------------------------------

    @abstractmethod
    def add_new_lora(self, lora_path: str, lora_name: str = "lora_1") -> None:
        """Make an adapter known under a name, without activating it."""

    def _check_lora_name(self, lora_name: str) -> None:
        """One ValueError for a name no adapter can have (None keys the base model's cache)."""
        if not isinstance(lora_name, str) or not lora_name or lora_name in self._reserved_names:
            raise ValueError(
                f"lora_name must be a non-empty str other than {sorted(self._reserved_names)}, "
                f"got {lora_name!r}"
            )

    #: Adapter names used internally by the backend.
    _reserved_names: frozenset[str] = frozenset()

    @abstractmethod
    def _activate(self, name: str | None) -> None:
        """Point the model at adapter `name` (None: the base model) and record it."""

    def set_lora(self, lora_path: str | None = None, lora_name: str = "lora_1") -> None:
        """Activate a loaded adapter (loading it from `lora_path` first if new).

        Queries queued before the switch are computed first, under the old adapter.

        Raises:
            ValueError: if no adapter of that name was loaded and no path is given.
        """
        if lora_name not in self._loras:
            if lora_path is None:
                raise ValueError(
                    f"no LoRA adapter named {lora_name!r} is loaded (loaded: "
                    f"{sorted(self._loras)}); call add_new_lora(path, {lora_name!r}) first"
                )
            self.add_new_lora(lora_path, lora_name)
        self._batcher.flush()
        self._activate(lora_name)

    def clear_lora(self) -> None:
        """Go back to the base model (adapters stay known; caches stay keyed by adapter)."""
        self._batcher.flush()
        self._activate(None)

    @property
    def active_lora(self) -> str | None:
        """Name of the active adapter, or None for the base model."""
        return self._adapter

    # -- batch computation --------------------------------------------------------

    def _on_batch(self, distinct: int, callers: int) -> None:
        self.stats["deduplicated"] += callers - distinct

    def _run_batch(self, contexts: list[tuple[int, ...]]) -> list[torch.Tensor]:
        return self._compute(contexts, count_hits=False)

    def _compute(self, contexts: list[tuple[int, ...]], count_hits: bool) -> list[torch.Tensor]:
        """Log-probs for distinct or repeated contexts: cache first, then batched model calls."""
        results: list[torch.Tensor | None] = [None] * len(contexts)
        todo: dict[tuple[int, ...], list[int]] = {}
        for i, ids in enumerate(contexts):
            hit = self._cache.get_logprobs(self._adapter, ids)
            if hit is not None:
                results[i] = hit
                self.stats["cache_hits"] += count_hits
            else:
                todo.setdefault(ids, []).append(i)
        unique = list(todo)
        for start in range(0, len(unique), self.batch_size):
            chunk = unique[start : start + self.batch_size]
            for ids, lp in zip(chunk, self._forward(chunk), strict=True):
                for i in todo[ids]:
                    results[i] = lp
        return results  # type: ignore[return-value]

    @abstractmethod
    def _forward(self, rows: list[tuple[int, ...]]) -> list[torch.Tensor]:
        """One model call for distinct contexts; stores their log-probs in the cache."""

    def _count_forward(self, rows: int, tokens: int) -> None:
        """Update the per-call counters after one model call."""
        self.stats["batches"] += 1
        self.stats["rows"] += rows
        self.stats["max_batch_size"] = max(self.stats["max_batch_size"], rows)
        self.stats["tokens_computed"] += tokens
