"""Checks on a tokenizer's byte encoding, and the errors `decode_vocab` raises (from `errors`).

`check_byte_decoder` verifies a character-to-byte map (the GPT-2 byte
alphabet, or a tokenizer's own `byte_decoder`) against a tokenizer before
its vocabulary is decoded with it: every character of the vocabulary must map
to one byte, and encoding sample strings must come back byte for byte.
genlm-backend exposes the same names in `genlm.backend.tokenization.bytes`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from genlm_lab.tokenization.errors import ByteDecoderError, ByteVocabError

__all__ = ["ByteDecoderError", "ByteVocabError", "check_byte_decoder", "decoder_kinds"]

#: Strings a byte decoder must reproduce (spaces, newlines, accents, CJK, emoji).
_CHECK_SAMPLES = (
    "Hello, world!  two spaces\tand a tab\nnew line",
    "naïve café — déjà vu ß",
    "日本語のテキスト 😀🎉",
)


def _special_pieces(tokenizer: Any) -> set[str]:
    try:
        return set(tokenizer.get_added_vocab())
    except (AttributeError, TypeError):
        return set()


def check_byte_decoder(tokenizer: Any, byte_decoder: Mapping[str, int]) -> None:
    """Raise `ByteDecoderError` unless `byte_decoder` decodes `tokenizer`'s vocabulary exactly.

    Args:
        tokenizer: an HF tokenizer (`get_vocab`, `encode`, `convert_ids_to_tokens`).
        byte_decoder: character -> byte value (0..255).

    Raises:
        ByteDecoderError: naming a character with no byte or a value that is not
            a byte, or a sample string that does not round-trip.
    """
    for char, value in byte_decoder.items():
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 255:
            raise ByteDecoderError(f"byte decoder maps {char!r} to {value!r}, not a byte (0..255)")
    special = _special_pieces(tokenizer)
    missing = sorted(
        {c for piece in tokenizer.get_vocab() if piece not in special for c in piece}
        - set(byte_decoder)
    )
    if missing:
        shown = ", ".join(repr(c) for c in missing[:5])
        raise ByteDecoderError(
            f"byte decoder has no byte for {len(missing)} character(s) of the vocabulary "
            f"({shown}{', ...' if len(missing) > 5 else ''})"
        )
    for text in _CHECK_SAMPLES:
        ids = tokenizer.encode(text, add_special_tokens=False)
        pieces = tokenizer.convert_ids_to_tokens(ids)
        got = bytes(byte_decoder[c] for piece in pieces for c in piece)
        if got != text.encode("utf-8"):
            raise ByteDecoderError(
                f"byte decoder does not round-trip {text!r}: got {got!r} from pieces {pieces!r}"
            )


def decoder_kinds(tokenizer: Any) -> set[str] | None:
    """Types of the decoder(s) a fast tokenizer declares (`{"ByteLevel"}`), or None if unknown."""
    try:
        spec = json.loads(tokenizer.backend_tokenizer.to_str()).get("decoder")
    except (AttributeError, TypeError, ValueError):
        return None
    kinds: set[str] = set()
    stack = [spec]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if isinstance(node.get("type"), str):
                kinds.add(node["type"])
            stack.extend(node.get("decoders") or [])
    return kinds
