"""assert_* checks pass on consistent potentials and fail on each kind of broken one."""

from __future__ import annotations

import asyncio
import itertools
import math

import numpy as np
import pytest

from genlm_lab.control import Potential


class Lengths(Potential):
    """prefix = -len, complete = -2 len: consistent by construction."""

    def __init__(self):
        super().__init__([b"a", b"b"])

    async def prefix(self, context):
        return -float(len(context))

    async def complete(self, context):
        return -2.0 * len(context) - 1.0


class BadNext(Lengths):
    async def logw_next(self, context):
        w = (await super().logw_next(context)).weights.copy()
        w[1] += 0.5  # token b"b" off by 0.5
        return self.make_lazy_weights(w)


class BadBatch(Lengths):
    async def batch_prefix(self, contexts):
        return np.zeros(len(contexts)) + 7.0


class BadComplete(Lengths):
    """complete disagrees with prefix; logw_next is kept consistent with prefix alone."""

    async def complete(self, context):
        return 3.0

    async def logw_next(self, context):
        w = np.full(3, -1.0)
        w[2] = -2.0
        return self.make_lazy_weights(w)


def run(coro):
    return asyncio.run(coro)


def test_contract_holds_on_a_consistent_potential():
    run(Lengths().assert_contract([[], [b"a"], [b"a", b"b"]]))


def test_logw_next_check_names_the_wrong_token():
    with pytest.raises(AssertionError, match="logw_next consistency.*b'b'"):
        run(BadNext().assert_logw_next_consistency([b"a"]))
    with pytest.raises(AssertionError, match="b'b'"):  # the heaviest token is the wrong one
        run(BadNext().assert_logw_next_consistency([b"a"], top=1))


def test_factorisation_check_fails_when_complete_is_off():
    with pytest.raises(AssertionError, match="Factorization not satisfied"):
        run(BadComplete().assert_autoreg_fact([b"a"]))


def test_batch_check_fails_on_a_wrong_batch_method():
    with pytest.raises(AssertionError, match="Batch prefix mismatch"):
        run(BadBatch().assert_batch_consistency([[b"a"], [b"b", b"a"]]))


class Stops(Lengths):
    """Unnormalised rows (each sums to 3/e): a, b and EOS weigh 1/e each."""

    async def complete(self, context):
        return -float(len(context)) - 1.0


def test_normalize_rows_sum_to_one_and_stay_consistent():
    p = Stops().normalize()
    for context in ([], [b"a"], [b"b", b"a"]):
        w = run(p.logw_next(context)).weights
        assert math.isclose(np.exp(w).sum(), 1.0)
    # Exact enumeration: every step stops with probability 1/3, so the strings
    # of length <= 6 carry 1 - (2/3)**7 of the mass.
    total = sum(
        math.exp(run(p.complete(list(s))))
        for n in range(7)
        for s in itertools.product([b"a", b"b"], repeat=n)
    )
    assert total == pytest.approx(1 - (2 / 3) ** 7)
    run(p.assert_contract([[], [b"a", b"b"]]))
