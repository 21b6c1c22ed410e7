"""PythonRegex token masks through the vocabulary's trie against the old byte-mask walk.

`walk_byte_trie` (what `Coerced` calls) must give exactly the mask of
`byte_mask_walk`, which asks for a full 257-entry byte mask at every live node
(the path before the trie walk). Checked on the AWRS paper's patterns over a
slice of SmolLM2's vocabulary (every single byte and every 97th other token), at the empty context and at contexts reached by
walking the byte masks. The default run takes every 16th pattern; `-m slow`
runs all of them. Where a pattern has an exact automaton (`CharAutomaton`),
the walk reads the mask off it: the tests below check which patterns get one
and that it agrees with the engine's partial matching.
"""

from __future__ import annotations

import asyncio
import csv
import functools
import math
import os
import random
from pathlib import Path

import numpy as np
import pytest
import regex

import genlm_lab
from genlm_lab.control import PromptedLLM, PythonRegex
from genlm_lab.control.constraint.python_regex import (
    CharAutomaton,
    byte_mask_walk,
    split_utf8,
)

PATTERNS_CSV = Path(genlm_lab.__file__).parent / "eval" / "data" / "patterns.csv"
with PATTERNS_CSV.open(newline="", encoding="utf-8") as _f:
    PATTERNS = [row[0] for row in list(csv.reader(_f))[1:] if row]


def run(coro):
    return asyncio.run(coro)


@functools.cache
def tokens(step: int) -> list[bytes]:
    """Every single-byte token, every `step`-th other token of SmolLM2, and a few made-up ones."""
    llm = PromptedLLM.from_name("tiny-random", backend="mock")
    vocab = [bytes(t) for t in llm.vocab]
    picked = [t for i, t in enumerate(vocab) if len(t) == 1 or i % step == 0]
    return list(dict.fromkeys([*picked, b"", b"\xce\xb1\xce", b"ab12", b"\xe4\xb8", b"  "]))


def contexts(p: PythonRegex, seed: int) -> list[bytes]:
    """The empty context and up to two live ones reached by walking `p`'s byte masks."""
    rng = random.Random(seed)
    out = [b""]
    for steps in (2, 5):
        text = b""
        for _ in range(steps):
            options = np.flatnonzero(p.allowed_bytes(text)[:256])
            if not len(options):
                break
            ascii_options = options[options < 128]
            pool = ascii_options if len(ascii_options) and rng.random() < 0.8 else options
            text += bytes([int(rng.choice(pool))])
        if text not in out:
            out.append(text)
    return out


def check(pattern: str, tokens: list[bytes], seed: int) -> int:
    """Assert the two masks agree at each context; the number of contexts checked."""
    coerced = PythonRegex(pattern, timeout=2.0).coerce(tokens, f=b"".join)
    reference = PythonRegex(pattern, timeout=2.0)
    checked = 0
    for data in contexts(reference, seed):
        old = byte_mask_walk(reference, coerced._trie, data)
        new = coerced.potential.walk_byte_trie(coerced._trie, data)
        assert np.array_equal(new, old), (pattern, data, np.flatnonzero(new != old)[:5])
        if not data:
            via_coerced = run(coerced.logw_next([])).weights
            assert np.array_equal(via_coerced, old), pattern
        checked += 1
    return checked


SLOW_IN_SAMPLE = {32}  # its byte-mask walk alone takes ~22 s: in `make test`, not test-fast


@pytest.mark.parametrize(
    "index",
    [
        pytest.param(i, marks=pytest.mark.slow) if i in SLOW_IN_SAMPLE else i
        for i in range(0, len(PATTERNS), 16)
    ],
)
def test_trie_masks_equal_the_byte_mask_walk_on_a_sample_of_the_patterns(index):
    assert check(PATTERNS[index], tokens(97), index) >= 1


@pytest.mark.slow
@pytest.mark.skipif(
    os.environ.get("GENLM_LAB_EXHAUSTIVE") != "1",
    reason="all 454 patterns take ~15 min: opt in with GENLM_LAB_EXHAUSTIVE=1 (the sample runs always)",
)
def test_trie_masks_equal_the_byte_mask_walk_on_every_pattern():
    vocab = tokens(97)
    assert sum(check(pattern, vocab, i) for i, pattern in enumerate(PATTERNS)) > len(PATTERNS)


def test_the_walk_asks_the_engine_far_less_and_caches_masks_per_context():
    tokens = [b"ab", b"abc", b"a1", b"x", b"", b"\xc3\xa9", b"\xc3", b"12"]
    p = PythonRegex(r"[a-z]+\d?")
    coerced = p.coerce(tokens, f=b"".join)
    weights = run(coerced.logw_next([])).weights
    allowed = {tokens[i] for i in np.flatnonzero(weights[:-1] == 0)}
    assert allowed == {b"ab", b"abc", b"a1", b"x", b""} and weights[-1] == -math.inf
    reference = PythonRegex(r"[a-z]+\d?")
    assert np.array_equal(weights, byte_mask_walk(reference, coerced._trie, b""))
    assert p.calls < reference.calls / 10
    calls = p.calls
    weights[:] = 7.0  # the caller's copy: the cached mask is untouched
    again = run(coerced.logw_next([])).weights
    assert p.calls == calls and np.array_equal(again, byte_mask_walk(reference, coerced._trie, b""))
    after = run(coerced.logw_next([b"ab"])).weights
    assert after[-1] == 0 and after[tokens.index(b"12")] == -math.inf
    assert after[tokens.index(b"x")] == 0 and after[tokens.index(b"a1")] == 0
    with pytest.raises(ValueError, match="weight zero"):
        run(coerced.logw_next([b"12"]))
    run(coerced.cleanup())
    assert np.array_equal(run(coerced.logw_next([])).weights, again)


# ---------------------------------------------------------------- the automaton path
AUTOMATON = [r"[a-z]{3}\d{2}", r"^[a-z]++\d*+$", r"^[^<>{}\[\]]+$", r"^[^\W\d_]+$", r"\P{Greek}"]
ENGINE_ONLY = [
    r"(\w+) \1",  # backreference
    r"(?<!A)B",  # lookaround
    r"\bcat\b",  # word boundary
    r"a$b",  # `$` before the end: the engine calls "a" live though nothing follows
    r"(?:ab)++c",  # possessive repeat of more than one character
    r"(?:a++b)*",  # possessive repeat inside a repeat
    r"(?i)abc",  # case folding
    r"[[:alpha:]]+",  # POSIX class
    r"(?>one|two)",  # atomic group
    r"[\p{InGreek}&&[^\p{Lu}]]",  # version 0 reads a set and a literal "]": not one character
]


def test_which_patterns_get_an_automaton():
    for pattern in AUTOMATON:
        assert CharAutomaton.build(pattern, 0) is not None, pattern
    for pattern in ENGINE_ONLY:
        assert CharAutomaton.build(pattern, 0) is None, pattern
    assert CharAutomaton.build("abc", regex.IGNORECASE) is None


def test_the_automaton_agrees_with_the_engine_where_the_engine_is_subtle():
    cases = {
        r"abc$": ["abc", "abc\n", "ab"],
        r"^a+\Z": ["aaa", "aaa\n", ""],
        r"a[^\s\S]": ["a", "ab"],  # an empty set still leaves "a" partial
        r"^[a-z]++\d*+$": ["abc", "abc12", "abc12a", "1", "", "a1b"],
        r"[a-z]{2,3}+x": ["ab", "abcx", "abx", "abcd", "abcdx"],
        r"\s\w.": ["\x1c", " a\n", " é-", "\u00a0ab"],  # the regex module's \s, \w and .
        r"\P{Greek}": ["", "a", "α", "ab"],
    }
    assert all(cases.values())
    for pattern, texts in cases.items():
        auto = CharAutomaton.build(pattern, 0)
        engine = regex.compile(pattern)
        for text in texts:
            expected = engine.fullmatch(text, partial=True) is not None
            assert (auto.run(text) >= 0) == expected, (pattern, text)


def _guided_texts(engine, alphabet: list[str], seed: int, n: int = 30) -> list[str]:
    """Texts grown a character at a time, mostly by characters the engine keeps live."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        text = ""
        for _ in range(rng.randint(1, 12)):
            pool = rng.sample(alphabet, min(30, len(alphabet)))
            live = [c for c in pool if engine.fullmatch(text + c, partial=True) is not None]
            text += rng.choice(live) if live and rng.random() < 0.85 else rng.choice(alphabet)
            out.append(text)
            if engine.fullmatch(text, partial=True) is None:
                break
    return out


@pytest.mark.parametrize("index", range(0, len(PATTERNS), 4))
def test_the_automaton_agrees_with_partial_matching_on_the_patterns(index):
    pattern = PATTERNS[index]
    auto = CharAutomaton.build(pattern, 0)
    if auto is None:
        pytest.skip("no automaton for this pattern: the engine walks the trie")
    engine = regex.compile(pattern)
    alphabet = sorted({*pattern, *map(chr, range(32, 127)), *"\n\t éß中αΩ٣𝟘\u00a0"})
    texts = _guided_texts(engine, alphabet, index)
    assert texts, pattern
    for text in texts:
        assert (auto.run(text) >= 0) == (engine.fullmatch(text, partial=True) is not None), text


def test_automaton_masks_equal_the_engine_walk_on_the_full_vocabulary():
    llm = PromptedLLM.from_name("tiny-random", backend="mock")
    vocab = [bytes(t) for t in llm.vocab]
    for pattern in AUTOMATON:
        p = PythonRegex(pattern, timeout=2.0)
        trie = p.coerce(llm, f=b"".join)._trie
        data = b""
        for step in range(3):
            mask = p.walk_byte_trie(trie, data)
            assert p._automaton is not None
            old = p._walk_engine(trie, split_utf8(data))
            expected = np.zeros(trie.n_tokens, dtype=bool)
            expected[old] = True
            assert np.array_equal(mask[:-1] == 0, expected), (pattern, data)
            live = np.flatnonzero(mask[:-1] == 0)
            if not len(live):
                break
            data += vocab[int(live[(step * 7919) % len(live)])]
