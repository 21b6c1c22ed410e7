"""Byte-level vocabularies: `Token`, `decode_vocab`, `inspect_vocab` and `TokenizerReport`."""

from genlm_lab.tokenization.report import TokenizerReport
from genlm_lab.tokenization.token import Token
from genlm_lab.tokenization.vocab import VocabDecoding, decode_vocab, inspect_vocab

__all__ = ["Token", "TokenizerReport", "VocabDecoding", "decode_vocab", "inspect_vocab"]
