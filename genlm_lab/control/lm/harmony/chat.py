"""`HarmonyChat`: gpt-oss's chat format over a tokenizer's tokens, and its channels.

genlm-control's name and methods: the tokenizer's bytes per token id (the
same tables a `PromptedLLM` keeps, the tokenizer's EOS left out of
`potential_vocab`), and the `analysis`, `commentary` and `final` channels of
an assistant turn, each as its content tokens and whether it is still open.
The format itself is `grammar`'s.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from functools import cached_property
from typing import Any

from genlm_lab.control.core.constant import EndOfSequence
from genlm_lab.control.errors import HarmonyFormatError
from genlm_lab.control.lm.harmony.grammar import (
    CHANNELS,
    HEADER_ALPHABET,
    SPECIAL_TEXTS,
    Reading,
    read,
)
from genlm_lab.control.lm.token_maps import TokenMappings
from genlm_lab.tokenization import Token, decode_vocab

__all__ = ["HarmonyChat"]

Channels = dict[str, dict[str, Any] | None]


def _encode(tokenizer: Any, text: str) -> list[int]:
    """`tokenizer.encode(text)` without a BOS or other added tokens, where it takes the option."""
    try:
        return list(tokenizer.encode(text, add_special_tokens=False))
    except TypeError:
        return list(tokenizer.encode(text))


class HarmonyChat:
    """The Harmony chat format (gpt-oss's) over a tokenizer: read a turn's channels.

    Args:
        tokenizer: a tokenizer with `encode` and `decode` that writes each of
            Harmony's specials (`<|start|>`, `<|channel|>`, `<|message|>`,
            `<|end|>`, `<|call|>`, `<|return|>`, `<|constrain|>`) as one token,
            as gpt-oss's o200k_harmony does.

    Attributes:
        tokenizer: the tokenizer.
        token_maps: its `TokenMappings`, EOS being the tokenizer's EOS token.
        potential_vocab: every token but the EOS ones (a potential's vocabulary).
        start_token: `<|start|>`'s token; likewise `channel_token`,
            `message_token`, `end_token`, `call_token`, `return_token` and
            `constrain_token` for the other specials.
        analysis_tokens: the channel name "analysis" as the tokenizer writes
            it; likewise `commentary_tokens` and `final_tokens`.

    Raises:
        TypeError: if `tokenizer` lacks `encode` or `decode`.
        ValueError: naming the specials it does not write as one token, or if
            it has no EOS token.
    """

    def __init__(self, tokenizer: Any) -> None:
        missing = [m for m in ("encode", "decode") if not callable(getattr(tokenizer, m, None))]
        if missing:
            raise TypeError(
                f"HarmonyChat needs a tokenizer with encode and decode; "
                f"{type(tokenizer).__name__} has no {' or '.join(missing)}"
            )
        ids = {name: _encode(tokenizer, text) for name, text in SPECIAL_TEXTS.items()}
        bad = [SPECIAL_TEXTS[name] for name, found in ids.items() if len(found) != 1]
        if bad:
            raise ValueError(
                f"the tokenizer writes {', '.join(bad)} as more than one token: it does not "
                "write the Harmony chat format (gpt-oss's o200k_harmony vocabulary does)"
            )
        if getattr(tokenizer, "eos_token_id", None) is None:
            raise ValueError("the tokenizer has no eos_token_id (gpt-oss's is <|return|>)")
        self.tokenizer = tokenizer
        byte_vocab, _ = decode_vocab(tokenizer)
        eos = bytes(byte_vocab[tokenizer.eos_token_id])
        self.token_maps = TokenMappings.create(byte_vocab, eos_byte_strings=[eos])
        self.potential_vocab = self.token_maps.potential_vocab
        decode = self.token_maps.decode
        self.specials: dict[str, Token] = {n: decode[found[0]] for n, found in ids.items()}
        self._kinds = {token: name for name, token in self.specials.items()}
        self.start_token = self.specials["start"]
        self.channel_token = self.specials["channel"]
        self.message_token = self.specials["message"]
        self.end_token = self.specials["end"]
        self.call_token = self.specials["call"]
        self.return_token = self.specials["return"]
        self.constrain_token = self.specials["constrain"]
        self.analysis_tokens = self.decode_tokens(_encode(tokenizer, "analysis"))
        self.commentary_tokens = self.decode_tokens(_encode(tokenizer, "commentary"))
        self.final_tokens = self.decode_tokens(_encode(tokenizer, "final"))
        self._first_id: dict[bytes, int] = {}

    @cached_property
    def header_candidates(self) -> list[tuple[int, str]]:
        """`(index in potential_vocab, text)` of the tokens a header may hold (ASCII letters,
        digits, `_.-=` and spaces; not the specials): the only ones a header row can allow."""
        return [
            (i, text)
            for i, t in enumerate(self.potential_vocab)
            if self.kind_of(t) is None
            and (text := bytes(t).decode("latin-1"))
            and set(text) <= HEADER_ALPHABET
        ]

    # ------------------------------------------------------------ reading
    def read(self, tokens: Sequence[Any]) -> Reading:
        """Where `tokens` (a trailing EOS ends the turn) stand in a chat (`grammar.read`).

        Raises:
            HarmonyFormatError: naming the first token no chat goes on with.
        """
        return read(tokens, self._kinds)

    def kind_of(self, token: Any) -> str | None:
        """The name of the Harmony special `token` is (`"end"`, ...), or None."""
        return self._kinds.get(token)

    def validate_harmony_format(self, context: str | Sequence[Any]) -> bool:
        """Whether `context` (a string, or tokens perhaps ending with EOS) starts a Harmony chat.

        Raises:
            TypeError: if `context` is neither a string nor a list of tokens.
        """
        tokens = self._tokens_of(context)
        try:
            self.read(tokens)
        except HarmonyFormatError:
            return False
        return True

    def extract_channel_content(self, token_bytes: Sequence[Any], i: int) -> dict[str, Any] | None:
        """The content after the `<|message|>` at index `i`, up to its message's closer.

        Returns:
            `{"content": tokens, "is_prefix": no closer yet}`; None if `i` is
            past the end.

        Raises:
            HarmonyFormatError: if the token at `i` is not `<|message|>`.
        """
        if i >= len(token_bytes):
            return None
        if self.kind_of(token_bytes[i]) != "message":
            raise HarmonyFormatError(f"token {i} ({token_bytes[i]!r:.40}) is not <|message|>")
        stop = i + 1
        while stop < len(token_bytes):
            token = token_bytes[stop]
            if isinstance(token, EndOfSequence) or self.kind_of(token) in ("end", "call", "return"):
                break
            stop += 1
        return {"content": list(token_bytes[i + 1 : stop]), "is_prefix": stop == len(token_bytes)}

    def extract_harmony_channels_from_tokens(self, token_bytes: Sequence[Any]) -> Channels:
        """Each channel's content tokens and whether it is still open, or None where absent.

        Returns:
            `{"analysis": ..., "final": ..., "commentary": ...}`, each None or
            `{"content": list of tokens, "is_prefix": bool}`. A channel whose
            header is not finished is absent; a trailing EOS closes the last.

        Raises:
            HarmonyFormatError: if `token_bytes` starts no Harmony chat.
        """
        reading = self.read(token_bytes)
        out: Channels = dict.fromkeys(("analysis", "final", "commentary"))
        for m in reading.messages:
            stop = len(token_bytes) if m.stop is None else m.stop
            out[m.channel] = {
                "content": list(token_bytes[m.start : stop]),
                "is_prefix": m.stop is None,
            }
        return out

    def extract_harmony_channels_from_string(
        self, string: str, add_special_tokens: bool = False
    ) -> Channels:
        """`extract_harmony_channels_from_tokens` of the string's tokens."""
        ids = self.tokenizer.encode(string, add_special_tokens=add_special_tokens)
        return self.extract_harmony_channels_from_tokens(self.decode_tokens(list(ids)))

    # ------------------------------------------------------------ ids and tokens
    def encode_tokens(self, tokens: Sequence[Any]) -> list[int]:
        """Token ids of `tokens`: a `Token`'s own id, or the first id that spells given bytes.

        Raises:
            ValueError: for bytes no token spells.
            TypeError: for anything but a `Token` or bytes.
        """
        out = []
        for pos, token in enumerate(tokens):
            if isinstance(token, Token):
                out.append(token.token_id)
            elif isinstance(token, (bytes, bytearray)):
                if not self._first_id:
                    for t in reversed(self.token_maps.decode):
                        self._first_id[bytes(t)] = t.token_id
                if bytes(token) not in self._first_id:
                    raise ValueError(f"token {pos} ({bytes(token)!r:.40}) is in no token's bytes")
                out.append(self._first_id[bytes(token)])
            else:
                raise TypeError(f"token {pos} is a {type(token).__name__}, not a Token or bytes")
        return out

    def decode_tokens(self, ids: Sequence[int]) -> list[Token]:
        """The tokens of token ids.

        Raises:
            ValueError: for an id outside the vocabulary (or not an integer).
        """
        decode = self.token_maps.decode
        out = []
        for i in ids:
            try:
                index = operator.index(i) if not isinstance(i, bool) else None
            except TypeError:
                index = None
            if index is None or not 0 <= index < len(decode):
                raise ValueError(
                    f"token id {i!r} is not an id of this vocabulary ({len(decode)} tokens)"
                )
            out.append(decode[index])
        return out

    def _tokens_of(self, context: str | Sequence[Any]) -> list[Any]:
        if isinstance(context, str):
            return self.decode_tokens(_encode(self.tokenizer, context))
        if isinstance(context, (bytes, bytearray)) or not isinstance(context, Sequence):
            raise TypeError(
                f"a context is a string or a list of tokens, got {type(context).__name__}"
            )
        return list(context)

    def __repr__(self) -> str:
        return f"HarmonyChat({len(self.token_maps.decode)} tokens, channels {', '.join(CHANNELS)})"
