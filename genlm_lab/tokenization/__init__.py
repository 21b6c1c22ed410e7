"""Byte-level vocabularies: `Token` and `decode_vocab`."""

from genlm_lab.tokenization.bytes import ByteDecoderError, ByteVocabError, check_byte_decoder
from genlm_lab.tokenization.token import Token
from genlm_lab.tokenization.vocab import decode_vocab

__all__ = [
    "ByteDecoderError",
    "ByteVocabError",
    "Token",
    "check_byte_decoder",
    "decode_vocab",
]
