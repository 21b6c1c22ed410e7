"""WFSA.from_regex, BoolFSA(automaton), and genlm-grammar WFSA objects in and out."""

from __future__ import annotations

import asyncio
import itertools
import math
import sys

import pytest

from genlm_lab.control import WFSA, BoolFSA
from genlm_lab.control.constraint.regular.automata import Automaton, regex_automaton


def run(coro):
    return asyncio.run(coro)


def test_from_regex_spreads_weight_evenly_and_sums_to_one():
    p = WFSA.from_regex("a(b|c)d?")
    assert run(p.complete(b"ab")) == pytest.approx(math.log(0.25))  # {b,c} then {stop, d}
    assert run(p.complete(b"acd")) == pytest.approx(math.log(0.25))
    assert run(p.prefix(b"a")) == pytest.approx(0.0)
    assert run(p.complete(b"a")) == -math.inf
    # Exact enumeration over a small alphabet: the language's weights sum to 1.
    total = sum(
        math.exp(run(p.complete(bytes(s))))
        for n in range(5)
        for s in itertools.product(b"abcd", repeat=n)
    )
    assert total == pytest.approx(1.0)
    run(p.assert_contract([b"", b"a", b"ac"]))


def test_regex_automaton_spells_characters_as_utf8_bytes():
    auto = regex_automaton("é")
    p = BoolFSA(auto)
    assert run(p.complete("é".encode())) == 0.0
    assert run(p.prefix(b"\xc3")) == 0.0 and run(p.prefix(b"e")) == -math.inf


def test_bool_fsa_from_automaton_ignores_weights_and_cycles():
    auto = Automaton()
    auto.initial[0] = 1.0
    auto.arcs[0] += [(ord("a"), 0, 5.0), (ord("b"), 1, 1.0)]  # weight 5 on a cycle
    auto.final[1] = 1.0
    p = BoolFSA(auto)
    assert isinstance(p, BoolFSA)
    assert run(p.complete(b"aaab")) == 0.0 and run(p.complete(b"aaa")) == -math.inf
    w = run(p.logw_next(b"aa"))
    assert w[ord("a")] == 0.0 and w[ord("b")] == 0.0 and w[p.eos] == -math.inf
    with pytest.raises(ValueError, match="zero weight"):
        run(p.logw_next(b"c"))
    run(p.assert_contract([b"", b"a", b"ab"]))


def test_regex_bool_fsa_semiring_argument_and_zero_weight():
    with pytest.raises(ValueError, match="semiring must be"):
        BoolFSA.from_regex("a", semiring="float")
    with pytest.warns(DeprecationWarning):
        BoolFSA.from_regex("a", semiring="log")
    with pytest.raises(ValueError, match="zero weight"):
        run(BoolFSA.from_regex("a").logw_next(b"b"))
    long = b"a" * 1000  # a fresh long context: no recursion limit
    assert run(BoolFSA.from_regex(".*").complete(long)) == 0.0


@pytest.fixture
def genlm_grammar():
    """The real genlm-grammar, unloaded afterwards (the `genlm` namespace is compat's to own)."""
    before = {n for n in sys.modules if n == "genlm" or n.startswith("genlm.")}
    yield pytest.importorskip("genlm.grammar")
    for name in [n for n in sys.modules if n == "genlm" or n.startswith("genlm.")]:
        if name not in before:
            del sys.modules[name]


def test_genlm_grammar_automata_in_and_out(genlm_grammar):
    gg = genlm_grammar
    m = gg.WFSA(gg.Float)
    m.add_I(0, 1.0)
    m.add_arc(0, ord("a"), 1, 2.0)
    m.add_arc(1, ord("b"), 2, 1.0)
    m.add_F(2, 1.0)
    p = WFSA(m)
    assert run(p.complete(b"ab")) == pytest.approx(math.log(2.0))
    assert p.wfsa.R is gg.Log and p.wfsa is not m
    assert run(WFSA(p.wfsa).complete(b"ab")) == pytest.approx(math.log(2.0))
    b = BoolFSA(m)
    assert b.wfsa.R is gg.Boolean and run(b.complete(b"ab")) == 0.0
    assert BoolFSA.from_regex("a(b|c)").wfsa.R is gg.Boolean
    with pytest.raises(ValueError, match="Unsupported semiring"):
        WFSA(gg.WFSA(gg.Boolean))


def test_an_automaton_with_no_reachable_final_state_raises():
    from genlm_lab.control import InvalidGrammar

    auto = Automaton()
    auto.initial[0] = 1.0
    auto.arcs[0] += [(ord("a"), 0, 1.0)]
    auto.arcs[1] += [(ord("b"), 2, 1.0)]
    auto.final[2] = 1.0  # final, but only from state 1, which nothing reaches
    with pytest.raises(InvalidGrammar, match="no final state is reachable"):
        BoolFSA(auto)
    auto.arcs[0] += [(ord("c"), 1, 1.0)]
    assert run(BoolFSA(auto).complete(b"acb")) == 0.0
