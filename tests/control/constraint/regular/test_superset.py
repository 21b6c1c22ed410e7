"""`regex_superset_dfa`: every text a regex matches, in Python's, `regex`'s or llguidance's reading.

Every short text over a small alphabet (ASCII, a control byte and
non-ASCII letters and digits) is matched by the three engines; whatever any
of them matches, the automaton must accept (so its token count is a lower
bound), and on plain ASCII texts it must agree with Python's `re`, so the
bound is not loose for nothing. A budget built on it then refuses, on a
vocabulary too large to search, exactly the prefixes brute force finds
cannot end in time.
"""

from __future__ import annotations

import asyncio
import itertools
import re

import pytest
import regex

from genlm_lab.control import BoolCFG, BoolFSA, PythonRegex
from genlm_lab.control.constraint.budget import fit_check_for, superset_dfa
from genlm_lab.control.constraint.regular.superset import regex_superset_dfa
from tests.control._toys import live_contexts, toy_llm

PATTERNS = {
    r"\d{2}-\d": "1-a٣",
    r"[\w.]+@\w": "a.@_é",
    r'"[^"]*"': '"a\x1cé',
    r"a.b": "ab\né",
    r"x\s*y": "xy \x1c\u00a0",
    r"é+[à-ü]?": "éàa",
    r"(ab|c){2,3}d?": "abcd",
    r"[a-c0-2]+|z[^z]": "a1zé",
}


def run(coro):
    return asyncio.run(coro)


def _ours(dfa, text: str) -> bool:
    return bool(dfa.final[dfa.run(dfa.start, text.encode("utf-8"))])


@pytest.mark.parametrize("pattern", list(PATTERNS))
def test_the_automaton_accepts_whatever_any_engine_matches(pattern):
    dfa = regex_superset_dfa(pattern)
    assert dfa is not None
    llguidance = BoolFSA.from_regex(pattern)
    matched = 0
    for n in range(5):
        for chars in itertools.product(PATTERNS[pattern], repeat=n):
            text = "".join(chars)
            theirs = (
                re.fullmatch(pattern, text) is not None,
                regex.fullmatch(pattern, text) is not None,
                run(llguidance.complete(list(text.encode("utf-8")))) == 0,
            )
            ours = _ours(dfa, text)
            if any(theirs):
                assert ours, (text, theirs)
            elif text.isascii() and not re.search("[\x1c-\x1f\n]", text):
                assert not ours, text  # no looser than it must be (`.` may take a newline)
            matched += any(theirs)
    assert matched > 0


@pytest.mark.parametrize(
    "pattern",
    [r"[[:alpha:]]", r"\p{L}", r"a\ud800", r"a{1, 3}", r"(?:foo){e<=1}", r"[\w--\d]"],
)
def test_what_the_dialects_may_read_apart_is_not_read(pattern):
    # a POSIX class, `regex`'s syntax, a surrogate (no UTF-8), Rust's spaced repeat,
    # fuzzy matching, a set operation
    assert regex_superset_dfa(pattern) is None


WIDENED = {
    r"^a+$": "ab",  # anchors match the empty text
    r"\ba\Bb-\bb\b": "ab-",
    r"(?<!x)a(?=b)b?": "abx",  # lookarounds too
    r"(a|bc)-\1": "abc-",  # a backreference: any text of its group
    r"(a)?(?(1)b|c)": "abc",  # a conditional: either branch
    r"(?i)k[a-c]\w": "kKaBC_\u212a",  # both cases, and the Kelvin sign
    r"(?i:é)x": "éÉx",
    r"a*+a|b?+": "ab",  # possessive
}


@pytest.mark.parametrize("pattern", list(WIDENED))
def test_what_only_narrows_a_match_is_widened(pattern):
    dfa = regex_superset_dfa(pattern)
    assert dfa is not None
    matched = 0
    for n in range(5):
        for chars in itertools.product(WIDENED[pattern], repeat=n):
            text = "".join(chars)
            if re.fullmatch(pattern, text) or regex.fullmatch(pattern, text):
                assert _ours(dfa, text), text
                matched += 1
    assert matched > 0


def test_a_long_repeat_is_given_up_not_written_out():
    assert regex_superset_dfa(r"\w{1,5000}") is None
    assert regex_superset_dfa(r"[ab]{3}\d{2,40}", max_states=8) is None  # too many states


@pytest.mark.parametrize("make", [BoolFSA.from_regex, PythonRegex])
def test_a_regex_with_classes_is_refused_far_from_the_end_on_its_relaxation(make):
    junk = [b"x" * n for n in range(1, 70)]  # more tokens than max_branch: no deep search
    vocab = [b"1", b"12", b"-", b"2-", b"a", *junk, b"<eos>"]
    llm = toy_llm(vocab=vocab)
    # more than 8 tokens from the end a search is not even tried
    constraint = make(r"\d{12}-\d{3}").coerce(llm, f=b"".join)  # 10 tokens at least
    finisher = fit_check_for(constraint)
    assert finisher.lower is not None
    plain = fit_check_for(constraint, lower=None)
    seen = set()
    for max_tokens in (9, 11):
        live = run(live_contexts(constraint, max_tokens))
        seen |= set(live.values())
        assert {c: run(finisher.fits(list(c), max_tokens - len(c))) for c in live} == live
        kept = {c: run(plain.fits(list(c), max_tokens - len(c))) for c in live}
        assert all(kept[c] for c, ends in live.items() if ends)
    assert seen == {True, False}
    assert plain.stats["unproven"] > 0 and finisher.stats["refused"] > plain.stats["refused"]


# What dialects read apart (found by fuzzing against the three engines): the automaton
# must hold each text, or the relaxation must give up
TRAPS = [
    (BoolFSA.from_regex, r"\d{1, 3}", b"12"),  # Rust: a repeat; Python: text
    (BoolFSA.from_regex, r"a{ 2}", b"aa"),
    (BoolFSA.from_regex, r"x?+", b"xx"),  # Rust: (x?)+; Python: possessive
    (BoolFSA.from_regex, r"\d{2}+", b"1234"),
    (BoolFSA.from_regex, r'[^\s"]+', b"\x1c"),  # Rust's \s has no \x1c
    (PythonRegex, r'[^\s"]+', b"\x1c"),
    (PythonRegex, r"[^\d\s]", b"\x1d"),
    (PythonRegex, r"(?:foo){e<=1}", b"fob"),  # fuzzy matching
    (PythonRegex, r"[^\s\S]", b"a"),  # `regex` reads it as any character
    (lambda p: BoolCFG.from_lark(f"start: A\nA: /{p}/"), r"a{1, 2}", b"aa"),
    (lambda p: BoolCFG.from_lark(f"start: A\nA: /{p}/"), r"[^\s]", b"\x1c"),
    (lambda p: BoolCFG.from_lark(f'start: A\nA: "{p}"'), r"\/", b"/"),  # JSON-style escapes
    (lambda p: BoolCFG.from_lark(f'start: A\nA: "{p}"'), r"\b", b"\x08"),
    (PythonRegex, r"(?i)[\u0100-\u017f]", b"s"),  # the long s folds to s
    (BoolFSA.from_regex, r"(?i)[\u2100-\u212f]x", b"kx"),  # the Kelvin sign to k
    (BoolFSA.from_regex, r"(?x)[a - z]", b"m"),  # Rust drops a class's spaces too
    (BoolFSA.from_regex, r"[a[bc]]", b"b"),  # Rust nests classes
    (lambda p: BoolCFG.from_lark(f"start: A\nA: /{p}/"), r"x[a[bc]]y", b"xby"),
    (BoolFSA.from_regex, r"\d[--a-c]", b"1b"),  # Rust's set operations: - then a-c
    (BoolFSA.from_regex, r"[^&&a]", b"a"),  # any character to Rust
    (BoolFSA.from_regex, r"[^~~a]", b"~"),
    (lambda p: BoolCFG.from_lark(f"start: A\nA: /{p}/"), r"[^--a]", b"<"),
]


@pytest.mark.parametrize(("make", "pattern", "text"), TRAPS)
def test_what_dialects_read_apart_is_held_or_given_up(make, pattern, text):
    engine = make(pattern)
    assert run(engine.complete(list(text))) == 0  # the engine takes it
    dfa = superset_dfa(engine)
    if dfa is not None:
        state = dfa.start
        for byte in text:
            state = int(dfa.table[state, byte])
            assert state != 0, text
        assert dfa.final[state]


def test_every_unicode_digit_is_a_digit_of_the_superset_and_nothing_else_is():
    """`\\d`'s superset holds every decimal digit of any engine (all code points checked),
    but no other BMP character: a token of three CJK characters is not three digits."""
    dfa = regex_superset_dfa(r"\d")
    python, module = re.compile(r"\d"), regex.compile(r"\d")
    digits = [
        chr(code)
        for code in range(0x110000)
        if not 0xD800 <= code < 0xE000 and (python.match(chr(code)) or module.match(chr(code)))
    ]
    assert len(digits) > 600
    assert all(_ours(dfa, d) for d in digits)
    assert not any(_ours(dfa, c) for c in "的一是aé\u00a0")
    assert _ours(dfa, "\U00016130")  # four-byte characters are all taken (newer digits)


def test_a_phone_number_with_d_classes_needs_its_exact_count_of_tokens():
    """The bound counts what `[0-9]` would: a budget too small for `\\d{3}-\\d{4}` is refused
    up front, and a many-character CJK token cannot stand in for the digits."""
    vocab = [*(str(d).encode() for d in range(10)), b"-", "的一是".encode(), b"<eos>"]
    llm = toy_llm(vocab=vocab)
    constraint = BoolFSA.from_regex(r"\d{3}-\d{4}").coerce(llm, f=b"".join)
    check = fit_check_for(constraint)
    assert check.lower(()) == 9  # 3 digits, "-", 4 digits, EOS
    assert not run(check.fits([], 8)) and run(check.fits([], 9))
