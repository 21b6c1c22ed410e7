"""BoolCFG (Lark grammars over llguidance) against lark's own LALR parser on the text."""

from __future__ import annotations

import asyncio
import math
import random

import numpy as np
import pytest
from _references import as_mask, random_walk, reference_mask
from lark import Lark
from lark.exceptions import UnexpectedInput

from genlm_lab.backend import ToyLM
from genlm_lab.control import BoolCFG, InvalidGrammar, PromptedLLM

ARITHMETIC = r"""
start: expr
expr: term (("+" | "-") term)*
term: factor ("*" factor)*
factor: NUMBER | "(" expr ")"
NUMBER: /[0-9]+/
%ignore " "
"""

TOKENS = [
    b"1", b"2", b"12", b"0", b"+", b"-", b"*", b"(", b")", b"(1", b"1)", b"+(", b" ", b"1 ",
    b" +", b"))", b"a", b"1+2", b"$",
]  # fmt: skip


def run(coro):
    return asyncio.run(coro)


def lark_reference(grammar: str):
    """`(viable, complete)` from lark's LALR parser fed the whole text.

    With single-character terminals and NUMBER (which any prefix can extend or
    end), a text is a viable prefix iff the parser accepts its tokens so far.
    """
    parser = Lark(grammar, parser="lalr")

    def consumed(text: bytes):
        try:
            interactive = parser.parse_interactive(text.decode("ascii"))
            interactive.exhaust_lexer()
            return interactive
        except (UnexpectedInput, UnicodeDecodeError):
            return None

    def viable(text: bytes) -> bool:
        return consumed(text) is not None

    def complete(text: bytes) -> bool:
        interactive = consumed(text)
        if interactive is None:
            return False
        try:
            interactive.feed_eof()
        except UnexpectedInput:
            return False
        return True

    return viable, complete


def assert_walks_match_lark(potential, pieces, to_context, walks, depth, rng, pool=None) -> None:
    """On random walks through `pieces`, prefix and mask equal lark's (over 30 prefixes checked).

    `to_context` turns a walk (as `random_walk` yields it) into the potential's context.
    """
    viable, complete = lark_reference(ARITHMETIC)
    checked = 0
    for _ in range(walks):
        for walk in random_walk(pieces, viable, depth, rng, pool=pool):
            context = to_context(walk)
            text = b"".join(pieces[i] for i in walk)
            assert (run(potential.prefix(context)) == 0) == viable(text), text
            if not viable(text):
                continue
            mask = as_mask(run(potential.logw_next(context)).weights)
            np.testing.assert_array_equal(mask, reference_mask(pieces, text, viable, complete))
            checked += 1
    assert checked > 30


def test_byte_masks_equal_lark_on_random_prefixes():
    singles = [bytes([i]) for i in range(256)]
    pool = list(b"0123456789+-*() x")
    cfg = BoolCFG.from_lark(ARITHMETIC)
    assert_walks_match_lark(cfg, singles, list, 6, 14, random.Random(0), pool=pool)


def test_token_masks_equal_lark_on_a_toy_vocabulary():
    llm = PromptedLLM(ToyLM(TOKENS, eos=b"$", seed=0))
    constraint = BoolCFG.from_lark(ARITHMETIC).coerce(llm, f=b"".join)
    tokens = [bytes(t) for t in llm.vocab]

    def to_context(ids):
        return [llm.vocab[i] for i in ids]

    assert_walks_match_lark(constraint, tokens, to_context, 10, 10, random.Random(1))


def test_complete_strings_are_exactly_the_language():
    cfg = BoolCFG.from_lark(ARITHMETIC)
    _, complete = lark_reference(ARITHMETIC)
    for text in [b"1", b"1+2*3", b"(1+2)*3", b" 1 + 2 ", b"1+", b"()", b"(1", b"12 3", b""]:
        assert (run(cfg.complete(list(text))) == 0) == complete(text), text


def test_an_invalid_grammar_names_line_and_column():
    with pytest.raises(InvalidGrammar, match="line 2, column") as info:
        BoolCFG.from_lark('start: x\nx: "a" y\n')
    assert isinstance(info.value, ValueError) and "y" in str(info.value)
    with pytest.raises(ValueError, match="str"):
        BoolCFG.from_lark(None)


def test_a_grammar_that_blocks_everything_kills_cleanly():
    llm = PromptedLLM(ToyLM(TOKENS, eos=b"$", seed=0))
    only_letters = BoolCFG.from_lark('start: "a" "!"').coerce(llm)
    w = run(only_letters.logw_next([llm.vocab[TOKENS.index(b"a")]]))
    assert np.all(w.weights == -math.inf)  # no "!" token: nothing can follow, EOS included


@pytest.mark.parametrize(
    ("grammar", "message"),
    [
        ('start: a\na: "x" a', "'a', 'start'"),  # every derivation of a goes on forever
        ('start: a b\na: "x"\nb: "y" b | b "z"', "'b', 'start'"),
        ("start: /[a&&b]/", "no terminal can start it"),
    ],
)
def test_a_grammar_that_derives_nothing_raises(grammar, message):
    with pytest.raises(InvalidGrammar, match="derives no text") as error:
        BoolCFG.from_lark(grammar)
    assert message in str(error.value)


def test_a_rule_that_never_ends_is_fine_when_start_has_another_way():
    cfg = BoolCFG.from_lark('start: "x" | a\na: "y" a')
    assert run(cfg.complete(b"x")) == 0.0
