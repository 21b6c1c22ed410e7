"""`PromptedLLM`: a language model after a fixed prompt, as a potential over its tokens."""

from __future__ import annotations

import asyncio
import contextvars
import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from genlm_lab.control.core.weights import LazyWeights
from genlm_lab.control.lm.token_maps import TokenMappings, eos_order
from genlm_lab.control.potential.base import Potential
from genlm_lab.smc.distributions import encode_prompt
from genlm_lab.tokenization.control_tokens import control_token_ids
from genlm_lab.util import logsumexp

__all__ = ["PromptedLLM", "TokenMappings"]


def _in_task() -> bool:
    try:
        return asyncio.current_task() is not None
    except RuntimeError:  # no running event loop
        return False


def _eos_ids(llm: Any, eos: Sequence[Any] | None) -> list[int]:
    """Token ids of the EOS tokens, given as ids, `Token`s or byte strings (all mean the same).

    A byte string stands for every token whose bytes it is (genlm-control's
    `eos_byte_strings`); a `Token` for its id.
    """
    if eos is None:
        return sorted(set(llm.eos_token_ids))
    if isinstance(eos, (bytes, str, int)):
        eos = [eos]
    by_bytes: dict[bytes, list[int]] | None = None
    ids: set[int] = set()
    for item in eos:
        token_id = getattr(item, "token_id", None)
        if token_id is not None:
            ids.add(int(token_id))
        elif isinstance(item, (bytes, bytearray, str)):
            data = item.encode() if isinstance(item, str) else bytes(item)
            if by_bytes is None:
                by_bytes = {}
                for i, t in enumerate(llm.byte_vocab):
                    by_bytes.setdefault(bytes(t), []).append(i)
            if data not in by_bytes:
                raise ValueError(f"EOS byte string {data!r} is no token of this model's vocabulary")
            ids.update(by_bytes[data])
        elif isinstance(item, (int, np.integer)) and not isinstance(item, bool):
            ids.add(int(item))
        else:
            raise ValueError(f"an EOS token must be a token id, Token or bytes, got {item!r}")
    for i in ids:
        if not 0 <= i < llm.vocab_size:
            raise ValueError(
                f"EOS token id {i} is outside the vocabulary ({llm.vocab_size} tokens)"
            )
    return sorted(ids)


def _byte_strings(eos: Any) -> bool:
    """Whether `eos` is given as plain byte strings (genlm-control's old `eos_tokens`)."""
    items = [eos] if isinstance(eos, (bytes, str)) else list(eos)
    return any(
        isinstance(t, (bytes, bytearray, str)) and getattr(t, "token_id", None) is None
        for t in items
    )


class PromptedLLM(Potential):
    """The next-token distribution of `llm` after `prompt_ids`, over its non-EOS tokens.

    `prefix(x)` is the log-probability of the tokens `x` after the prompt;
    `complete(x)` adds the probability of ending there (any EOS token). The
    EOS tokens leave the vocabulary and become the `EOS` marker.

    Args:
        llm: any `AsyncLM` (`ToyLM`, `AsyncTransformer`, ...).
        prompt_ids: the prompt as token ids (or `Token`s); default: BOS where
            the LM needs a context.
        eos_tokens: what ends a sequence: token ids, `Token`s or byte strings
            (default: the LM's EOS tokens).
        temperature: divides the log-probs before renormalising (> 0).
        prompt: the prompt as text instead of ids (tokenised with the LM's tokenizer).
        eos_byte_strings: genlm-control 0.4's name for `eos_tokens`: byte
            strings (a `Token` counts as its bytes); every token spelling one
            is EOS. Given twice, or spelled by no token: ValueError.
        token_maps: the `TokenMappings` of another PromptedLLM over the same
            LM, whose EOS tokens to take (instead of `eos_*`).
    """

    def __init__(
        self,
        llm: Any,
        prompt_ids: Sequence[int] | None = None,
        eos_tokens: Sequence[Any] | None = None,
        temperature: float = 1.0,
        *,
        prompt: str | None = None,
        eos_byte_strings: Sequence[bytes] | None = None,
        token_maps: TokenMappings | None = None,
    ) -> None:
        if eos_tokens is not None and eos_byte_strings is not None:
            raise ValueError("give eos_tokens or eos_byte_strings, not both")
        if token_maps is not None and (eos_tokens is not None or eos_byte_strings is not None):
            raise ValueError("eos_byte_strings must not be provided when token_maps is provided.")
        if eos_tokens is not None and _byte_strings(eos_tokens):
            warnings.warn(
                "PromptedLLM(eos_tokens=<byte strings>) is deprecated (genlm-control 0.4): "
                "pass them as eos_byte_strings=; eos_tokens= keeps taking token ids",
                DeprecationWarning,
                stacklevel=2,
            )
        if prompt is not None and prompt_ids is not None:
            raise ValueError("give prompt (text) or prompt_ids, not both")
        temperature = float(temperature)
        if not math.isfinite(temperature) or temperature <= 0:
            raise ValueError(f"temperature must be a finite number > 0, got {temperature}")
        self.model = llm
        self.temperature = temperature
        if token_maps is not None:
            order = list(token_maps.eos_idxs)
        elif eos_byte_strings is not None:
            order = eos_order(llm.byte_vocab, eos_byte_strings)
        else:
            order = _eos_ids(llm, eos_tokens)
        self._eos_order = order  # as asked for: `token_maps.eos_idxs`
        self._token_maps: TokenMappings | None = None
        self._eos_token_ids = sorted(set(order))
        eos = set(self._eos_token_ids)
        self._vocab_ids = np.array(
            [i for i in range(llm.vocab_size) if i not in eos], dtype=np.int64
        )
        super().__init__([llm.byte_vocab[i] for i in self._vocab_ids])
        self._eos_ids_array = np.array(self._eos_token_ids, dtype=np.int64)
        self._prompt_var: contextvars.ContextVar = contextvars.ContextVar("prompt_ids")
        self.prompt_ids = encode_prompt(llm, prompt if prompt is not None else (prompt_ids or []))

    @property
    def prompt_ids(self) -> list[int]:
        """The prompt's token ids: what this asyncio task (or one it started from) last set,
        else, in a task that set none or outside any task, what was last set anywhere
        (genlm-control's rule: concurrent tasks may each keep their own prompt)."""
        own = self._prompt_var.get(None)
        return self._prompt_ids if own is None else own

    @prompt_ids.setter
    def prompt_ids(self, ids: Sequence[int]) -> None:
        """Set the prompt (ids or `Token`s; empty means BOS where the model needs one).

        Raises:
            ValueError: for an id outside the model's vocabulary, here rather than later.
        """
        ids = encode_prompt(self.model, list(ids))
        self._prompt_ids = ids
        if _in_task():
            self._prompt_var.set(ids)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_prompt_ids"] = self.prompt_ids
        del state["_prompt_var"]  # a ContextVar does not pickle; a copy gets its own
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._prompt_var = contextvars.ContextVar("prompt_ids")

    @classmethod
    def from_name(
        cls,
        name: str,
        backend: str | None = None,
        eos_byte_strings: Sequence[bytes] | None = None,
        prompt_ids: Sequence[int] | None = None,
        temperature: float = 1.0,
        **kwargs: Any,
    ) -> PromptedLLM:
        """Load a model by name (`load_model_by_name`) and prompt it.

        Args:
            name: `"default"`, `"tiny-random"`, a local HF directory or a cached hub id.
            backend: `"hf"`, `"vllm"` or `"mock"`; None picks one.
            eos_byte_strings: as for the constructor.
            prompt_ids: as for the constructor.
            temperature: as for the constructor.
            **kwargs: `eos_tokens` (deprecated spelling of `eos_byte_strings`),
                `llm_opts` for the backend, and any other keyword is one more
                backend option (genlm-control passes them on the same way), e.g.
                `hf_opts={"torch_dtype": "float"}`.

        Raises:
            ValueError: for backend options the backend does not take.
        """
        from genlm_lab.backend import load_model_by_name

        eos_tokens = kwargs.pop("eos_tokens", None)
        llm_opts = {**(kwargs.pop("llm_opts", None) or {}), **kwargs}
        llm = load_model_by_name(name, backend=backend, llm_opts=llm_opts or None)
        return cls(
            llm,
            prompt_ids=prompt_ids,
            eos_tokens=eos_tokens,
            temperature=temperature,
            eos_byte_strings=eos_byte_strings,
        )

    @property
    def eos_tokens(self) -> list[Any]:
        """The tokens that end a sequence."""
        return [self.model.byte_vocab[i] for i in self._eos_token_ids]

    @property
    def prompt(self) -> str:
        """The prompt as text."""
        return b"".join(bytes(self.model.byte_vocab[i]) for i in self.prompt_ids).decode(
            "utf-8", errors="replace"
        )

    def set_prompt_from_str(self, text: str) -> None:
        """Replace the prompt by `text`, tokenised with the LM's tokenizer.

        Warns (UserWarning) when the text ends in whitespace: most tokenizers
        fold a space into the next word's token, so the sequences after such a
        prompt start with improbable tokens.
        """
        if not isinstance(text, str):
            raise ValueError(f"Prompt must a string, got {type(text).__name__}")
        if text and text[-1].isspace():
            warnings.warn(
                "the prompt ends in whitespace; the tokenizer usually joins a space to the "
                "next word, so what follows this prompt is scored as improbable",
                UserWarning,
                stacklevel=2,
            )
        self.prompt_ids = encode_prompt(self.model, text)

    @property
    def token_maps(self) -> TokenMappings:
        """The LM's token tables: `decode`, `encode`, `eos_idxs`, ... (genlm-control's)."""
        if self.__dict__.get("_token_maps") is None and not self.__dict__.get("_maps_set"):
            self._token_maps = TokenMappings.from_ids(self.model.byte_vocab, self._eos_order)
        return self._token_maps

    @token_maps.setter
    def token_maps(self, value: TokenMappings | None) -> None:
        # genlm-control keeps `token_maps` as a plain attribute, which subclasses assign
        self._token_maps = value
        self._maps_set = True

    @property
    def eos_byte_strings(self) -> list[bytes]:
        """The bytes of the EOS tokens."""
        return self.token_maps.eos_byte_strings

    @eos_byte_strings.setter
    def eos_byte_strings(self, value: Any) -> None:
        raise ValueError(
            "Cannot reset eos_byte_strings after initialization; use spawn_new_eos(...)"
        )

    def encode_tokens(self, tokens: Sequence[Any]) -> list[int]:
        """The LM's token ids of `tokens` (`Token`s; plain bytes are deprecated and warn).

        Raises:
            ValueError: for bytes that are no token of the LM.
        """
        out = []
        warned = False
        for token in tokens:
            token_id = getattr(token, "token_id", None)
            if token_id is None:
                if not warned:
                    warnings.warn(
                        "Passing bytes to encode_tokens is deprecated; pass Tokens",
                        DeprecationWarning,
                        stacklevel=2,
                    )
                    warned = True
                token_id = dict.get(self.token_maps.encode, token)
                if token_id is None:
                    raise ValueError(f"Token {token!r} not in vocabulary")
            out.append(int(token_id))
        return out

    def decode_tokens(self, ids: Sequence[int]) -> list[Any]:
        """The LM's tokens of token ids."""
        decode = self.token_maps.decode
        return [decode[int(i)] for i in ids]

    def tokenize(self, text: str) -> list[Any]:
        """`text` as the LM's tokens (no special tokens added)."""
        return self.decode_tokens(self.model.tokenizer.encode(text, add_special_tokens=False))

    def special_indices(self) -> list[int]:
        """Vocabulary indices of control tokens (BOS, chat markers, `<unused0>`): never allowed by grammars.

        Which ids are control tokens is the tokenizer's word (`control_token_ids`).
        """
        ids = set(control_token_ids(self.model.tokenizer))
        if self.model.bos_token_id is not None:
            ids.add(self.model.bos_token_id)
        position = {int(t): i for i, t in enumerate(self._vocab_ids)}
        return sorted(position[i] for i in ids if i in position)

    def token_ids(self, context: Sequence[Any]) -> list[int]:
        """The LM's token ids of a context of this potential's tokens."""
        return self._vocab_ids[self.encode(context)].tolist() if context else []

    def _temper(self, logps: torch.Tensor) -> np.ndarray:
        """One LM row as float64 numpy, tempered and renormalised.

        numpy, not torch: small torch ops on one vocabulary-sized row pay a large
        fixed cost each with several intra-op threads; numpy's is far smaller.
        """
        row = logps.detach().cpu().numpy().astype(np.float64)
        if self.temperature == 1.0:
            return row
        row = row / self.temperature
        return row - logsumexp(row)

    def _weights(self, logps: torch.Tensor) -> np.ndarray:
        """One LM row -> log-weights over `vocab_eos` (EOS = mass of every EOS token)."""
        row = self._temper(logps)
        out = np.empty(len(self.vocab_eos))
        out[:-1] = row[self._vocab_ids]
        out[-1] = logsumexp(row[self._eos_ids_array])  # -inf without EOS tokens
        return out

    async def _rows(self, ids: list[int]) -> list[torch.Tensor]:
        """LM rows after each prefix of `ids` (the prompt, then one more token each time)."""
        contexts = [self.prompt_ids + ids[:i] for i in range(len(ids) + 1)]
        return list(await asyncio.gather(*(self.model.next_token_logprobs(c) for c in contexts)))

    async def _log_prob(self, ids: list[int], complete: bool) -> float:
        rows = await self._rows(ids)
        total = 0.0
        for row, token in zip(rows, ids, strict=False):
            total += float(self._temper(row)[token])
        if complete:
            total += self._weights(rows[-1])[-1]
        return total

    async def prefix(self, context: Sequence[Any]) -> float:
        ids = self.token_ids(context)
        return await self._log_prob(ids, complete=False) if ids else 0.0

    async def complete(self, context: Sequence[Any]) -> float:
        return await self._log_prob(self.token_ids(context), complete=True)

    async def logw_next(self, context: Sequence[Any]) -> LazyWeights:
        ids = self.prompt_ids + self.token_ids(context)
        return self.make_lazy_weights(self._weights(await self.model.next_token_logprobs(ids)))

    def spawn(
        self,
        prompt_ids: Sequence[int] | None = None,
        eos_tokens: Sequence[Any] | None = None,
        temperature: float | None = None,
        *,
        eos_byte_strings: Sequence[Any] | None = None,
    ) -> PromptedLLM:
        """A PromptedLLM over the same LM, with any of prompt, EOS tokens or temperature changed.

        Raises:
            TypeError: if both `eos_tokens` and `eos_byte_strings` are given.
        """
        if eos_tokens is not None and eos_byte_strings is not None:
            raise TypeError("Cannot specify both eos_tokens and eos_byte_strings")
        same_eos = eos_tokens is None and eos_byte_strings is None
        return PromptedLLM(
            self.model,
            prompt_ids=list(self.prompt_ids if prompt_ids is None else prompt_ids),
            eos_tokens=eos_tokens,
            temperature=self.temperature if temperature is None else temperature,
            eos_byte_strings=eos_byte_strings,
            token_maps=self.token_maps if same_eos else None,
        )

    def spawn_new_eos(
        self, eos_tokens: Sequence[Any] | None = None, *, eos_byte_strings: Any = None
    ) -> PromptedLLM:
        """The same LM and prompt with other EOS tokens."""
        return self.spawn(eos_tokens=eos_tokens, eos_byte_strings=eos_byte_strings)

    def __repr__(self) -> str:
        return (
            f"PromptedLLM({type(self.model).__name__}, prompt={self.prompt!r:.40}, "
            f"{len(self.vocab)} tokens, eos={[bytes(t) for t in self.eos_tokens]!r:.60})"
        )
