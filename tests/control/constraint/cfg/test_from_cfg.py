"""cfg.from_cfg and BoolCFG(cfg): a grammar object's language, checked against brute force."""

from __future__ import annotations

import asyncio
import itertools
import math

import pytest

from genlm_lab.control import BoolCFG, InvalidGrammar, WeightedGrammar
from genlm_lab.control.constraint.cfg.from_cfg import lark_of_cfg


def language(rules, start, terminals, n):
    """Every string of at most `n` terminals derived from `start` (a fixpoint over sets)."""
    lang = {head: set() for head, _ in rules}
    grew = True
    while grew:
        grew = False
        for head, body in rules:
            options = [{(s,)} if s in terminals else lang.get(s, set()) for s in body]
            for parts in itertools.product(*options):
                word = sum(parts, ())
                if len(word) <= n and word not in lang[head]:
                    lang[head].add(word)
                    grew = True
    return lang[start]


RULES = [  # S -> A B | A B B | "" ; A -> a | A A ; B -> b ; C -> C (never ends) ; S -> C
    ("S", ("A", "B")),
    ("S", ("A", "B", "B")),
    ("S", ()),
    ("A", (97,)),
    ("A", ("A", "A")),
    ("B", (98,)),
    ("C", ("C",)),
    ("S", ("C", "B")),
]


def grammar(rules=RULES, weight=1.0, terminals=(97, 98)):
    g = WeightedGrammar(S="S", V=set(terminals))
    for head, body in rules:
        g.add(weight, head, *body)
    return g


def test_bool_cfg_of_a_grammar_object_accepts_exactly_its_language():
    pot = BoolCFG(grammar())
    n = 5
    words = language(RULES, "S", {97, 98}, n)
    checked = 0
    for k in range(n - 1):
        for text in itertools.product([97, 98], repeat=k):
            want_complete = 0.0 if text in words else -math.inf
            want_prefix = 0.0 if any(w[:k] == text for w in words) or k == 0 else -math.inf
            assert asyncio.run(pot.complete(list(text))) == want_complete, text
            if k <= 2:  # every extension up to n = k + 3 is in `words`
                assert asyncio.run(pot.prefix(list(text))) == want_prefix, text
            checked += 1
    assert checked == 2**4 - 1
    assert pot.cfg is not None and pot.spawn().cfg == pot.cfg


def test_lark_text_names_each_productive_nonterminal_once_and_escapes_terminals():
    rules = [("S", (34, "Q")), ("Q", (92,)), ("Q", (1,)), ("Q", ("Z",))]
    text = lark_of_cfg(grammar(rules, terminals=(34, 92, 1)))
    assert text == 'start: n0\nn0: "\\"" n1\nn1: "\\\\" | "\\x01"\n'
    pot = BoolCFG.from_lark(text)
    assert asyncio.run(pot.complete(list(b'"\\'))) == 0.0
    assert asyncio.run(pot.complete(list(b'"\x01'))) == 0.0


def test_grammars_lark_cannot_write_or_that_derive_nothing_are_refused_by_name():
    with pytest.raises(InvalidGrammar, match="derives no text"):
        BoolCFG(grammar([("S", ("S",))]))
    with pytest.raises(InvalidGrammar, match="byte 200"):
        BoolCFG(grammar([("S", (200,))], terminals=(200,)))
    with pytest.raises(TypeError, match="from_lark"):
        BoolCFG("start: 'a'")
