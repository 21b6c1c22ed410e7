"""Byte-level vocabularies: `Token`, `decode_vocab`, and `inspect_vocab` (how it decoded)."""

from genlm_lab.tokenization.token import Token
from genlm_lab.tokenization.vocab import VocabDecoding, decode_vocab, inspect_vocab

__all__ = ["Token", "VocabDecoding", "decode_vocab", "inspect_vocab"]
