"""BoolFSA (regex over llguidance) against Python `regex` partial matching; WFSA against enumeration."""

from __future__ import annotations

import asyncio
import itertools
import math
import random

import numpy as np
import pytest
from _references import as_mask, random_walk, reference_mask, regex_complete, regex_viable

from genlm_lab.backend import MockAsyncLM, ToyLM
from genlm_lab.control import EOS, WFSA, BoolFSA, InvalidGrammar, PromptedLLM

PATTERNS = [
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}",
    r"(ab|a)*c?",
    r"[a-z]+@[a-z]+\.(com|org)",
    r"(foo|bar)+",
    r"a{2,4}b*",
    r"x[0-9]*(\.[0-9]+)?",
    "(café|tea) ?",
]

TOY_TOKENS = [
    b"a", b"b", b"ab", b"ba", b"c", b"abc", b"aa", b"1", b"2", b"12", b"-", b"2-", b"-0",
    b"0", b"foo", b"fo", b"o", b"bar", b"r", b"@", b"x.", b".", b"com", b".org", b"x",
    b"caf", b"\xc3", b"\xa9", b"\xc3\xa9", b"tea", b" ", b"t", b"e", b"$",
]  # fmt: skip


def run(coro):
    return asyncio.run(coro)


def toy_llm() -> PromptedLLM:
    return PromptedLLM(ToyLM(TOY_TOKENS, eos=b"$", seed=3))


def pattern_bytes(pattern: str) -> bytes:
    """The pattern as a bytes regex for the reference (non-ASCII letters as their UTF-8 bytes)."""
    return pattern.encode("utf-8")


@pytest.mark.parametrize("pattern", PATTERNS)
def test_byte_masks_equal_regex_partial_matching(pattern):
    fsa = BoolFSA.from_regex(pattern)
    viable = regex_viable(pattern_bytes(pattern))
    complete = regex_complete(pattern_bytes(pattern))
    rng = random.Random(0)
    singles = [bytes([i]) for i in range(256)]
    checked = 0
    for _ in range(6):
        for context in random_walk(singles, viable, 12, rng):
            text = bytes(context)
            got = run(fsa.prefix(context))
            assert (got == 0) == viable(text), text
            if got == -math.inf:
                continue
            mask = as_mask(run(fsa.logw_next(context)).weights)
            np.testing.assert_array_equal(mask, reference_mask(singles, text, viable, complete))
            assert (run(fsa.complete(context)) == 0) == complete(text)
            checked += 1
    assert checked > 10


@pytest.mark.parametrize("pattern", PATTERNS)
def test_token_masks_equal_regex_partial_matching_on_a_toy_vocabulary(pattern):
    llm = toy_llm()
    constraint = BoolFSA.from_regex(pattern).coerce(llm)
    assert type(constraint).__name__ == "TokenConstraint"
    viable = regex_viable(pattern_bytes(pattern))
    complete = regex_complete(pattern_bytes(pattern))
    tokens = [bytes(t) for t in llm.vocab]
    rng = random.Random(1)
    for _ in range(8):
        for ids in random_walk(tokens, viable, 8, rng):
            context = [llm.vocab[i] for i in ids]
            text = b"".join(tokens[i] for i in ids)
            assert (run(constraint.prefix(context)) == 0) == viable(text)
            if not viable(text):
                continue
            mask = as_mask(run(constraint.logw_next(context)).weights)
            np.testing.assert_array_equal(mask, reference_mask(tokens, text, viable, complete))
            for i in rng.sample(range(len(tokens)), 5):  # the single-token check AWRS uses
                assert (run(constraint.score([*context, llm.vocab[i]])) == 0) == mask[i]
            assert (run(constraint.score([*context, EOS])) == 0) == mask[-1]


@pytest.mark.slow
@pytest.mark.parametrize("pattern", [PATTERNS[0], PATTERNS[2], PATTERNS[6]])
def test_token_masks_equal_regex_partial_matching_on_smollm2(smollm2_tokenizer, pattern):
    llm = PromptedLLM(MockAsyncLM(tokenizer=smollm2_tokenizer))
    constraint = BoolFSA.from_regex(pattern).coerce(llm)
    viable = regex_viable(pattern_bytes(pattern))
    complete = regex_complete(pattern_bytes(pattern))
    tokens = [bytes(t) for t in llm.vocab]
    special = llm.special_indices()
    assert special, "SmolLM2 has special tokens (BOS, chat markers) that grammars must refuse"
    rng = random.Random(2)
    alphabet = set(b"0123456789-abcdefghijklmnopqrstuvwxyz@. ") | set("é".encode())
    pool = [i for i, t in enumerate(tokens) if t and set(t) <= alphabet]
    checked = 0
    for ids in random_walk(tokens, viable, 10, rng, pool) + random_walk(
        tokens, viable, 10, rng, pool
    ):
        text = b"".join(tokens[i] for i in ids)
        if not viable(text):
            continue
        context = [llm.vocab[i] for i in ids]
        mask = as_mask(run(constraint.logw_next(context)).weights)
        np.testing.assert_array_equal(mask, reference_mask(tokens, text, viable, complete, special))
        checked += 1
    assert checked >= 5


def test_an_invalid_regex_is_one_value_error_naming_the_position():
    with pytest.raises(InvalidGrammar, match="position 2") as info:
        BoolFSA.from_regex("ab(c")
    assert isinstance(info.value, ValueError)
    with pytest.raises(ValueError, match="str"):
        BoolFSA.from_regex(b"abc")


def test_bytes_and_ints_name_the_same_byte():
    fsa = BoolFSA.from_regex("ab")
    assert run(fsa.prefix([b"a"])) == run(fsa.prefix([97])) == 0
    assert run(fsa.complete([b"a", b"b"])) == 0
    with pytest.raises(ValueError, match="not in the vocabulary"):
        run(fsa.prefix(["a"]))


def random_wfsa(rng: np.random.Generator, n_states: int, symbols: list[int]) -> WFSA:
    wfsa = WFSA()
    wfsa.add_I(0, 1.0)
    for s in range(n_states):
        for a in symbols:
            for t in range(n_states):
                if rng.random() < 0.4:
                    wfsa.add_arc(s, a, t, rng.random() * 0.3)
        if rng.random() < 0.7:
            wfsa.add_F(s, rng.random())
    return wfsa


def brute_force_weight(wfsa: WFSA, string: tuple[int, ...]) -> float:
    """Sum over paths of a string's weight, by enumerating state sequences."""
    states = sorted({*wfsa._initial, *wfsa._final, *wfsa._arcs}, key=repr)
    total = 0.0
    for path in itertools.product(states, repeat=len(string) + 1):
        w = wfsa._initial.get(path[0], 0.0)
        for (s, t), a in zip(itertools.pairwise(path), string, strict=True):
            w *= wfsa._arcs.get(s, {}).get(a, {}).get(t, 0.0)
        total += w * wfsa._final.get(path[-1], 0.0)
    return total


def test_wfsa_complete_weights_equal_enumeration_over_paths():
    rng = np.random.default_rng(0)
    wfsa = random_wfsa(rng, 3, [97, 98])
    for n in range(4):
        for string in itertools.product([97, 98], repeat=n):
            expected = brute_force_weight(wfsa, string)
            got = run(wfsa.complete(list(string)))
            assert math.isclose(math.exp(got) if got > -math.inf else 0.0, expected, rel_tol=1e-9)


def series_prefix_weight(wfsa: WFSA, context: list[int], symbols: list[int], terms: int) -> float:
    """Sum over every completion y of weight(context + y), as a truncated series over len(y).

    Independent of the WFSA's linear solve: forward vectors over the context,
    then repeated steps over all symbols, adding the final weight each time.
    """
    states = sorted({*wfsa._initial, *wfsa._final, *wfsa._arcs}, key=repr)
    alpha = {s: wfsa._initial.get(s, 0.0) for s in states}
    for a in context:
        nxt = dict.fromkeys(states, 0.0)
        for s, w in alpha.items():
            for t, v in wfsa._arcs.get(s, {}).get(a, {}).items():
                nxt[t] += w * v
        alpha = nxt
    total = 0.0
    for _ in range(terms):
        total += sum(w * wfsa._final.get(s, 0.0) for s, w in alpha.items())
        nxt = dict.fromkeys(states, 0.0)
        for s, w in alpha.items():
            for a in symbols:
                for t, v in wfsa._arcs.get(s, {}).get(a, {}).items():
                    nxt[t] += w * v
        alpha = nxt
    return total


def test_wfsa_next_weights_are_ratios_of_prefix_weights():
    rng = np.random.default_rng(1)
    wfsa = random_wfsa(rng, 3, [97, 98])
    for context in [[], [97], [97, 98], [98, 98, 97]]:
        prefix = run(wfsa.prefix(context))
        series = series_prefix_weight(wfsa, context, [97, 98], terms=400)
        assert math.isclose(math.exp(prefix), series, rel_tol=1e-9)
        weights = run(wfsa.logw_next(context))
        for a in [97, 98]:
            step = run(wfsa.prefix([*context, a])) - prefix
            assert math.isclose(weights[a], step, rel_tol=1e-9, abs_tol=1e-12)
        assert math.isclose(weights[EOS], run(wfsa.complete(context)) - prefix, abs_tol=1e-12)
        assert math.isclose(np.exp(weights.weights).sum(), 1.0, rel_tol=1e-9)


def test_a_divergent_wfsa_is_refused():
    wfsa = WFSA()
    wfsa.add_I(0)
    wfsa.add_arc(0, 97, 0, 1.0)
    wfsa.add_F(0)
    with pytest.raises(ValueError, match="diverges"):
        run(wfsa.prefix([]))
    with pytest.raises(ValueError, match=">= 0"):
        wfsa.add_arc(0, 97, 0, -1.0)


def test_a_regex_that_matches_nothing_raises_and_brute_force_agrees():
    """Random regexes over {a, b} with empty classes: raise iff no string of length <= 6 matches."""
    import re

    rng = random.Random(0)
    atoms = ["a", "b", "[a&&b]", "(a|b)", "a?", "[ab&&b]"]
    for _ in range(60):
        parts = [rng.choice(atoms) for _ in range(rng.randint(1, 3))]
        pattern = "".join(parts) if rng.random() < 0.6 else "|".join(parts)
        python = pattern.replace("[a&&b]", "(?!)").replace("[ab&&b]", "b")
        some = any(
            re.fullmatch(python, "".join(s))
            for n in range(7)
            for s in itertools.product("ab", repeat=n)
        )
        if some:
            assert BoolFSA.from_regex(pattern).allowed([]).any(), pattern
        else:
            with pytest.raises(InvalidGrammar, match="admits no string"):
                BoolFSA.from_regex(pattern)
