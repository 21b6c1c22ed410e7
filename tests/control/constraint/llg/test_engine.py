"""llg.engine: masks, liveness and acceptance against Python's `re` by brute force; grammar errors."""

from __future__ import annotations

import itertools
import re

import llguidance
import numpy as np
import pytest

from genlm_lab.control import InvalidGrammar
from genlm_lab.control.constraint.llg.engine import (
    Engine,
    check_grammar,
    exact_grammar,
    llg_tokenizer,
)

TOKENS = [b"a", b"b", b"ab", b"ba", b"c", b"aa"]
PATTERN = r"(ab|ba)+c?"


def _live(text: str) -> bool:
    """Some extension of `text` matches PATTERN (by search over short extensions)."""
    return any(
        re.fullmatch(PATTERN, text + "".join(rest))
        for n in range(4)
        for rest in itertools.product("abc", repeat=n)
    )


@pytest.fixture(scope="module")
def engine():
    grammar = exact_grammar(llguidance.LLMatcher.grammar_from_regex(PATTERN))
    return Engine(TOKENS, grammar)


def test_every_mask_equals_brute_force_over_short_contexts(engine):
    checked = 0
    for n in range(4):
        for context in itertools.product(range(len(TOKENS)), repeat=n):
            text = b"".join(TOKENS[i] for i in context).decode()
            if not _live(text):
                assert not engine.alive(context)
                continue
            mask = engine.mask(context)
            want = [_live(text + t.decode()) for t in TOKENS] + [bool(re.fullmatch(PATTERN, text))]
            assert mask.tolist() == want, (context, text)
            assert engine.accepting(context) is want[-1]
            for token in range(len(TOKENS) + 1):
                assert engine.allows(context, token) is want[token]
            checked += 1
    assert checked > 20


def test_masks_of_several_contexts_match_one_at_a_time(engine):
    contexts = [(), (2,), (2, 3), (0,)]
    together = engine.masks(contexts)
    assert all(np.array_equal(m, engine.mask(c)) for m, c in zip(together, contexts, strict=True))


def test_check_grammar_names_the_position_of_a_regex_error():
    with pytest.raises(InvalidGrammar, match="regex at position"):
        check_grammar(llguidance.LLMatcher.grammar_from_regex("ab(c"), "regex", "ab(c")
    check_grammar(llguidance.LLMatcher.grammar_from_regex("abc"), "regex", "abc")  # no error


def test_vocabularies_cut_in_other_places_get_their_own_tokenizers():
    # Joined with b"\0" between tokens, these two read alike: the cache must tell them apart.
    cut_late = llg_tokenizer([b"a\x00", b"b"])
    cut_early = llg_tokenizer([b"a", b"\x00b"])
    assert cut_late is not cut_early and llg_tokenizer([b"a\x00", b"b"]) is cut_late
    assert cut_late.decode_bytes([0]) == b"a\x00" and cut_early.decode_bytes([0]) == b"a"
