"""PythonRegex: prefix, complete and masks of `regex`-module patterns against brute force."""

from __future__ import annotations

import asyncio
import math

import numpy as np
import pytest
import regex

from genlm_lab.control import EOS, InvalidGrammar, PythonRegex


def run(coro):
    return asyncio.run(coro)


def test_backreferences_and_lookarounds_follow_the_engine():
    p = PythonRegex(r"(a|b)(c|d)\2\1")
    assert run(p.complete(list(b"acca"))) == 0
    assert run(p.complete(list(b"acda"))) == -math.inf
    assert run(p.prefix(list(b"ac"))) == 0 and run(p.prefix(list(b"acd"))) == -math.inf
    mask = p.allowed(list(b"bd"))
    assert list(np.flatnonzero(mask)) == [ord("d")]
    assert run(p.logw_next(list(b"bddb")))[EOS] == 0
    look = PythonRegex(r"(?=\d{3}$)\d+")
    assert run(p.prefix([])) == 0 and run(look.complete(list(b"123"))) == 0
    assert run(look.complete(list(b"1234"))) == -math.inf


@pytest.mark.parametrize(
    "pattern", [r"(a+)+b\1", r"\P{Greek}{2}", r"[α-ω]+é?", r"(?i)straße|ΣΑ", r"(?>x|xy)z"]
)
def test_every_byte_mask_equals_prefix_and_complete(pattern):
    """Factorisation: the mask allows byte b after x iff prefix(x + b); EOS iff complete(x)."""
    p = PythonRegex(pattern)
    texts = [b"", b"a", b"aa", b"\xce", b"\xce\xb1", b"x", b"xy", b"s", b"STRA", b"\xcf"]
    for text in texts:
        if run(p.prefix(list(text))) == -math.inf:
            continue
        mask = p.allowed(list(text))
        for b in range(256):
            assert mask[b] == (run(p.prefix([*text, b])) == 0), (text, b)
        assert mask[256] == (run(p.complete(list(text))) == 0)


def brute_live_tail(pattern: str, text: bytes) -> bool:
    """Some character completing the unfinished UTF-8 tail keeps the partial match alive."""
    for cp in range(0x80, 0x800):
        data = chr(cp).encode()
        if data.startswith(text[-1:]) and regex.fullmatch(
            pattern, text[:-1].decode() + chr(cp), partial=True
        ):
            return True
    return False


@pytest.mark.parametrize("pattern", [r"[α-ω]+", r"\p{Greek}", r"[^\p{L}]", r"ü|x"])
def test_a_prefix_inside_a_two_byte_character_is_live_iff_some_character_completes_it(pattern):
    p = PythonRegex(pattern)
    for lead in range(0xC2, 0xE0):
        text = bytes([lead])
        assert (run(p.prefix(list(text))) == 0) == brute_live_tail(pattern, text), hex(lead)


def test_invalid_utf8_is_dead_and_bad_patterns_raise_one_error():
    p = PythonRegex(r".*")
    assert run(p.prefix(list(b"\xff"))) == -math.inf
    assert run(p.prefix(list(b"\xc3"))) == 0 and run(p.complete(list(b"\xc3"))) == -math.inf
    with pytest.raises(InvalidGrammar, match=r"'\(a': missing \)"):
        PythonRegex("(a")
    with pytest.raises(ValueError, match="str"):
        PythonRegex(b"a")
    with pytest.raises(ValueError, match="weight zero"):
        p.allowed(list(b"\xff"))


@pytest.mark.parametrize("pattern", [r"[^\x00-\U0010FFFF]", r"ab[^\x00-\U0010FFFF]c", r"(?!)"])
def test_a_python_regex_that_matches_nothing_raises(pattern):
    with pytest.raises(InvalidGrammar, match="matches no text"):
        PythonRegex(pattern)


@pytest.mark.parametrize("pattern", [r"x|[^\x00-\U0010FFFF]", r"(a)\1", r"[^\s\S]"])
def test_a_python_regex_with_a_match_is_kept(pattern):
    # `regex` reads [^\s\S] as a set that holds "x" (unlike `re`): it is not empty
    p = PythonRegex(pattern)
    assert any(p.accepts(t) for t in (b"x", b"aa"))


def test_a_pattern_nested_too_deep_is_one_invalid_grammar_not_a_recursion_error():
    PythonRegex("(" * 100 + "a" + ")" * 100)  # deep, and still compiles
    with pytest.raises(InvalidGrammar, match="nested too deep to compile"):
        PythonRegex("(" * 400 + "a" + ")" * 400)
