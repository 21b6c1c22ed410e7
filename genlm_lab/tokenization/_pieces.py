"""Per-piece converters: how each vocabulary family spells bytes in its token strings.

A converter turns one raw token string (`convert_ids_to_tokens`) into bytes,
or raises `KeyError` when the piece is not spelled in its family's alphabet.
`vocab.py` tries them and keeps the one whose bytes reproduce the tokenizer.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from typing import Any

#: First byte of the bytes given to ids that have no text: 0xFF never occurs in
#: UTF-8, so no text (and no constraint over text) ever contains these tokens.
UNMAPPED_LEAD = b"\xff"

_BYTE_TOKEN = re.compile(r"^<0x([0-9A-Fa-f]{2})>$")
_SPIECE_SPACE = "\u2581"

Converter = Callable[[str], bytes]


def unmapped_bytes(token_id: int, piece: str | None) -> bytes:
    """The bytes of an id no strategy can map: 0xFF, then the piece (or `<unused_ID>`)."""
    return UNMAPPED_LEAD + (piece if piece is not None else f"<unused_{token_id}>").encode()


def byte_token(piece: str) -> int | None:
    """The byte a SentencePiece `<0xXX>` piece stands for, else None."""
    match = _BYTE_TOKEN.match(piece)
    return int(match.group(1), 16) if match else None


@cache
def gpt2_unicode_to_byte() -> dict[str, int]:
    """The GPT-2 map from printable characters back to the 256 byte values.

    Printable Latin-1 bytes map to themselves; the 68 others (controls,
    space, soft hyphen, ...) map to code points 256, 257, ... in byte order.
    """
    printable = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("¡"), ord("¬") + 1))
        + list(range(ord("®"), ord("ÿ") + 1))
    )
    chars = {b: chr(b) for b in printable}
    shift = 0
    for b in range(256):
        if b not in chars:
            chars[b] = chr(256 + shift)
            shift += 1
    return {c: b for b, c in chars.items()}


def char_map(char_to_byte: dict[str, int]) -> Converter:
    """A converter for vocabularies that spell each byte as one character (byte-level BPE)."""
    table = {ord(c): chr(b) for c, b in char_to_byte.items()}
    alphabet = frozenset(char_to_byte)

    def convert(piece: str) -> bytes:
        if not alphabet.issuperset(piece):
            raise KeyError(piece)
        return piece.translate(table).encode("latin-1")

    return convert


def sentencepiece(piece: str) -> bytes:
    """SentencePiece: `<0xXX>` is one byte, `▁` a space, the rest UTF-8 text."""
    b = byte_token(piece)
    if b is not None:
        return bytes([b])
    return piece.replace(_SPIECE_SPACE, " ").encode("utf-8")


def own_id_bytes(tokenizer: Any) -> dict[int, bytes] | None:
    """Ids to bytes where the tokenizer holds them itself (tiktoken-style), else None.

    Looks for a `decoder` dict of id -> bytes, or `mergeable_ranks` of
    bytes -> id (the tiktoken layout that remote-code tokenizers keep).
    """
    attrs = getattr(tokenizer, "__dict__", {})
    decoder = attrs.get("decoder")
    if isinstance(decoder, dict) and decoder:
        if all(isinstance(k, int) and isinstance(v, bytes) for k, v in decoder.items()):
            return {int(k): bytes(v) for k, v in decoder.items()}
    ranks = attrs.get("mergeable_ranks")
    if isinstance(ranks, dict) and ranks:
        if all(isinstance(k, bytes) and isinstance(v, int) for k, v in ranks.items()):
            return {int(v): bytes(k) for k, v in ranks.items()}
    return None


def own_byte_decoder(tokenizer: Any) -> dict[str, int] | None:
    """The tokenizer's own character -> byte map (slow GPT-2-style tokenizers), else None."""
    found = getattr(tokenizer, "byte_decoder", None)
    if isinstance(found, dict) and found and all(isinstance(v, int) for v in found.values()):
        return found
    return None
