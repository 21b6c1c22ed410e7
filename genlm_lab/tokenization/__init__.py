"""Byte-level vocabularies: `Token` and `decode_vocab`."""

from genlm_lab.tokenization.token import Token

__all__ = ["Token"]
