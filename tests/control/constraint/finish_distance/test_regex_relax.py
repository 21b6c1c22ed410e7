"""`relaxed_regex_dfa`: every text a regex matches, in Python's, `regex`'s or llguidance's reading.

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

from genlm_lab.control import BoolFSA, PythonRegex
from genlm_lab.control.constraint.finish_distance import finisher_for
from genlm_lab.control.constraint.finish_distance.regex_relax import relaxed_regex_dfa
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
    dfa = relaxed_regex_dfa(pattern)
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
    [
        *[r"^a", r"a$", r"a\b", r"(a)\1", r"(?i)a", r"(?i:a)b", r"a(?=b)", r"[[:alpha:]]"],
        *[r"\p{L}", r"a\ud800"],  # Rust's and `regex`'s syntax; a surrogate has no UTF-8
    ],
)
def test_what_the_dialects_may_read_apart_is_not_read(pattern):
    assert relaxed_regex_dfa(pattern) is None


def test_a_long_repeat_is_given_up_not_written_out():
    assert relaxed_regex_dfa(r"\w{1,5000}") is None
    assert relaxed_regex_dfa(r"[ab]{3}\d{2,40}", max_states=8) is None  # too many states


@pytest.mark.parametrize("make", [BoolFSA.from_regex, PythonRegex])
def test_a_regex_with_classes_is_refused_far_from_the_end_on_its_relaxation(make):
    junk = [b"x" * n for n in range(1, 70)]  # more tokens than max_branch: no deep search
    vocab = [b"1", b"12", b"-", b"2-", b"a", *junk, b"<eos>"]
    llm = toy_llm(vocab=vocab)
    # more than 8 tokens from the end a search is not even tried
    constraint = make(r"\d{12}-\d{3}").coerce(llm, f=b"".join)  # 10 tokens at least
    finisher = finisher_for(constraint)
    assert finisher.lower is not None
    plain = finisher_for(constraint, lower=None)
    seen = set()
    for max_tokens in (9, 11):
        live = run(live_contexts(constraint, max_tokens))
        seen |= set(live.values())
        assert {c: run(finisher.fits(list(c), max_tokens - len(c))) for c in live} == live
        kept = {c: run(plain.fits(list(c), max_tokens - len(c))) for c in live}
        assert all(kept[c] for c, ends in live.items() if ends)
    assert seen == {True, False}
    assert plain.stats["unproven"] > 0 and finisher.stats["refused"] > plain.stats["refused"]
