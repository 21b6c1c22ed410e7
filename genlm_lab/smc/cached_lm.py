"""`CachedCausalLM`: LLaMPPL's name for the language model a program samples from.

LLaMPPL 0.2 wraps a genlm-backend `AsyncLM` in `CachedCausalLM`; genlm_lab's
distributions take an `AsyncLM` directly, so this class only keeps LLaMPPL
code running: it loads a model by name, hands out numpy log-probs (async,
batched; or blocking with `next_token_logprobs_unbatched`), and passes every
other attribute (`eos_token_ids`, `byte_vocab`, ...) through to the backend.
Caching and batching are the backend's (`genlm_lab.backend`).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from functools import cached_property
from typing import Any

import numpy as np

from genlm_lab.smc.distributions import as_numpy
from genlm_lab.smc.masks import TokenMasks, token_masks

__all__ = ["MLX_AVAILABLE", "VLLM_AVAILABLE", "CachedCausalLM"]

#: genlm_lab has no MLX backend (LLaMPPL's tests branch on this).
MLX_AVAILABLE = False
#: Whether the vLLM backend can be imported here.
VLLM_AVAILABLE = importlib.util.find_spec("vllm") is not None


class CachedCausalLM:
    """An `AsyncLM` under LLaMPPL's interface.

    Args:
        model: a genlm_lab `AsyncLM` (`AsyncTransformer`, `AsyncVirtualLM`, `MockAsyncLM`, ...).

    Attributes:
        model: the backend.
        tokenizer, byte_vocab, str_vocab: the backend's.
        backend: "hf", "vllm", "mock" or the backend's class name.
    """

    def __init__(self, model: Any) -> None:
        self.model = model
        self.tokenizer = model.tokenizer
        self.byte_vocab = model.byte_vocab
        self.str_vocab = getattr(model, "str_vocab", None)
        kinds = {"AsyncTransformer": "hf", "AsyncVirtualLM": "vllm", "MockAsyncLM": "mock"}
        self.backend = kinds.get(type(model).__name__, type(model).__name__)

    @classmethod
    def from_pretrained(
        cls, model_id: str, backend: str | None = None, **kwargs: Any
    ) -> CachedCausalLM:
        """Load `model_id` with `load_model_by_name(model_id, backend, llm_opts=kwargs)`."""
        from genlm_lab.backend import load_model_by_name

        return cls(load_model_by_name(model_id, backend=backend, llm_opts=kwargs or None))

    def __getattr__(self, name: str) -> Any:
        if name == "model":  # not set yet (copy, unpickling): no recursion
            raise AttributeError(name)
        return getattr(self.model, name)

    def __deepcopy__(self, memo: dict) -> CachedCausalLM:
        return self  # particles share the model, as in LLaMPPL

    @property
    def vocab(self) -> list:
        """The vocabulary as strings (LLaMPPL's `lm.vocab`)."""
        return self.str_vocab

    @cached_property
    def masks(self) -> TokenMasks:
        """Common token masks of the vocabulary (`ALL_TOKENS`, `EOS`, `MID_PUNCTUATION`, ...)."""
        return token_masks(self.model)

    async def next_token_logprobs(self, token_ids: Sequence[int]) -> np.ndarray:
        """Next-token log-probs after `token_ids` (numpy); concurrent calls are batched."""
        return as_numpy(await self.model.next_token_logprobs(token_ids))

    def next_token_logprobs_unbatched(self, token_ids: Sequence[int]) -> np.ndarray:
        """The same, computed now without an event loop (blocking)."""
        return as_numpy(self.model.next_token_logprobs_sync(token_ids))

    def clear_cache(self) -> None:
        """Forget cached log-probs and key/value states."""
        self.model.clear_cache()

    def clear_kv_cache(self) -> None:
        """Forget cached key/value states (genlm_lab keeps both in one cache)."""
        self.model.clear_cache()

    def reset_async_queries(self) -> None:
        """Drop queued requests (after an interrupted run)."""
        self.model.reset_async_queries()

    def cache_kv(self, prompt_tokens: Sequence[int]) -> None:
        """Compute and keep the states of a prompt that many queries will share."""
        self.next_token_logprobs_unbatched(prompt_tokens)

    def __repr__(self) -> str:
        return f"CachedCausalLM({self.model!r})"
