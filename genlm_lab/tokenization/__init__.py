"""Byte-level vocabularies: `Token`, `decode_vocab`, `inspect_vocab` and `TokenizerReport`."""

from genlm_lab.tokenization.bytes import ByteDecoderError, ByteVocabError, check_byte_decoder
from genlm_lab.tokenization.control_tokens import control_token_ids
from genlm_lab.tokenization.report import TokenizerReport
from genlm_lab.tokenization.token import Token
from genlm_lab.tokenization.vocab import VocabDecoding, decode_vocab, inspect_vocab

__all__ = [
    "ByteDecoderError",
    "ByteVocabError",
    "Token",
    "TokenizerReport",
    "VocabDecoding",
    "check_byte_decoder",
    "control_token_ids",
    "decode_vocab",
    "inspect_vocab",
]
