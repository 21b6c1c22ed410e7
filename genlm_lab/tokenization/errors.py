"""What tokenization raises: a vocabulary that cannot be decoded to bytes.

`decode_vocab` raises `ByteVocabError` when no byte encoding it knows decodes a
tokenizer's vocabulary; `check_byte_decoder` raises `ByteDecoderError` when a
character-to-byte map does not decode it exactly.
"""

from __future__ import annotations

from genlm_lab.util.errors import GenlmLabError

__all__ = ["ByteDecoderError", "ByteVocabError"]


class ByteVocabError(GenlmLabError, ValueError):
    """A tokenizer's vocabulary cannot be decoded to bytes."""


class ByteDecoderError(GenlmLabError, ValueError):
    """A character-to-byte map does not decode a tokenizer's vocabulary."""
