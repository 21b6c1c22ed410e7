"""BoolPredicate: a Python check on the text as a constraint over bytes."""

from __future__ import annotations

import asyncio
import math

import pytest

from genlm_lab.control import EOS, BoolPredicate


def run(coro):
    return asyncio.run(coro)


def test_weights_follow_the_functions():
    digits = BoolPredicate(lambda t: t.isdigit() or not t, lambda t: len(t) == 2, name="2 digits")
    assert digits.name == "2 digits" and digits.is_boolean
    assert run(digits.prefix(list(b"12"))) == 0
    assert run(digits.prefix(list(b"1a"))) == -math.inf
    assert run(digits.complete(list(b"12"))) == 0 and run(digits.complete(list(b"1"))) == -math.inf
    w = run(digits.logw_next(list(b"1")))
    assert w[ord("5")] == 0 and w[ord("x")] == -math.inf and w[EOS] == -math.inf
    assert run(digits.logw_next(list(b"12")))[EOS] == 0
    with pytest.raises(ValueError, match="ruled out"):
        run(digits.logw_next(list(b"x")))


def test_counts_calls_and_checks_arguments():
    p = BoolPredicate(lambda t: True)
    run(p.prefix([1]))
    run(p.complete([1]))
    assert p.calls == 2
    with pytest.raises(ValueError, match="functions"):
        BoolPredicate("not callable")
