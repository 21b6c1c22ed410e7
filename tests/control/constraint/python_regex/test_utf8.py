"""python_regex.utf8: the non-ASCII characters a pattern names, and when none can match."""

from __future__ import annotations

import regex

from genlm_lab.control.constraint.python_regex.utf8 import (
    ascii_only,
    spelled_chars,
)


def test_spelled_chars_names_literals_escapes_and_case_variants():
    chars = spelled_chars(r"é\u00C0\N{GREEK SMALL LETTER ALPHA}")
    assert {"é", "É", "À", "à", "α", "Α"} <= set(chars)
    assert spelled_chars("abc") == []


def test_ascii_only_agrees_with_the_engine_on_a_non_ascii_character():
    for pattern, expected in [
        ("[a-z]+", True),
        (r"\d+", False),
        (".", False),
        ("[^a]", False),
        ("é", False),
        ("(?i)k", False),
    ]:
        assert ascii_only(pattern, 0) is expected, pattern
        if expected:
            assert regex.fullmatch(pattern, "é" * 2) is None
