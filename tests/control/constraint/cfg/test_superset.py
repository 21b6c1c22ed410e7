"""`regular_superset`: a regular Lark grammar as a regex holding every text it derives.

Every byte string up to a length, over the grammar's own bytes, is checked
with the grammar (llguidance, through `BoolCFG`) and with the regex: every
text the grammar accepts must match (so the token count read off the regex
is a lower bound), and, for these grammars, whose terminals never run into
each other, nothing else does (but for `%ignore` text at the very end,
which llguidance refuses and the regex keeps: more, never less).
"""

from __future__ import annotations

import asyncio
import itertools

import pytest
import regex

from genlm_lab.control import BoolCFG
from genlm_lab.control.constraint.budget import superset_dfa
from genlm_lab.control.constraint.cfg.superset import regular_superset

REGULAR = {
    "list": (
        'start: "[" item ("," item)* "]"\nitem: "a" | "bb"\n%ignore " "',
        b"[],ab ",
        5,
    ),
    "right-recursive": ('start: "a"* "b" x\nx: "c" | "." x', b"abc.", 6),
    "left-recursive": ('start: s "c"\ns: s "a" | s "b" | "b"', b"abc", 7),
    "terminals": (
        'start: WORD "=" NUM (";" WORD "=" NUM)*\nWORD: /[ab]+/\nNUM: /[0-9]/',
        b"ab=1;",
        6,
    ),  # fmt: skip
}


def _accepts(cfg: BoolCFG, text: bytes) -> bool:
    return asyncio.run(cfg.complete(list(text))) == 0


@pytest.mark.parametrize("kind", list(REGULAR))
def test_a_regular_grammar_reads_as_a_regex_of_exactly_its_texts(kind):
    grammar, alphabet, longest = REGULAR[kind]
    pattern = regular_superset(grammar)
    assert pattern is not None
    cfg = BoolCFG.from_lark(grammar)
    accepted = 0
    for n in range(longest + 1):
        for chars in itertools.product(alphabet, repeat=n):
            text = bytes(chars)
            ours = regex.fullmatch(pattern, text.decode()) is not None
            theirs = _accepts(cfg, text)
            # llguidance takes no %ignore text after the last terminal; the regex does
            assert ours == theirs or (ours and text.endswith(b" ")), text
            accepted += theirs
    assert accepted > 3


def test_texts_the_lexer_reads_as_one_terminal_are_held_too():
    # two NUMs side by side: the regex reads "12" as 1 then 2; llguidance's longest match
    # may not, so the regex holds more, never less
    grammar = "start: NUM NUM\nNUM: /[0-9]+/"
    pattern = regular_superset(grammar)
    cfg = BoolCFG.from_lark(grammar)
    for n in range(1, 5):
        for chars in itertools.product(b"12", repeat=n):
            text = bytes(chars)
            if _accepts(cfg, text):
                assert regex.fullmatch(pattern, text.decode()), text
    assert regex.fullmatch(pattern, "12")


@pytest.mark.parametrize(
    "grammar",
    [
        'start: e\ne: "1" | "(" e ")"',  # calls itself in its middle
        'start: a\na: "x" b | "y"\nb: "z" a',  # through another rule
        'start: a\na: a "x" | "x" a | "y"',  # at both ends
        'start: "a"i',  # a flag
        'start: A "b"\n%declare A',  # a terminal without a pattern
    ],
)
def test_grammars_that_are_not_regular_this_way_get_none(grammar):
    assert regular_superset(grammar) is None


def test_a_class_in_a_terminal_is_read_as_every_dialect_reads_it():
    grammar = 'start: NUM ("," NUM)*\nNUM: /\\d+/'
    cfg = BoolCFG.from_lark(grammar)
    dfa = superset_dfa(cfg)
    for text in ["1", "12,3", "1,,2", ",", "", "1,a", "١٢"]:
        ours = bool(dfa.final[dfa.run(dfa.start, text.encode())])
        if _accepts(cfg, text.encode()):
            assert ours, text
        elif text.isascii():
            assert not ours, text
    assert superset_dfa(BoolCFG.from_lark('start: "\\/"')) is None  # llguidance reads "/"
