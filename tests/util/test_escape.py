"""Byte escaping: readable, reversible in meaning, and never injects markup."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from genlm_lab.util import byte_label, escape_bytes, html_bytes


def test_printable_utf8_is_kept_and_the_rest_escaped():
    assert escape_bytes("héllo, 世界".encode()) == "héllo, 世界"
    assert escape_bytes(b"a\nb\tc\r") == "a\\nb\\tc\\r"
    assert escape_bytes(b"\xff\x00") == "\\xff\\x00"
    assert escape_bytes(b" x", visible_space=True) == "␣x"


def test_incomplete_utf8_sequences_are_escaped_byte_by_byte():
    euro = "€".encode()
    assert escape_bytes(euro[:2]) == "\\xe2\\x82"
    assert escape_bytes(euro[:2] + b"a") == "\\xe2\\x82a"


@given(st.text())
def test_valid_text_round_trips_when_printable(text):
    if all(c.isprintable() and c != "\\" for c in text):
        assert escape_bytes(text.encode()) == text


@given(st.binary(max_size=30))
def test_html_output_never_contains_raw_markup(data):
    out = html_bytes(data)
    assert "<" not in out and ">" not in out and '"' not in out


def test_byte_slot_labels():
    assert byte_label(256) == "EOT"
    assert byte_label(257) == "EOS" and byte_label(None) == "EOS"
    assert byte_label(ord(" ")) == "␣"
    assert byte_label(0xFF) == "\\xff"


@pytest.mark.parametrize("bad", [-1, 258, 1000, 2.5])
def test_byte_slot_label_of_an_impossible_slot_names_it(bad):
    # bytes([258]) said only "bytes must be in range(0, 256)"; 2.5 gave a TypeError
    with pytest.raises(ValueError, match=f"byte slot {bad!r} is none of"):
        byte_label(bad)


def test_a_backslash_is_doubled_so_escapes_are_never_ambiguous():
    assert escape_bytes(b"\\n") == "\\\\n" != escape_bytes(b"\n")
    assert escape_bytes(b"\\xff") != escape_bytes(b"\xff")


@given(st.binary(max_size=8), st.binary(max_size=8))
def test_different_bytes_never_look_the_same(a, b):
    if a != b:
        assert escape_bytes(a) != escape_bytes(b)
