"""Byte-level vocabularies: `Token` and `decode_vocab`."""

from genlm_lab.tokenization.token import Token
from genlm_lab.tokenization.vocab import decode_vocab

__all__ = ["Token", "decode_vocab"]
