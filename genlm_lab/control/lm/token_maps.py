"""`TokenMappings`: a language model's tokens, which of them end a sequence, and the rest.

genlm-control 0.4 keeps these tables on `PromptedLLM.token_maps`; code
written for it reads `token_maps.decode`, `.encode` and `.eos_idxs`.
"""

from __future__ import annotations

import warnings
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["TokenIndex", "TokenMappings", "eos_order"]


class TokenIndex(dict):
    """Token -> position in `decode`. Indexing by plain bytes still works, with a warning."""

    def __getitem__(self, key: Hashable) -> int:
        if type(key) is bytes:
            warnings.warn(
                "Indexing token_maps.encode by bytes is deprecated (genlm-control 0.4); "
                "index by the Token",
                DeprecationWarning,
                stacklevel=2,
            )
        return super().__getitem__(key)


def eos_order(decode: Sequence[Any], eos_byte_strings: Sequence[Any]) -> list[int]:
    """Ids of the tokens whose bytes are an EOS byte string: each string's first, then duplicates.

    Raises:
        ValueError: for a byte string given twice (a `Token` counts as its
            bytes) or one that no token of `decode` spells.
    """
    wanted = [bytes(b) for b in eos_byte_strings]
    if len(set(wanted)) != len(wanted):
        raise ValueError(f"Duplicate eos byte strings in {wanted!r}")
    ids_of: dict[bytes, list[int]] = {b: [] for b in wanted}
    for i, token in enumerate(decode):
        data = bytes(token)
        if data in ids_of:
            ids_of[data].append(i)
    missing = [b for b, ids in ids_of.items() if not ids]
    if missing:
        raise ValueError(
            f"EOS token not in language model vocabulary: {missing!r} is no token of it"
        )
    first = [ids[0] for ids in ids_of.values()]
    rest = sorted(i for ids in ids_of.values() for i in ids[1:])
    return first + rest


@dataclass(frozen=True, eq=True)
class TokenMappings:
    """The token tables of a prompted language model.

    Attributes:
        decode: every token of the model, indexed by token id.
        encode: token -> its id (a `TokenIndex`).
        eos_idxs: ids of the tokens that end a sequence.
        eos_byte_strings: their bytes, one per EOS byte string asked for.
        eos_token_objs: the EOS tokens themselves.
        potential_vocab: the other tokens: the potential's vocabulary.
    """

    decode: list[Any]
    encode: TokenIndex
    eos_idxs: list[int]
    eos_byte_strings: list[bytes]
    eos_token_objs: list[Any]
    potential_vocab: list[Any]

    @classmethod
    def create(
        cls,
        decode: Sequence[Any],
        eos_byte_strings: Sequence[Any] | None = None,
        *,
        eos_tokens: Sequence[Any] | None = None,
    ) -> TokenMappings:
        """The tables for `decode` with the tokens spelling `eos_byte_strings` as EOS.

        Every token whose bytes are an EOS byte string is EOS, duplicates
        included. `eos_tokens=` is the deprecated name of `eos_byte_strings=`.

        Raises:
            TypeError: if both names are given.
            ValueError: see `eos_order`.
        """
        if eos_tokens is not None:
            if eos_byte_strings is not None:
                raise TypeError("Cannot specify both eos_tokens and eos_byte_strings")
            warnings.warn(
                "eos_tokens is deprecated (genlm-control 0.4); use eos_byte_strings",
                DeprecationWarning,
                stacklevel=2,
            )
            eos_byte_strings = eos_tokens
        return cls.from_ids(decode, eos_order(decode, eos_byte_strings or []))

    @classmethod
    def from_ids(cls, decode: Sequence[Any], eos_idxs: Sequence[int]) -> TokenMappings:
        """The tables with the tokens of ids `eos_idxs` as EOS (in that order)."""
        decode = list(decode)
        eos = list(dict.fromkeys(int(i) for i in eos_idxs))
        strings = list(dict.fromkeys(bytes(decode[i]) for i in eos))
        skip = set(eos)
        return cls(
            decode=decode,
            encode=TokenIndex((t, i) for i, t in enumerate(decode)),
            eos_idxs=eos,
            eos_byte_strings=strings,
            eos_token_objs=[decode[i] for i in eos],
            potential_vocab=[t for i, t in enumerate(decode) if i not in skip],
        )
