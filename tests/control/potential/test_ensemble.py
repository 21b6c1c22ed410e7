"""Ensemble and convert_to_weighted_logop against independent computations.

The operations are checked against the means written in probability space.
The ensemble is checked on two finite weighted languages (dicts of strings),
whose prefix and complete weights are sums over the dict, computed here
without the ensemble: its prefix / complete / logw_next must equal the
operation of those, walking logw_next must rebuild op(P(x), Q(x)) for every
string, and exact enumeration of a token sampler's random choices must give
that same target.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from _enumerate import enumerate_runs
from _toys import TablePotential, toy_llm, within

from genlm_lab.control import (
    EOS,
    SMC,
    EndOfSequence,
    Ensemble,
    Potential,
    convert_to_weighted_logop,
    direct_token_sampler,
)

OPS = ["sum", "prod", "harmonic", "min", "max", 2.5, -0.5]
POWERS = {"sum": 1.0, "prod": 0.0, "harmonic": -1.0}


# ---------------------------------------------------------------- references
def mean_in_probability_space(op: str | float, a: float, x: float, y: float) -> float:
    """The weighted mean of two weights x, y >= 0, written directly (no logs)."""
    if op in ("min", "max"):
        e = min(x, y) if op == "min" else max(x, y)
        if a <= 0.5:
            return x ** (1 - 2 * a) * e ** (2 * a)
        return y ** (2 * a - 1) * e ** (2 * (1 - a))
    p = POWERS.get(op, op)
    if p == 0:
        return x**a * y ** (1 - a)
    if p < 0 and (x == 0 or y == 0):
        return 0.0  # a zero term makes x^p infinite: the mean is zero
    return (a * x**p + (1 - a) * y**p) ** (1 / p)


def log(w: float) -> float:
    return math.log(w) if w > 0 else -math.inf


class FiniteLanguage(Potential):
    """Weights on a finite set of strings: prefix(x) sums the strings that start with x.

    Written with prefix / complete only; `logw_next` is the base class's
    token-by-token default, which refuses a context of prefix weight zero.
    """

    def __init__(self, vocabulary: Sequence[Any], weights: dict[tuple, float]) -> None:
        super().__init__(vocabulary)
        self.weights = weights
        self.prefix_calls = 0

    async def prefix(self, context: Sequence[Any]) -> float:
        self.prefix_calls += 1
        n = len(context)
        return log(sum(w for x, w in self.weights.items() if x[:n] == tuple(context)))

    async def complete(self, context: Sequence[Any]) -> float:
        return log(self.weights.get(tuple(context), 0.0))


# Two languages over a, b, c with overlapping but different supports, each
# summing to one: "ba" only under P, "cc" and "c" only under Q.
P = {("a", "b"): 0.3, ("a",): 0.1, ("a", "c", "b"): 0.2, ("b",): 0.15, ("b", "a"): 0.25}
Q = {("a", "b"): 0.1, ("a",): 0.3, ("a", "c", "b"): 0.1, ("b",): 0.2, ("c", "c"): 0.2, ("c",): 0.1}
VOCAB = ["a", "b", "c"]


def languages(order2: Sequence[str] = VOCAB) -> tuple[FiniteLanguage, FiniteLanguage]:
    return FiniteLanguage(VOCAB, P), FiniteLanguage(list(order2), Q)


def ref_prefix(lang: dict, context: Sequence[Any]) -> float:
    return log(sum(w for x, w in lang.items() if x[: len(context)] == tuple(context)))


def ref_target(op: str | float, a: float) -> dict[tuple, float]:
    """op(P(x), Q(x)) for every string of either language (zero ones left out)."""
    out = {}
    for x in set(P) | set(Q):
        w = mean_in_probability_space(op, a, P.get(x, 0.0), Q.get(x, 0.0))
        if w > 0:
            out[x] = w
    return out


def all_prefixes() -> list[tuple]:
    """Every prefix of every string, plus dead ends (no string starts with them)."""
    found = {x[:n] for x in set(P) | set(Q) for n in range(len(x) + 1)}
    return sorted(found | {("c", "a"), ("b", "b"), ("a", "b", "c")}, key=lambda t: (len(t), t))


# ---------------------------------------------------------------- the operations
@pytest.mark.parametrize("op", OPS + [0.5, -2.5, 0])
@pytest.mark.parametrize("a", [0.1, 0.3, 0.5, 0.8])
def test_operations_equal_the_means_in_probability_space(op, a):
    rng = np.random.default_rng(0)
    xs = np.concatenate([rng.uniform(0.01, 1, 20), [0.0, 0.0, 0.4, 1.0]])
    ys = np.concatenate([rng.uniform(0.01, 1, 20), [0.0, 0.7, 0.0, 1.0]])
    f = convert_to_weighted_logop(op, a)
    with np.errstate(divide="ignore"):
        got = f(np.log(xs), np.log(ys))
    want = [log(mean_in_probability_space(op, a, x, y)) for x, y in zip(xs, ys, strict=True)]
    assert not np.any(np.isnan(got))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)
    for x, y, w in zip(xs, ys, want, strict=True):  # scalars give floats, the same values
        one = f(log(x), log(y))
        assert isinstance(one, float) and (
            one == w or math.isclose(one, w, rel_tol=1e-12, abs_tol=1e-13)
        )


def test_operations_broadcast_and_never_give_nan():
    f = convert_to_weighted_logop(-1.0, 0.3)
    x = np.array([[-1.0], [-np.inf]])
    y = np.array([-np.inf, -2.0, -np.inf])
    out = f(x, y)
    assert out.shape == (2, 3) and not np.isnan(out).any()
    for op in OPS:
        assert convert_to_weighted_logop(op, 0.3)(-np.inf, -np.inf) == -math.inf


@pytest.mark.parametrize("a", [0.0, 1.0, -0.2, 1.5, float("nan"), True, "0.5", None])
def test_a_outside_the_open_unit_interval_is_a_value_error(a):
    with pytest.raises(ValueError, match="between 0 and 1"):
        convert_to_weighted_logop("sum", a)


@pytest.mark.parametrize(
    "op", ["pm-5", "p", "pm", "p5x", "P5", "Sum", "", True, None, float("inf"), float("nan"), [1]]
)
def test_unknown_operations_are_a_value_error(op):
    with pytest.raises(ValueError, match="Invalid operation"):
        convert_to_weighted_logop(op, 0.5)


# ---------------------------------------------------------------- the ensemble's weights
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("a", [0.3, 0.5])
async def test_prefix_and_complete_are_the_operation_of_the_components(op, a):
    ensemble = Ensemble(*languages(), op=op, a=a)
    combine = convert_to_weighted_logop(op, a)
    assert len(all_prefixes()) > len(P) + len(Q)  # the strings' prefixes and the dead ends
    for context in all_prefixes():
        want = log(
            mean_in_probability_space(op, a, *(math.exp(ref_prefix(L, context)) for L in (P, Q)))
        )
        assert await ensemble.prefix(list(context)) == pytest.approx(want, rel=1e-12, abs=1e-12)
        want = log(mean_in_probability_space(op, a, P.get(context, 0.0), Q.get(context, 0.0)))
        assert await ensemble.complete(list(context)) == pytest.approx(want, rel=1e-12, abs=1e-12)
        assert await ensemble.complete(list(context)) == pytest.approx(
            combine(log(P.get(context, 0.0)), log(Q.get(context, 0.0))), abs=1e-12
        )


@pytest.mark.parametrize("op", OPS)
async def test_logw_next_is_the_difference_of_the_reference_prefixes(op):
    a = 0.3
    ensemble = Ensemble(*languages(), op=op, a=a)

    def ref(context: tuple, complete: bool = False) -> float:
        wp = P.get(context, 0.0) if complete else math.exp(ref_prefix(P, context))
        wq = Q.get(context, 0.0) if complete else math.exp(ref_prefix(Q, context))
        return log(mean_in_probability_space(op, a, wp, wq))

    live = [c for c in all_prefixes() if ref(c) > -math.inf]
    assert live and len(live) < len(all_prefixes())  # both branches below run
    for context in all_prefixes():
        if ref(context) == -math.inf:
            with pytest.raises(ValueError, match="weight zero"):
                await ensemble.logw_next(list(context))
            continue
        row = await ensemble.logw_next(list(context))
        for token in VOCAB:
            assert row[token] == pytest.approx(ref((*context, token)) - ref(context), abs=1e-12)
        assert row[EOS] == pytest.approx(ref(context, complete=True) - ref(context), abs=1e-12)


@pytest.mark.parametrize("op", OPS)
async def test_walking_logw_next_rebuilds_the_target(op):
    """Summing logw_next along every path gives op(P(x), Q(x)) for each string, and Z."""
    ensemble = Ensemble(*languages(), op=op, a=0.3)
    found: dict[tuple, float] = defaultdict(float)

    async def walk(context: list, logw: float) -> None:
        row = (await ensemble.logw_next(context)).weights
        for token, w in zip(ensemble.vocab_eos, row, strict=True):
            if w == -math.inf:
                continue
            if isinstance(token, EndOfSequence):
                found[tuple(context)] += math.exp(logw + w)
            else:
                await walk([*context, token], logw + w)

    await walk([], await ensemble.prefix([]))
    target = ref_target(op, 0.3)
    assert set(found) == set(target)
    for x, w in target.items():
        assert found[x] == pytest.approx(w, rel=1e-12, abs=1e-14)


@pytest.mark.parametrize("op", ["sum", "harmonic", "max"])
async def test_exact_sampler_enumeration_targets_the_normalised_operation(op):
    """Every run of direct_token_sampler, with its probability and weight: E[w 1{x}] = op(P, Q)(x)."""
    ensemble = Ensemble(*languages(order2=["c", "a", "b"]), op=op, a=0.4)
    sampler = direct_token_sampler(ensemble)

    async def one_sequence(draw):
        context, logw = [], await ensemble.prefix([])
        while True:
            token, w, _ = await sampler.sample(context, draw=draw)
            logw += w
            if isinstance(token, EndOfSequence):
                return tuple(context), logw
            context.append(token)

    outcomes = await enumerate_runs(one_sequence)
    assert sum(p for p, _ in outcomes) == pytest.approx(1.0)
    estimate: dict[tuple, float] = defaultdict(float)
    for prob, (x, logw) in outcomes:
        estimate[x] += prob * math.exp(logw)
    target = ref_target(op, 0.4)
    assert set(estimate) == set(target)
    for x, w in target.items():
        assert estimate[x] == pytest.approx(w, rel=1e-10)


async def test_smc_estimates_the_normaliser_of_the_ensemble():
    ensemble = Ensemble(*languages(), op="harmonic", a=0.3)
    Z = sum(ref_target("harmonic", 0.3).values())
    z = []
    for seed in range(40):
        seqs = await SMC(direct_token_sampler(ensemble), record_factors=False)(6, 0.5, 5, seed=seed)
        z.append(math.exp(seqs.log_ml))
    assert within(z, Z), (np.mean(z), Z)


async def test_sum_of_normalised_lms_keeps_every_sampling_weight_at_zero():
    """A mixture of two normalised LMs is normalised: logw_next sums to one everywhere.

    (To float32 rounding: the ensemble's row total lies between the LMs' own.)
    """
    lm1, lm2 = toy_llm(seed=1), toy_llm(seed=2)
    ensemble = Ensemble(lm1, lm2, op="sum", a=0.3)
    sampler = direct_token_sampler(ensemble)
    context: list = []
    for _ in range(6):
        total = np.logaddexp.reduce((await ensemble.logw_next(context)).weights)
        own = [np.logaddexp.reduce((await lm.logw_next(context)).weights) for lm in (lm1, lm2)]
        assert min(own) - 1e-12 <= total <= max(own) + 1e-12
        token, w, _ = await sampler.sample(context)
        assert w == pytest.approx(total, abs=1e-12) and abs(w) < 1e-6
        if isinstance(token, EndOfSequence):
            break
        context.append(token)
    w1, w2 = await ensemble.component_logws(context)
    assert w1 == pytest.approx(await lm1.prefix(context), abs=1e-9)
    assert w2 == pytest.approx(await lm2.prefix(context), abs=1e-9)


# ---------------------------------------------------------------- vocabularies, cache, batches
async def test_permuted_vocabularies_are_matched_by_token():
    rows = {"a": [0.5, 0.1], "b": [0.2, 0.3], "c": [0.2, 0.4], EOS: [0.1, 0.2]}
    v2 = ["c", "a", "b"]
    p1 = TablePotential(VOCAB, lambda ctx: np.log([rows[t][0] for t in [*VOCAB, EOS]]))
    p2 = TablePotential(v2, lambda ctx: np.log([rows[t][1] for t in [*v2, EOS]]))
    p2_same_order = TablePotential(VOCAB, lambda ctx: np.log([rows[t][1] for t in [*VOCAB, EOS]]))
    permuted, aligned = Ensemble(p1, p2, "sum", a=0.4), Ensemble(p1, p2_same_order, "sum", a=0.4)
    assert permuted.vocab == VOCAB and permuted.p1_vocab_idxs != permuted.p2_vocab_idxs
    assert [p2.vocab_eos[i] for i in permuted.p2_vocab_idxs] == permuted.vocab_eos
    for context in [[], ["a"], ["c", "b"]]:
        want = (await aligned.logw_next(context)).weights
        np.testing.assert_allclose((await permuted.logw_next(context)).weights, want, atol=1e-14)
        # the first row is the mixture of the two next-token distributions
        if not context:
            mix = [0.4 * rows[t][0] + 0.6 * rows[t][1] for t in [*VOCAB, EOS]]
            np.testing.assert_allclose(np.exp(want), mix, rtol=1e-12)
    await permuted.assert_contract([[], ["a"], ["c", "b"]])


def test_different_vocabularies_or_eos_raise():
    p = TablePotential(["a", "b"], lambda ctx: np.zeros(3))
    with pytest.raises(ValueError, match="same vocabulary"):
        Ensemble(p, TablePotential(["a", "c"], lambda ctx: np.zeros(3)), "prod")
    with pytest.raises(ValueError, match="same vocabulary"):
        Ensemble(p, TablePotential(["a", "b", "c"], lambda ctx: np.zeros(4)), "prod")
    with pytest.raises(ValueError, match="Invalid operation"):
        Ensemble(p, p, "average")
    with pytest.raises(ValueError, match="between 0 and 1"):
        Ensemble(p, p, "sum", a=1.0)
    with pytest.raises(ValueError, match="cache_size"):
        Ensemble(p, p, "sum", cache_size=-1)


async def test_cached_rows_spare_the_components_and_change_nothing():
    p1, p2 = languages()
    cached = Ensemble(p1, p2, "prod", a=0.3)
    uncached = Ensemble(*languages(), "prod", a=0.3, cache_size=0)
    tiny = Ensemble(*languages(), "prod", a=0.3, cache_size=1)
    contexts = [[], ["a"], ["a", "c"], ["b"]]
    for e in (cached, uncached, tiny):
        await e.batch_logw_next(contexts)
    assert len(cached._rows) == 4 and len(uncached._rows) == 0 and len(tiny._rows) == 1
    calls = p1.prefix_calls
    for context in contexts:  # every one-token extension of a kept context
        for token in VOCAB:
            want = await uncached.prefix([*context, token])
            assert await cached.prefix([*context, token]) == pytest.approx(want, abs=1e-12)
            assert await tiny.prefix([*context, token]) == pytest.approx(want, abs=1e-12)
        want = await uncached.complete(context)
        assert await cached.complete(context) == pytest.approx(want, abs=1e-12)
    assert p1.prefix_calls == calls  # all read off the kept rows


@pytest.mark.parametrize("op", OPS)
async def test_batches_equal_single_calls_and_the_contract_holds(op):
    ensemble = Ensemble(*languages(), op=op, a=0.3)
    contexts = [list(c) for c in all_prefixes() if await ensemble.prefix(list(c)) > -math.inf]
    await ensemble.assert_contract(contexts, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(
        await ensemble.batch_complete(contexts),
        [await ensemble.complete(c) for c in contexts],
        atol=1e-12,
    )


async def test_component_logws_are_each_potentials_prefix_or_complete():
    for warm in (False, True):
        p1, p2 = languages()
        ensemble = Ensemble(p1, p2, "sum", a=0.4)
        if warm:
            await ensemble.batch_logw_next([[], ["a"], ["a", "c"], ["a", "c", "b"]])
        for context in [["a", "c"], ["b", "a"], ["c"]]:
            w1, w2 = await ensemble.component_logws(context)
            assert w1 == pytest.approx(ref_prefix(P, context), abs=1e-12)
            assert w2 == pytest.approx(ref_prefix(Q, context), abs=1e-12)
        w1, w2 = await ensemble.component_logws(["a", "c", "b", EOS])
        assert (w1, w2) == pytest.approx((math.log(0.2), math.log(0.1)), abs=1e-12)


async def test_bad_batches_and_zero_prefixes_raise():
    ensemble = Ensemble(*languages(), "prod")
    for method in ("batch_prefix", "batch_complete", "batch_logw_next"):
        with pytest.raises(ValueError, match="non-empty"):
            await getattr(ensemble, method)([])
    with pytest.raises(ValueError, match="weight zero"):
        await ensemble.logw_next(["c"])  # P gives "c..." weight zero, so the product does too


async def test_spawn_and_names():
    ensemble = Ensemble(*languages(), 2.5, a=0.3, cache_size=7)
    copy = ensemble.spawn()
    assert copy is not ensemble and copy.cache_size == 7 and copy.op.label == "power 2.5(a=0.3)"
    assert "power 2.5(a=0.3)" in ensemble.name and "FiniteLanguage" in repr(ensemble)
    for context in [[], ["a"], ["b"]]:
        assert await copy.prefix(context) == await ensemble.prefix(context)
    await ensemble.logw_next([])
    await ensemble.cleanup()
    assert len(ensemble._rows) == 0
