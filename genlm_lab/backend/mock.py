"""`MockAsyncLM`: deterministic pseudo-random log-probs over any vocabulary."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from genlm_lab.backend.toy import _check_byte_vocab, _UnbatchedLM, seeded_logits
from genlm_lab.tokenization import Token


class MockAsyncLM(_UnbatchedLM):
    """An LM whose log-probs are a fixed pseudo-random function of the context.

    It needs only a vocabulary (from a tokenizer or given directly), runs no
    model, and is what tests use to exercise layers above the backend at
    full vocabulary size.

    Args:
        tokenizer: an HF tokenizer; its vocabulary is decoded with `decode_vocab`.
        byte_vocab: the vocabulary as byte strings, used when no tokenizer is given.
        seed: changes every distribution.
        eos_token_ids: ids that end a generation; by default the tokenizer's EOS.
    """

    allows_empty_context = True

    def __init__(
        self,
        tokenizer: Any = None,
        byte_vocab: Sequence[bytes] | None = None,
        seed: int = 0,
        eos_token_ids: Sequence[int] | None = None,
    ) -> None:
        if tokenizer is None and byte_vocab is None:
            raise ValueError("MockAsyncLM needs a tokenizer or a byte_vocab")
        str_vocab = None
        bos = None
        if byte_vocab is None:
            from genlm_lab.tokenization import decode_vocab

            byte_vocab, str_vocab = decode_vocab(tokenizer)
            bos = getattr(tokenizer, "bos_token_id", None)
            if eos_token_ids is None and getattr(tokenizer, "eos_token_id", None) is not None:
                eos_token_ids = [tokenizer.eos_token_id]
        else:
            byte_vocab = _check_byte_vocab(byte_vocab)  # Tokens are bytes too
        vocab = [
            t if isinstance(t, Token) else Token(i, bytes(t)) for i, t in enumerate(byte_vocab)
        ]
        self.seed = seed
        super().__init__(tokenizer, vocab, str_vocab, bos, eos_token_ids or ())

    @classmethod
    def from_name(cls, model_name: str, **kwargs: Any) -> MockAsyncLM:
        """A mock over the tokenizer of `model_name` (genlm-backend's constructor name).

        Args:
            model_name: any name `load_tokenizer` resolves (`"default"`, a local dir).
            **kwargs: `seed`, `eos_token_ids`.
        """
        from genlm_lab.backend.models import load_tokenizer

        return cls(tokenizer=load_tokenizer(model_name), **kwargs)

    def _logprobs(self, context: tuple[int, ...]) -> torch.Tensor:
        logits = torch.as_tensor(seeded_logits(self.seed, context, self.vocab_size))
        return torch.log_softmax(logits, dim=0).float()
