"""`StatefulTokenizedLM`: a token context plus the model that scores it."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from genlm_lab.backend.base import AsyncLM
from genlm_lab.util import escape_bytes


class StatefulTokenizedLM:
    """An immutable token context over an `AsyncLM`.

    `lm << token_id` returns a new state one token longer; `await lm.logp_next()`
    asks the model for the next-token log-probabilities. States share the
    model, so concurrent `logp_next` calls of many states batch in the backend.

    Args:
        model: the token-level language model.
        context: token ids, from the BOS token (if the model has one).
        n_calls: number of `logp_next` calls made along this chain of states.
        max_context_length: longest context kept; older tokens (after the
            first one, the BOS) are dropped. None uses the model's limit.
    """

    def __init__(
        self,
        model: AsyncLM,
        context: Sequence[int],
        n_calls: int = 0,
        max_context_length: int | None = None,
    ) -> None:
        self.model = model
        self.context = tuple(int(t) for t in context)
        self._n_calls = n_calls
        if max_context_length is None:
            max_context_length = getattr(model, "max_context_length", None)
        if max_context_length is not None and max_context_length < 2:
            raise ValueError(f"max_context_length must be at least 2, got {max_context_length}")
        self.max_context_length = max_context_length
        self._tokens: tuple[bytes, ...] | None = None

    @classmethod
    def initial(
        cls,
        model: AsyncLM,
        initial_context: Sequence[int] | None = None,
        max_context_length: int | None = None,
    ) -> StatefulTokenizedLM:
        """The state before any text: `[bos_token_id]`, or empty for a model without BOS."""
        if initial_context is None:
            bos = getattr(model, "bos_token_id", None)
            initial_context = [] if bos is None else [bos]
        context = model.validate_context(initial_context) if initial_context else ()
        return cls(model, context, max_context_length=max_context_length)

    @property
    def n_calls(self) -> int:
        """How many times `logp_next` was called along this chain of states."""
        return self._n_calls

    def __lshift__(self, token: int) -> StatefulTokenizedLM:
        """The state with `token` appended (the oldest tokens dropped past the limit)."""
        if isinstance(token, bool) or not hasattr(token, "__index__"):
            raise ValueError(f"token must be an int token id, got {token!r}")
        token = int(token)
        if not 0 <= token < self.model.vocab_size:
            raise ValueError(
                f"token id {token} is outside the vocabulary ({self.model.vocab_size} tokens)"
            )
        context = self.context + (token,)
        limit = self.max_context_length
        if limit is not None and len(context) > limit:
            context = context[:1] + context[len(context) - limit + 1 :]
        child = StatefulTokenizedLM(self.model, context, self._n_calls, self.max_context_length)
        if self._tokens is not None and len(context) == len(self.context) + 1:
            child._tokens = self._tokens + (bytes(self.model.byte_vocab[token]),)
        return child

    async def logp_next(self) -> torch.Tensor:
        """Normalised log-probabilities of the next token, shape (vocab_size,)."""
        self._n_calls += 1
        return await self.model.next_token_logprobs(self.context)

    @property
    def tokens(self) -> tuple[bytes, ...]:
        """The byte string of every token in the context (built once per state)."""
        if self._tokens is None:
            vocab = self.model.byte_vocab
            self._tokens = tuple(bytes(vocab[t]) for t in self.context)
        return self._tokens

    def __repr__(self) -> str:
        return "|".join(escape_bytes(t, visible_space=True) for t in self.tokens)
