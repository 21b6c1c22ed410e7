"""`ToyLM`: a hand-made LM over a few byte-string tokens, small enough to see whole."""

from __future__ import annotations

import hashlib
from abc import abstractmethod
from collections.abc import Callable, Sequence

import numpy as np
import torch

from genlm_lab.backend.base import AsyncLM
from genlm_lab.tokenization import Token


def _check_byte_vocab(vocab: object) -> list[bytes]:
    """The vocabulary as a list of bytes; one ValueError for anything but a list of byte strings."""
    if isinstance(vocab, (str, bytes, bytearray)):
        raise ValueError(
            f"vocab must be a list of byte strings, one per token, got one "
            f"{type(vocab).__name__} (e.g. write [b'a', b'b'], not b'ab')"
        )
    try:
        vocab = list(vocab)  # type: ignore[call-overload]
    except TypeError:
        raise ValueError(
            f"vocab must be a list of byte strings, got {type(vocab).__name__}"
        ) from None
    for token_id, v in enumerate(vocab):
        if not isinstance(v, (bytes, bytearray)):
            raise ValueError(
                f"vocab entry {token_id} is {type(v).__name__} ({v!r}); expected bytes"
            )
    return vocab


def seeded_logits(seed: int, context: Sequence[int], size: int, scale: float = 2.0) -> np.ndarray:
    """Deterministic pseudo-random logits for a context: same inputs, same output."""
    digest = hashlib.blake2b(
        np.asarray([seed, *context], dtype=np.int64).tobytes(), digest_size=8
    ).digest()
    rng = np.random.default_rng(int.from_bytes(digest, "little"))
    return rng.normal(scale=scale, size=size)


class ToyTokenizer:
    """A minimal tokenizer for `ToyLM`: greedy longest-match encoding over the vocabulary.

    It offers the few tokenizer methods genlm_lab uses (`encode`, `decode`,
    `eos_token_id`, `bos_token_id`, `__len__`).
    """

    def __init__(self, vocab: Sequence[bytes], bos_token_id: int | None, eos_token_id: int | None):
        self.vocab = [bytes(v) for v in vocab]
        self.bos_token_id = bos_token_id
        self.eos_token_id = eos_token_id
        self._special = {i for i in (bos_token_id, eos_token_id) if i is not None}
        self._by_bytes: dict[bytes, int] = {}
        for token_id, token in enumerate(self.vocab):
            if token_id not in self._special:
                self._by_bytes.setdefault(token, token_id)
        self._longest = max((len(v) for v in self._by_bytes), default=0)
        self.name_or_path = "toy"

    def __len__(self) -> int:
        return len(self.vocab)

    def encode(self, text: str | bytes, add_special_tokens: bool = False) -> list[int]:
        """Greedy longest-match tokenization; raises ValueError if a byte cannot be covered."""
        data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
        ids = [self.bos_token_id] if add_special_tokens and self.bos_token_id is not None else []
        i = 0
        while i < len(data):
            for width in range(min(self._longest, len(data) - i), 0, -1):
                token_id = self._by_bytes.get(data[i : i + width])
                if token_id is not None:
                    ids.append(token_id)
                    i += width
                    break
            else:
                raise ValueError(
                    f"byte {data[i : i + 1]!r} at position {i} is not covered by the toy vocabulary"
                )
        return ids

    def decode(self, token_ids: Sequence[int], skip_special_tokens: bool = False) -> str:
        """The text of token ids (invalid UTF-8 replaced), optionally without BOS / EOS."""
        parts = [
            self.vocab[i] for i in token_ids if not (skip_special_tokens and i in self._special)
        ]
        return b"".join(parts).decode("utf-8", errors="replace")


class _UnbatchedLM(AsyncLM):
    """An LM whose log-probs are a cheap function of the context, computed per query.

    Subclasses implement `_logprobs(context)`; every query counts as one batch
    of one scored position.
    """

    @abstractmethod
    def _logprobs(self, context: tuple[int, ...]) -> torch.Tensor:
        """Normalised float32 log-probs after a validated context."""

    async def next_token_logprobs(self, token_ids: Sequence[int]) -> torch.Tensor:
        """Normalised next-token log-probs, shape (vocab_size,) (computed at once)."""
        return self.next_token_logprobs_sync(token_ids)

    def next_token_logprobs_sync(self, token_ids: Sequence[int]) -> torch.Tensor:
        """Normalised next-token log-probs, shape (vocab_size,).

        Raises:
            ValueError: for an out-of-vocabulary or non-int context.
        """
        context = self.validate_context(token_ids)
        self.stats["queries"] += 1
        self.stats["batches"] += 1
        self.stats["tokens_computed"] += 1
        return self._logprobs(context)


class ToyLM(_UnbatchedLM):
    """A tiny LM over hand-picked byte-string tokens.

    Its next-token distribution is `logprobs_fn(context_ids)` normalised, or,
    without a function, seeded pseudo-random logits of the context. Small
    vocabularies make tries drawable whole and beams checkable by exact
    enumeration.

    Args:
        vocab: the byte string of each token id (duplicates allowed).
        logprobs_fn: maps a tuple of context ids to unnormalised log-probs,
            one per token (use -inf to forbid a token).
        seed: seed of the pseudo-random distributions.
        bos: byte string of the BOS token, or None (then the empty context is
            valid and the first token is drawn from `logprobs_fn(())`).
        eos: byte string of the EOS token, or None.
    """

    allows_empty_context = True

    def __init__(
        self,
        vocab: Sequence[bytes],
        logprobs_fn: Callable[[tuple[int, ...]], Sequence[float]] | None = None,
        seed: int = 0,
        bos: bytes | None = None,
        eos: bytes | None = None,
    ) -> None:
        vocab = [bytes(v) for v in _check_byte_vocab(vocab)]
        if not vocab:
            raise ValueError("ToyLM needs a non-empty vocabulary")
        bos_id = self._find(vocab, bos, "bos")
        eos_id = self._find(vocab, eos, "eos")
        self.logprobs_fn = logprobs_fn
        self.seed = seed
        super().__init__(
            tokenizer=ToyTokenizer(vocab, bos_id, eos_id),
            byte_vocab=[Token(i, v) for i, v in enumerate(vocab)],
            bos_token_id=bos_id,
            eos_token_ids=[] if eos_id is None else [eos_id],
        )

    @staticmethod
    def _find(vocab: list[bytes], token: bytes | None, what: str) -> int | None:
        if token is None:
            return None
        try:
            return vocab.index(bytes(token))
        except ValueError:
            raise ValueError(f"{what} token {token!r} is not in the toy vocabulary") from None

    def _logprobs(self, context: tuple[int, ...]) -> torch.Tensor:
        if self.logprobs_fn is None:
            logits = seeded_logits(self.seed, context, self.vocab_size)
        else:
            logits = np.asarray(self.logprobs_fn(context), dtype=np.float64)
            if logits.shape != (self.vocab_size,):
                raise ValueError(
                    f"logprobs_fn returned shape {logits.shape}, expected ({self.vocab_size},)"
                )
        logits = torch.as_tensor(logits, dtype=torch.float64)
        if torch.isnan(logits).any() or not torch.isfinite(logits).any():
            raise ValueError(
                f"logprobs_fn gave no finite log-prob (or a NaN) for context {context}"
            )
        if (logits == torch.inf).any():
            raise ValueError(
                f"logprobs_fn gave +inf for token {int(torch.argmax(logits))} after context "
                f"{context}; log-probs must be finite or -inf"
            )
        return (logits - torch.logsumexp(logits, dim=0)).float()

    def __repr__(self) -> str:
        return f"ToyLM({[bytes(t) for t in self.byte_vocab]!r})"
