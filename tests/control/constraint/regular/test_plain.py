"""`plain_ascii_regex`: the regexes every engine reads alike (their automaton is exact)."""

from __future__ import annotations

import pytest

from genlm_lab.control.constraint.regular.plain import plain_ascii_regex


@pytest.mark.parametrize(
    ("pattern", "plain"),
    [
        (r"[ab]+@(ab|c)+\.c", True),
        (r"a{2,3}(b|cd)*?", True),
        (r"a.b", False),
        (r"\d+", False),
        (r"[^a]", False),
        (r"^a$", False),
        (r"(a)\1", False),
        (r"(?i)a", False),
        ("é", False),
        (r"a(?=b)", False),
        (r"[a[bc]]", False),  # Rust nests the class; Python reads "[a[bc]" then "]"
        (r"a{1, 2}", False),  # Rust reads a repeat, Python text
        (r"x?+", False),  # Rust reads (x?)+, Python a possessive x?
        (r"[]b]", False),  # interegular reads an empty class, then "b]"
        (r"[--a-c]", False),  # Rust: a set operation; Python: the range - to a
        (r"[~~]", False),
        (r"[\]a]", True),
    ],
)
def test_plain_ascii_regexes_are_those_every_engine_reads_alike(pattern, plain):
    assert plain_ascii_regex(pattern) is plain
