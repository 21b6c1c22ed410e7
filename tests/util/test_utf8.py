"""util.utf8: splitting bytes at an unfinished character, and its code points, by brute force."""

from __future__ import annotations

from genlm_lab.util.utf8 import char_range, split_utf8

SAMPLE = "aé€𝄞z"


def test_split_utf8_keeps_complete_characters_and_the_unfinished_tail():
    data = SAMPLE.encode()
    for cut in range(len(data) + 1):
        text, tail = split_utf8(data[:cut])
        assert (text.encode() + tail) == data[:cut]
        assert SAMPLE.startswith(text)
        assert len(tail) < 4
        if tail:
            assert tail[0] >= 0xC0  # a lead byte starts the unfinished character
    assert split_utf8(b"\xff") is None
    assert split_utf8(b"a\x80") is None


def test_char_range_is_every_code_point_whose_encoding_starts_with_the_tail():
    for tail in (b"\xc3", b"\xe2", b"\xe2\x82", b"\xf0\x9d", b"\xf0\x9d\x84", b"\xe0", b"\xf4"):
        got = char_range(tail)
        brute = [
            c
            for c in range(0x80, 0x110000)
            if not 0xD800 <= c < 0xE000 and chr(c).encode().startswith(tail)
        ]
        assert set(brute) <= set(got)
        # the range holds nothing else but surrogates (which have no UTF-8 encoding)
        assert all(0xD800 <= c < 0xE000 for c in set(got) - set(brute))
