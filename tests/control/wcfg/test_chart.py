"""control/wcfg/_chart.py directly: string, prefix and total weights against enumeration and closed forms."""

from __future__ import annotations

import math

import numpy as np
import pytest

from genlm_lab.control.wcfg._chart import Tables
from genlm_lab.control.wcfg.grammar import WeightedGrammar

#: A finite language with a nullable symbol and a unary rule: enumerable exactly.
FINITE = """
0.5: S -> A a
0.3: S -> B
0.2: S -> a b
0.4: A ->
0.6: A -> b
1.0: B -> A b
"""


def _string_weight(tables: Tables, vocab: list[str], string: tuple) -> float:
    columns = [tables.first_column()]
    for symbol in string:
        columns.append(tables.extend(columns, vocab.index(symbol) if symbol in vocab else -1))
    return math.exp(columns[-1].inside_start) if len(string) else math.exp(-math.inf)


def _prefix_weights(tables: Tables, vocab: list[str], string: tuple) -> np.ndarray:
    columns = [tables.first_column()]
    for symbol in string:
        columns.append(tables.extend(columns, vocab.index(symbol)))
    return np.exp(tables.next_prefix(columns))


def test_string_and_prefix_weights_equal_enumeration_of_a_finite_language():
    grammar = WeightedGrammar.from_string(FINITE)
    vocab = ["a", "b"]
    tables = Tables(grammar, vocab)
    language = dict(grammar.language(6).items())
    assert len(language) >= 4
    assert tables.Z[tables.start] == pytest.approx(sum(language.values()))
    for string, weight in language.items():
        if string:
            assert _string_weight(tables, vocab, string) == pytest.approx(weight)
    assert _string_weight(tables, vocab, ("b", "b", "b")) == 0.0
    for prefix in [(), ("a",), ("b",)]:
        want = [
            sum(w for s, w in language.items() if s[: len(prefix) + 1] == (*prefix, y))
            for y in vocab
        ]
        assert _prefix_weights(tables, vocab, prefix) == pytest.approx(want)


def test_a_unary_cycle_is_summed_exactly():
    # S -> A -> S -> ... : weight of "a" is 0.5 * sum_k 0.25^k = 2/3.
    grammar = WeightedGrammar.from_string("1.0: S -> A\n0.25: A -> S\n0.5: A -> a")
    tables = Tables(grammar, ["a"])
    assert _string_weight(tables, ["a"], ("a",)) == pytest.approx(2 / 3, rel=1e-12)
    assert tables.Z[tables.start] == pytest.approx(2 / 3, rel=1e-12)


def test_a_recursive_grammar_weighs_long_strings_in_log_space():
    # S -> a S (0.001) | b (0.5): a^n b weighs 0.5 * 0.001^n, below the smallest float for n = 120.
    grammar = WeightedGrammar.from_string("0.001: S -> a S\n0.5: S -> b")
    vocab = ["a", "b"]
    tables = Tables(grammar, vocab)
    columns = [tables.first_column()]
    for _ in range(120):
        columns.append(tables.extend(columns, 0))
    columns.append(tables.extend(columns, 1))
    want = 120 * math.log(0.001) + math.log(0.5)
    assert math.exp(want) == 0.0  # what a chart in probability space would say
    assert columns[-1].inside_start == pytest.approx(want, rel=1e-9)


def test_a_symbol_outside_the_grammar_weighs_zero():
    tables = Tables(WeightedGrammar.from_string("1.0: S -> a"), ["a", "z"])
    assert _string_weight(tables, ["a", "z"], ("z",)) == 0.0
    column = tables.extend([tables.first_column()], -1)
    assert column.inside_start == -math.inf


def test_a_divergent_grammar_is_refused():
    grammar = WeightedGrammar.from_string("0.9: S -> S S\n0.9: S -> a")
    with pytest.raises(ValueError, match="total weight diverges"):
        Tables(grammar, ["a"])
