"""Product, Power and AutoBatched against their definitions."""

from __future__ import annotations

import asyncio
import math

import numpy as np
import pytest

from genlm_lab.backend import ToyLM
from genlm_lab.control import (
    EOS,
    AutoBatched,
    AutoBatchedPotential,
    BoolFSA,
    Potential,
    PromptedLLM,
)
from genlm_lab.control.potential.operators import autobatched


def run(coro):
    return asyncio.run(coro)


TOKENS = [b"a", b"b", b"ab", b"c", b"$"]


def llm(seed=0, **kw):
    return PromptedLLM(ToyLM(TOKENS, eos=b"$", seed=seed), **kw)


def test_product_weights_add_for_every_method():
    p = llm()
    q = BoolFSA.from_regex("(ab)*c?").coerce(p)
    prod = p * q
    assert [f.name for f in prod.factors()] == ["PromptedLLM", "BoolFSA"]
    for context in [[], [p.vocab[2]], [p.vocab[0]]]:
        for method in ("prefix", "complete"):
            expected = run(getattr(p, method)(context)) + run(getattr(q, method)(context))
            assert run(getattr(prod, method)(context)) == expected
        np.testing.assert_array_equal(
            run(prod.logw_next(context)).weights,
            run(p.logw_next(context)).weights + run(q.logw_next(context)).weights,
        )
    batch = run(prod.batch_logw_next([[], [p.vocab[2]]]))
    np.testing.assert_array_equal(batch[1].weights, run(prod.logw_next([p.vocab[2]])).weights)


def test_multiplying_different_token_types_is_one_value_error():
    p = llm()
    with pytest.raises(ValueError, match="same token type.*coerce"):
        p * BoolFSA.from_regex("a")


def test_product_of_different_vocabularies_is_over_the_shared_tokens():
    p = llm()
    other = PromptedLLM(ToyLM([b"a", b"b", b"x", b"c", b"$"], eos=b"$"))
    prod = p * other
    shared = [t for t in p.vocab if t in other.vocab]
    assert prod.vocab == shared and b"x" not in prod.vocab
    w1, w2, have = (run(q.logw_next([])) for q in (p, other, prod))
    for token in [*shared, EOS]:
        assert have[token] == pytest.approx(w1[token] + w2[token])
    context = [shared[0], shared[-1]]
    assert run(prod.prefix(context)) == pytest.approx(
        run(p.prefix(context)) + run(other.prefix(context))
    )
    with pytest.raises(ValueError, match="common vocabulary"):
        p * PromptedLLM(ToyLM([b"q", b"r", b"$"], eos=b"$"))


def test_power_tempers_and_keeps_zeros():
    p = llm()
    hot = p**0.5
    w = run(p.logw_next([])).weights
    np.testing.assert_allclose(run(hot.logw_next([])).weights, 0.5 * w)
    assert run(hot.prefix([p.vocab[0]])) == pytest.approx(0.5 * run(p.prefix([p.vocab[0]])))
    q = BoolFSA.from_regex("a") ** 3
    assert q.is_boolean and run(q.prefix([98])) == -math.inf
    for bad in (math.inf, math.nan, "2", True):
        with pytest.raises(ValueError, match="exponent"):
            p**bad


def test_power_zero_is_the_support_and_minus_one_the_inverse():
    p = llm()
    masked = p * BoolFSA.from_regex("a+").coerce(p, f=b"".join)
    w = run(masked.logw_next([])).weights
    support = run((masked**0).logw_next([])).weights
    np.testing.assert_array_equal(support, np.where(np.isinf(w), -math.inf, 0.0))
    inverse = run((masked**-1).logw_next([])).weights
    np.testing.assert_array_equal(np.isinf(inverse), np.isinf(w))
    np.testing.assert_allclose(inverse[~np.isinf(w)], -w[~np.isinf(w)])
    first = p.vocab[0]
    assert run((p**-1).prefix([first])) == pytest.approx(-run(p.prefix([first])))
    assert run((p**0).complete([first])) == 0.0


class Counting(Potential):
    """Records how its batch methods are called; refuses contexts that start with `b`."""

    def __init__(self):
        super().__init__([b"a", b"b"])
        self.batches = []

    async def prefix(self, context):
        if context and context[0] == b"b":
            raise ValueError("no b first")
        return -float(len(context))

    async def complete(self, context):
        return await self.prefix(context)

    async def batch_prefix(self, contexts):
        self.batches.append(len(contexts))
        return await super().batch_prefix(contexts)


def test_autobatched_sends_concurrent_calls_together_and_isolates_errors():
    inner = Counting()
    batched = inner.to_autobatched()
    assert isinstance(batched, AutoBatched) and batched.to_autobatched() is batched

    async def main():
        good = [batched.prefix([b"a"] * n) for n in range(5)]
        bad = batched.prefix([b"b"])
        return await asyncio.gather(*good, bad, return_exceptions=True)

    results = run(main())
    assert results[:5] == [0.0, -1.0, -2.0, -3.0, -4.0]
    assert isinstance(results[5], ValueError) and "no b first" in str(results[5])
    assert inner.batches[0] == 6  # all six went out as one batch first


def test_a_failing_batch_of_one_call_raises_the_batch_methods_error_without_a_retry():
    class BatchFails(Counting):
        async def batch_complete(self, contexts):
            raise ValueError("the batched path failed")

    inner = BatchFails()
    batched = inner.to_autobatched()
    with pytest.raises(ValueError, match="the batched path failed"):
        run(batched.complete([b"a"]))

    async def two():
        return await asyncio.gather(batched.complete([b"a"]), batched.complete([b"a", b"a"]))

    both = run(two())
    assert both == [-1.0, -2.0]  # a batch of two retries each call on its own


def test_score_dispatches_on_eos():
    p = llm()
    ctx = [p.vocab[0]]
    assert run(p.score([*ctx, EOS])) == run(p.complete(ctx))
    assert run(p.score(ctx)) == run(p.prefix(ctx))
    with pytest.raises(ValueError, match="EOS at position 0"):
        run(p.prefix([EOS, p.vocab[0]]))


def test_to_autobatched_is_one_wrapper_per_potential():
    inner = Counting()
    assert inner.to_autobatched() is inner.to_autobatched()
    assert autobatched(inner) is inner.to_autobatched() and autobatched(None) is None
    assert repr(inner.to_autobatched()) == f"AutoBatchedPotential({inner!r})"
    assert AutoBatchedPotential is AutoBatched


def test_default_logw_next_and_batch_score_use_the_subclass_batch_methods():
    inner = Counting()
    w = run(inner.logw_next([b"a"]))
    assert inner.batches == [2]  # the two token continuations in one batch_prefix call
    assert w[b"a"] == -1.0 and w[EOS] == 0.0
    scores = run(inner.batch_score([[b"a"], [b"a", EOS], [b"a", b"a"]]))
    np.testing.assert_array_equal(scores, [-1.0, -1.0, -2.0])
    assert inner.batches == [2, 2]
    with pytest.raises(ValueError, match="non-empty"):
        run(inner.batch_prefix([]))


class TwoDimBatch(Counting):
    """A genlm-control style subclass: batch_logw_next returns one 2-d LazyWeights."""

    async def prefix(self, context):
        return -float(len(context))

    async def batch_logw_next(self, contexts):
        rows = [(await self.logw_next(c)).weights for c in contexts]
        return self.make_lazy_weights(np.stack(rows))


def test_two_dimensional_batches_are_read_as_rows():
    p = TwoDimBatch()
    prod = p * TwoDimBatch()
    rows = run(prod.batch_logw_next([[], [b"a"]]))
    assert len(rows) == 2 and rows.weights.shape == (2, 3)
    np.testing.assert_allclose(rows[1].weights, 2 * run(p.logw_next([b"a"])).weights)
    batched = p.to_autobatched()

    async def both():
        return await asyncio.gather(batched.logw_next([]), batched.logw_next([b"a"]))

    first, second = run(both())
    np.testing.assert_array_equal(second.weights, run(p.logw_next([b"a"])).weights)
    assert first.weights.shape == (3,)


def test_autobatched_forwards_what_a_subclass_may_override():
    """encode / ends / logw_eos / normalize / coerce answer for the wrapped potential."""

    class Ending(Potential):
        def __init__(self) -> None:
            super().__init__([b"a", b"b"])

        async def prefix(self, context):
            return 0.0

        async def complete(self, context):
            return -1.0

        def ends(self, context):  # a potential whose own end marker is b"b"
            return bool(context) and context[-1] == b"b"

        async def logw_eos(self, context):
            return -7.0

    p = Ending()
    wrapped = p.to_autobatched()
    assert wrapped.ends([b"a", b"b"]) and not wrapped.ends([b"b", b"a"])
    assert asyncio.run(wrapped.logw_eos([])) == -7.0
    assert wrapped.encode([b"b", b"a"]) == [1, 0]
    assert type(wrapped.normalize()) is type(p.normalize())
    by_byte = lambda ctx: [bytes([c]) for t in ctx for c in t]  # noqa: E731 - onto b"a", b"b"
    assert wrapped.coerce([b"ab", b"ac"], f=by_byte).vocab == [b"ab"]  # b"c" is not a token
    forwarded = [n for n, m in vars(Potential).items() if callable(m) and not n.startswith("_")]
    inherited = {"make_lazy_weights", "alloc_logws", "build_tables"}
    assert [n for n in forwarded if n not in vars(AutoBatched) and n not in inherited] == []


def test_product_of_different_vocabularies_indexes_each_factor_by_list():
    class Table(Potential):
        def __init__(self, vocab, values):
            super().__init__(vocab)
            self.values = np.log(np.asarray(values, dtype=float))

        async def prefix(self, context):
            return float(sum(self.values[self.lookup[t]] for t in context))

        async def complete(self, context):
            return await self.prefix(context) + float(self.values[-1])

    p1 = Table([b"a", b"b", b"c"], [0.1, 0.2, 0.3, 0.4])
    p2 = Table([b"d", b"b", b"a"], [0.5, 0.6, 0.7, 0.8])
    product = p1 * p2
    assert product.vocab == [b"a", b"b"]
    assert product.v1_idxs == [0, 1, 3] and product.v2_idxs == [2, 1, 3]
    have = np.exp(asyncio.run(product.logw_next([])).weights)
    assert np.allclose(have, [0.1 * 0.7, 0.2 * 0.6, 0.4 * 0.8])
