"""`AsyncTransformer`: an auto-batched, KV-cached `AsyncLM` over a Hugging Face causal LM."""

from __future__ import annotations

import inspect
import threading
import warnings
from collections.abc import Sequence
from typing import Any

import torch

from genlm_lab.backend._batched import _BatchedLM
from genlm_lab.backend._cache import KVHandle, TokenTrieCache
from genlm_lab.backend._kv import KVWorkspace, new_segments, padded_cache

#: Name under which a replacing adapter is test-loaded before the old one goes.
_STAGING_ADAPTER = "__genlm_lab_staging__"


class AsyncTransformer(_BatchedLM):
    """Next-token log-probs from an HF causal LM, auto-batched and cached.

    Concurrent `await next_token_logprobs(ids)` calls go into one forward (see
    `AutoBatcher`: the batch goes as soon as every concurrent caller has
    queued, at `batch_size` callers, or `timeout` seconds after the first).
    Identical contexts are computed once. A token trie caches, per LoRA
    adapter, the log-probs of every context computed and the keys and values
    of its tokens, so a context that extends a cached one runs the model only
    on its new tokens; rows with different cached prefixes share one forward
    (prefix left-padded, new tokens right-padded, with attention mask and
    position ids). A context that is a prefix of another in the same forward
    (a beam asking for c+t1 and, looking ahead, c+t1+t2) takes its
    log-probs from the longer row's earlier position instead of a row of its
    own (counted in `stats["prefix_shared"]`).

    Memory knobs: `max_cache_tokens` bounds the token positions whose keys and
    values are kept (each costs layers x 2 x kv_heads x head_dim floats, about
    46 KB for SmolLM2-135M in float32, so the default 16384 is ~0.75 GB) and
    `max_cache_logprobs` the log-prob vectors kept (vocab_size floats each,
    196 KB for SmolLM2, so the default 1024 is ~0.2 GB). The least recently
    used entries are evicted first; eviction never changes results, only what
    has to be recomputed. Batches whose rows extend different cached prefixes
    copy them into one reusable workspace (kept up to 256 MB, see
    `KVWorkspace`), which spares the page faults of fresh memory per forward.

    `stats` counts, besides `queries`, `batches` (forward calls),
    `cache_hits` and `tokens_computed` (tokens run through the model):
    `deduplicated` (callers served by an identical queued query), `rows`
    (contexts run, summed over forwards), `max_batch_size`,
    `kv_tokens_reused` (prefix tokens taken from the KV cache) and `evictions`.

    Args:
        hf_model: an HF causal LM (`AutoModelForCausalLM`), in eval mode.
        hf_tokenizer: its tokenizer; the vocabulary is decoded with `decode_vocab`.
        batch_size: most distinct contexts in one forward.
        timeout: seconds after the first queued query when a batch goes anyway.
        max_cache_tokens: KV cache bound in token positions (0 disables KV reuse).
        max_cache_logprobs: log-prob cache bound in vectors (0 disables it).
        byte_vocab: the vocabulary as `Token`s, when it is already decoded.
        str_vocab: the vocabulary as text, with `byte_vocab`.
    """

    def __init__(
        self,
        hf_model: Any,
        hf_tokenizer: Any,
        batch_size: int = 32,
        timeout: float = 0.02,
        max_cache_tokens: int = 16384,
        max_cache_logprobs: int = 1024,
        byte_vocab: Sequence[Any] | None = None,
        str_vocab: Sequence[str] | None = None,
    ) -> None:
        super().__init__(
            hf_tokenizer,
            TokenTrieCache(max_cache_tokens, max_cache_logprobs),
            batch_size,
            timeout,
            byte_vocab,
            str_vocab,
            extra_stats=("kv_tokens_reused", "evictions", "prefix_shared"),
        )
        self.model = hf_model.eval()
        self.device = next(hf_model.parameters()).device
        if self.bos_token_id is None:
            self.bos_token_id = _start_token(hf_model, hf_tokenizer, self.vocab_size)
        config = hf_model.config
        self.max_context_length = getattr(config, "max_position_embeddings", None)
        n_logits = hf_model.get_output_embeddings().weight.shape[0]
        if n_logits < self.vocab_size:
            raise ValueError(
                f"the model scores {n_logits} tokens but its tokenizer has {self.vocab_size}: "
                "pass a tokenizer that matches the model"
            )
        pad = getattr(hf_tokenizer, "pad_token_id", None)
        self._pad_id = pad if pad is not None and pad < n_logits else 0
        params = inspect.signature(hf_model.forward).parameters
        self._keep_arg = "logits_to_keep" if "logits_to_keep" in params else None
        self._kv_enabled = max_cache_tokens > 0
        self._workspace = KVWorkspace()
        # One forward at a time uses the workspace, and no adapter is loaded or
        # switched during a forward (whose results go under the adapter it read).
        # Re-entrant: `add_new_lora` holds it while it calls `_activate`.
        self._forward_lock = threading.RLock()

    @classmethod
    def from_name(
        cls, model_id: str, hf_opts: dict | None = None, **kwargs: Any
    ) -> AsyncTransformer:
        """Load a model by name (see `genlm_lab.backend.models.load_hf_model`) and wrap it.

        Args:
            model_id: `"smollm2-135m"` / `"default"`, `"tiny-random"`, a local
                HF directory, or a hub id in the local HF cache.
            hf_opts: genlm-backend's options for `from_pretrained`; genlm_lab
                takes `torch_dtype` / `dtype` and `device_map` / `device`.
            **kwargs: passed to the constructor (batch_size, timeout, cache bounds).
        """
        from genlm_lab.backend.models import hf_load_options, load_hf_model

        model, tokenizer = load_hf_model(model_id, **hf_load_options(hf_opts))
        return cls(model, tokenizer, **kwargs)

    # -- queries -----------------------------------------------------------------

    @torch.inference_mode()
    def next_token_logprobs_uncached(self, token_ids: Sequence[int]) -> torch.Tensor:
        """Log-probs from one plain forward over the whole context: no cache, no batching.

        This is the reference the cached paths are tested against.
        """
        ids = self.validate_context(token_ids)
        self.stats["queries"] += 1
        self.stats["batches"] += 1
        self.stats["tokens_computed"] += len(ids)
        x = torch.tensor([ids], device=self.device)
        with self._forward_lock:  # an adapter switch in another thread waits for it
            logits = self.model(x, use_cache=False).logits[0, -1]
        return self._normalise(logits[None])[0]

    @torch.inference_mode()
    def cache_kv(self, prompt_ids: Sequence[int]) -> None:
        """Compute and keep the keys and values of a prompt (and its next-token log-probs).

        Later contexts that extend the prompt run the model only on their new tokens.
        """
        ids = self.validate_context(prompt_ids)
        if not self._kv_enabled:
            return
        if self._cache.longest_kv(self._adapter, ids, len(ids)).length == len(ids):
            return
        self._forward([ids])

    # -- cache and queue control -------------------------------------------------

    def clear_kv_cache(self) -> None:
        """Forget the cached keys and values, keep the log-probs."""
        self._cache.clear_kv()

    # -- LoRA ----------------------------------------------------------------------

    _reserved_names = frozenset({_STAGING_ADAPTER})

    def add_new_lora(self, lora_path: str, lora_name: str = "lora_1") -> None:
        """Load a LoRA adapter (via peft) under a name, without activating it.

        Call `set_lora(lora_name=...)` to use it. Loading a new adapter under a
        name in use replaces it and forgets what was cached under that name.

        Raises:
            ValueError: if the adapter cannot be loaded from `lora_path` (the
                backend is left as it was: a replaced adapter stays in place), or
                if `lora_name` is not a non-empty str.
        """
        self._check_lora_name(lora_name)
        self._batcher.flush()
        with self._forward_lock:  # not while another thread's forward runs
            if lora_name in self._loras:
                # Prove that the new adapter loads before giving up the old one.
                self._load_adapter(lora_path, _STAGING_ADAPTER, lora_name)
                self.model.delete_adapter(_STAGING_ADAPTER)
                self.model.delete_adapter(lora_name)
                del self._loras[lora_name]
            self._cache.clear(lora_name)
            try:
                self._load_adapter(lora_path, lora_name, lora_name)
                self._loras[lora_name] = str(lora_path)
            finally:
                if self._adapter is not None and self._adapter not in self._loras:
                    self._adapter = None  # it was replaced and the reload failed: base model
                self._activate(self._adapter)

    def _load_adapter(self, lora_path: str, name: str, label: str) -> None:
        """`model.load_adapter` that fails with one ValueError and leaves no half-loaded adapter."""
        try:
            with warnings.catch_warnings():
                # peft warns that a second adapter joins the first: that is the point here.
                warnings.filterwarnings("ignore", message=".*peft_config.*multiple adapters")
                self.model.load_adapter(str(lora_path), adapter_name=name)
        except (OSError, ValueError, KeyError, RuntimeError, TypeError) as e:
            if name in (getattr(self.model, "peft_config", None) or {}):
                self.model.delete_adapter(name)
            raise ValueError(
                f"could not load LoRA adapter {label!r} from {str(lora_path)!r}: {e}"
            ) from e

    def _activate(self, name: str | None) -> None:
        with self._forward_lock:  # a forward in another thread finishes first
            if self._loras:
                if name is None:
                    self.model.disable_adapters()
                else:
                    self.model.set_adapter(name)
                    self.model.enable_adapters()
            self._adapter = name

    # -- batch computation --------------------------------------------------------

    def _normalise(self, logits: torch.Tensor) -> torch.Tensor:
        return torch.log_softmax(logits[..., : self.vocab_size].float(), dim=-1)

    def _forward(self, rows: list[tuple[int, ...]]) -> list[torch.Tensor]:
        """One model call for distinct contexts, reusing cached keys and values."""
        with self._forward_lock:
            return self._forward_locked(rows)

    @torch.inference_mode()
    def _forward_locked(self, rows: list[tuple[int, ...]]) -> list[torch.Tensor]:
        adapter = self._adapter
        evictions = self._cache.evictions
        if self._kv_enabled:
            handles = [self._cache.longest_kv(adapter, ids, len(ids) - 1) for ids in rows]
        else:
            handles = [KVHandle(None, 0) for _ in rows]
        every_row, every_past = rows, [h.length for h in handles]
        riders = _riders(every_row, every_past)
        computed = [i for i in range(len(every_row)) if i not in riders]
        rows = [every_row[i] for i in computed]
        handles = [handles[i] for i in computed]
        past = [h.length for h in handles]
        new = [ids[p:] for ids, p in zip(rows, past, strict=True)]
        n_past, n_new, batch = max(past), max(len(x) for x in new), len(rows)
        dev = self.device

        input_ids = torch.full((batch, n_new), self._pad_id, dtype=torch.long)
        mask = torch.zeros((batch, n_past + n_new), dtype=torch.long)
        for i, (p, x) in enumerate(zip(past, new, strict=True)):
            input_ids[i, : len(x)] = torch.tensor(x)
            mask[i, n_past - p : n_past + len(x)] = 1
        positions = torch.tensor(past)[:, None] + torch.arange(n_new)[None, :]
        kwargs: dict[str, Any] = {"position_ids": positions.to(dev), "use_cache": self._kv_enabled}
        if not bool(mask.all()):  # without padding, the model's causal fast path applies
            kwargs["attention_mask"] = mask.to(dev)
        if n_past > 0:
            kwargs["past_key_values"] = padded_cache(handles, n_past, n_new, self._workspace)
        # each context's logits: (row of the forward, position among its new tokens)
        slot = {i: j for j, i in enumerate(computed)}
        picks = [
            (slot[riders[i][0]], riders[i][1] - 1 - every_past[riders[i][0]])
            if i in riders
            else (slot[i], len(new[slot[i]]) - 1)
            for i in range(len(every_row))
        ]
        keep = sorted({pos for _, pos in picks})
        if self._keep_arg is not None:
            kwargs[self._keep_arg] = torch.tensor(keep, device=dev)
        out = self.model(input_ids.to(dev), **kwargs)
        col = {pos: j for j, pos in enumerate(keep)} if self._keep_arg is not None else None
        picked = out.logits[
            torch.tensor([i for i, _ in picks]),
            torch.tensor([pos if col is None else col[pos] for _, pos in picks]),
        ]
        logprobs = self._normalise(picked)

        self._count_forward(batch, sum(len(x) for x in new))
        self.stats["kv_tokens_reused"] += sum(past)
        self.stats["prefix_shared"] += len(riders)

        results = [logprobs[i] for i in range(len(every_row))]
        for ids, lp in zip(every_row, results, strict=True):
            self._cache.put_logprobs(adapter, ids, lp)
        if self._kv_enabled:
            segments = new_segments(out.past_key_values, n_past, n_new, [len(x) for x in new])
            if segments is None:
                self._kv_enabled = False  # e.g. sliding-window layers: recompute instead
                self._cache.clear_kv()
            else:
                for ids, h, seg in zip(rows, handles, segments, strict=True):
                    self._cache.put_kv(adapter, ids, h, seg, evict=False)
                self._cache.evict()
        self.stats["evictions"] += self._cache.evictions - evictions  # counts from reset_stats
        return results


def _riders(rows: list[tuple[int, ...]], past: list[int]) -> dict[int, tuple[int, int]]:
    """Rows that are a prefix of another row's new tokens: {row: (host row, its length)}.

    A row `ids` rides on a host that extends it when the host's cached prefix
    is shorter than `ids`: the host's output at position len(ids) - 1 is the
    distribution after `ids`. A chain of prefixes rides on its longest
    member that covers them; hosts always compute.
    """
    spans: dict[tuple[int, ...], int] = {}
    riders: dict[int, tuple[int, int]] = {}
    for i in sorted(range(len(rows)), key=lambda i: -len(rows[i])):  # hosts before riders
        ids = tuple(rows[i])
        host = spans.get(ids)
        if host is not None:
            riders[i] = (host, len(ids))
            continue
        # the output at new position j is the distribution after ids[: past + j + 1]
        for length in range(past[i] + 1, len(ids)):
            spans.setdefault(ids[:length], i)
    return riders


def _start_token(model: Any, tokenizer: Any, n: int) -> int | None:
    """The token that starts a context for a model whose tokenizer has no BOS (Qwen).

    HF `generate` starts an empty prompt from the model's `bos_token_id`
    (Qwen: `<|endoftext|>`, its document separator); taken only where that id
    is one of the tokenizer's special tokens, so a config default that points
    at ordinary text is never prepended. None: an empty context is an error.
    """
    special = set(getattr(tokenizer, "all_special_ids", None) or ())
    added = getattr(tokenizer, "added_tokens_decoder", None) or {}
    special.update(int(i) for i, t in added.items() if getattr(t, "special", False))
    for config in (getattr(model, "generation_config", None), model.config):
        found = getattr(config, "bos_token_id", None)
        if isinstance(found, int) and 0 <= found < n and found in special:
            return found
    return None
