"""check_byte_decoder / get_byte_vocab: the GPT-2 byte alphabet against a real byte-level tokenizer."""

from unittest.mock import MagicMock

import pytest

from genlm_lab.tokenization import ByteDecoderError, ByteVocabError, check_byte_decoder
from genlm_lab.tokenization._pieces import gpt2_unicode_to_byte as _gpt2_unicode_to_byte
from genlm_lab.tokenization.vocab import get_byte_vocab


def test_gpt2_alphabet_passes_on_a_byte_level_tokenizer(smollm2_tokenizer):
    check_byte_decoder(smollm2_tokenizer, _gpt2_unicode_to_byte())  # raises if wrong


def test_a_value_that_is_not_a_byte_is_named(smollm2_tokenizer):
    with pytest.raises(ByteDecoderError, match="999"):
        check_byte_decoder(smollm2_tokenizer, {"a": 999})


def test_missing_characters_are_counted(smollm2_tokenizer):
    table = dict(_gpt2_unicode_to_byte())
    del table["Ġ"]  # the space
    with pytest.raises(ByteDecoderError, match="no byte for 1 character"):
        check_byte_decoder(smollm2_tokenizer, table)


def test_a_wrong_but_complete_map_fails_the_round_trip(smollm2_tokenizer):
    table = dict(_gpt2_unicode_to_byte())
    table["a"], table["b"] = table["b"], table["a"]
    with pytest.raises(ByteDecoderError, match="round-trip"):
        check_byte_decoder(smollm2_tokenizer, table)


def test_undecodable_tokenizer_names_its_declared_decoder():
    tok = MagicMock()
    tok.name_or_path = "x"
    tok.backend_tokenizer.to_str.return_value = '{"decoder": {"type": "WordPiece"}}'
    with pytest.raises(ByteVocabError, match=r"WordPiece\) is neither ByteLevel"):
        get_byte_vocab(tok)


def test_get_byte_vocab_matches_decode_vocab(smollm2_tokenizer):
    from genlm_lab.tokenization import decode_vocab

    assert get_byte_vocab(smollm2_tokenizer) == [
        t.byte_string for t in decode_vocab(smollm2_tokenizer)[0]
    ]
