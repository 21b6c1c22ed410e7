"""util.vocab_key: one key per vocabulary, whatever form its byte strings come in."""

from __future__ import annotations

from genlm_lab.tokenization import Token
from genlm_lab.util.vocab_key import vocabulary_key


def test_equal_byte_strings_give_one_key_in_any_form():
    as_bytes = vocabulary_key([b"ab", b"\x00", b""])
    assert vocabulary_key([[97, 98], [0], []]) == as_bytes
    assert vocabulary_key([Token(0, b"ab"), Token(1, b"\x00"), Token(2, b"")]) == as_bytes


def test_the_same_bytes_cut_elsewhere_or_other_extras_give_other_keys():
    keys = {
        vocabulary_key([b"a\x00", b"b"]),
        vocabulary_key([b"a", b"\x00b"]),
        vocabulary_key([b"a\x00b"]),
        vocabulary_key([b"a\x00b", b""]),
        vocabulary_key([b"a\x00", b"b"], [0]),
        vocabulary_key([b"a\x00", b"b"], [1]),
    }
    assert len(keys) == 6
