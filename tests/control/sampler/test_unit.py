"""Multi-token unit samplers: exact unit-level weights and SMC over units.

The reference is independent: the unit-level target (and SMC's normaliser)
is enumerated from the potential's own `prefix` / `complete`. The boundary
splits are tested in test_boundaries.py.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import random

import numpy as np
import pytest
from _enumerate import enumerate_runs
from _toys import TablePotential, within

from genlm_lab.control import (
    EOS,
    SMC,
    BoundaryPredicate,
    CFGBoundary,
    DirectTokenSampler,
    FixedLengthBoundary,
    MultiTokenUnitSampler,
    TokenSetBoundary,
    flatten_units,
)
from genlm_lab.tokenization import Token

SPACE = b" "
VOCAB = [b"a", b"b", SPACE]


def run(coro):
    return asyncio.run(coro)


def _table(vocab, seed=0, eos_scale=1.0):
    """A potential whose next-token weights are random, fixed per context (so context-dependent)."""
    rng = np.random.default_rng(seed)
    rows: dict[tuple, np.ndarray] = {}

    def fn(context):
        if context not in rows:
            row = rng.uniform(0.1, 1.0, len(vocab) + 1)
            row[-1] *= eos_scale
            rows[context] = np.log(row)
        return rows[context]

    return TablePotential(vocab, fn)


def _flat_ref(context):
    """Reference flattening, recursive."""
    out = []
    for item in context:
        out.extend(_flat_ref(item) if isinstance(item, list) else [item])
    return out


# ---------------------------------------------------------------- flatten_units


def test_flatten_units_matches_a_recursive_flattening_on_random_nestings():
    rng = random.Random(0)

    def nest(depth):
        items = []
        for _ in range(rng.randrange(0, 4)):
            if depth < 4 and rng.random() < 0.4:
                items.append(nest(depth + 1))
            else:
                items.append(rng.choice([b"x", b"yz", Token(3, b"q"), EOS, "s"]))
        return items

    for _ in range(200):
        context = nest(0)
        flat = flatten_units(context)
        assert flat == _flat_ref(context)
        flat.append(b"new")  # a fresh list: the context is untouched
        assert flatten_units(context) == _flat_ref(context)


# ------------------------------------------------ exact unit-level proper weighting


async def _unit_target(potential, context, boundary, cap):
    """Exact unit-level target after `context`: unit (tuple) -> weight, from prefix / complete."""
    flat = flatten_units(context)
    base = await potential.prefix(flat)
    out = {}
    for n in range(1, cap + 1):
        for tokens in itertools.product(potential.vocab, repeat=n):
            tokens = list(tokens)
            # a unit closes at its first boundary: no earlier prefix may be one
            if any(boundary(context, tokens[:i]) for i in range(1, n)):
                continue
            if boundary(context, tokens):
                out[tuple(tokens)] = math.exp(await potential.prefix(flat + tokens) - base)
            elif n < cap:  # no unit yet, and room for EOS after these tokens
                out[(*tokens, EOS)] = math.exp(await potential.complete(flat + tokens) - base)
    out[(EOS,)] = math.exp(await potential.complete(flat) - base)
    return out


async def _expected_unit_mass(sampler, context):
    """sum over every run of P(run) * exp(logw), per unit, by enumerating the draws."""
    outcomes = await enumerate_runs(lambda draw: sampler.sample(context, draw=draw))
    assert sum(p for p, _ in outcomes) == pytest.approx(1.0)
    mass: dict[tuple, float] = {}
    for prob, (unit, logw, logp) in outcomes:
        assert logp == pytest.approx(math.log(prob))  # logp is the log-probability of the draws
        if logw > -math.inf:
            mass[tuple(unit)] = mass.get(tuple(unit), 0.0) + prob * math.exp(logw)
    return mass


@pytest.mark.parametrize(
    "boundary,cap",
    [
        (TokenSetBoundary({SPACE}), 3),
        (FixedLengthBoundary(2), 3),
        (CFGBoundary('start: "a"+ " "', min_length=1), 3),
    ],
    ids=["token-set", "fixed-length", "cfg"],
)
@pytest.mark.parametrize("proposal", [False, True], ids=["direct", "with-proposal"])
def test_unit_draws_are_exactly_properly_weighted_for_the_unit_level_target(
    boundary, cap, proposal
):
    target = _table(VOCAB, seed=1)
    subunit = DirectTokenSampler(target, proposal=_table(VOCAB, seed=2) if proposal else None)
    sampler = MultiTokenUnitSampler(subunit, boundary, max_subunits_per_unit=cap)
    context = [[b"a", SPACE], b"b"]  # units and a loose token: flattened for the potential
    mass = run(_expected_unit_mass(sampler, context))
    exact = run(_unit_target(target, context, boundary, cap))
    assert set(mass) == {u for u, w in exact.items() if w > 0}
    for unit, w in exact.items():
        assert mass[unit] == pytest.approx(w, rel=1e-9), unit


def test_unit_weights_are_unbiased_under_random_draws():
    target = _table(VOCAB, seed=3)
    boundary = TokenSetBoundary({SPACE})
    sampler = MultiTokenUnitSampler(DirectTokenSampler(target, seed=0), boundary, 4)
    exact = run(_unit_target(target, [], boundary, 4))

    async def draws(n):
        return [await sampler.sample([]) for _ in range(n)]

    samples = run(draws(3000))
    for unit in [(SPACE,), (b"a", SPACE), (b"b", b"a", SPACE), (EOS,), (b"a", EOS)]:
        values = [math.exp(w) if tuple(u) == unit else 0.0 for u, w, _ in samples]
        assert within(values, exact[unit], k=4.0), (unit, np.mean(values), exact[unit])
    # the total weight estimates the target's total unit mass (timeouts count zero)
    totals = [math.exp(w) for _, w, _ in samples]
    assert within(totals, sum(exact.values()), k=4.0)


def test_weight_is_the_sum_of_subunit_weights_and_a_timeout_gives_minus_inf():
    weights = np.array([3.0, 5.0, 2.0, 1.0])  # a, b, space, EOS: Z = 11 after every context
    target = TablePotential(VOCAB, lambda ctx: np.log(weights))
    z = weights.sum()
    sampler = MultiTokenUnitSampler(DirectTokenSampler(target), TokenSetBoundary({SPACE}), 3)
    script = iter([b"b", b"a", SPACE])
    unit, logw, logp = run(sampler.sample([], draw=lambda chart: next(script)))
    assert unit == [b"b", b"a", SPACE]
    assert logw == pytest.approx(3 * math.log(z))
    assert logp == pytest.approx(math.log(5 * 3 * 2 / z**3))
    # three tokens and no boundary: weight zero, but logp still counts every draw
    unit, logw, logp = run(sampler.sample([], draw=lambda chart: b"a"))
    assert unit == [b"a"] * 3 and logw == -math.inf
    assert logp == pytest.approx(3 * math.log(3 / z))
    # EOS ends the unit before any boundary
    script = iter([b"a", EOS])
    unit, logw, logp = run(sampler.sample([], draw=lambda chart: next(script)))
    assert unit == [b"a", EOS] and logw == pytest.approx(2 * math.log(z))


def test_start_weight_logw_eos_and_cleanup_go_to_the_subunit_sampler():
    target = _table(VOCAB, seed=4)
    subunit = DirectTokenSampler(target)
    sampler = MultiTokenUnitSampler(subunit, TokenSetBoundary({SPACE}))
    assert run(sampler.start_weight()) == pytest.approx(run(target.prefix([])))
    nested = [[b"a", SPACE], [b"b"]]
    flat = [b"a", SPACE, b"b"]
    want = run(target.complete(flat)) - run(target.prefix(flat))
    assert run(sampler.logw_eos(nested)) == pytest.approx(want)

    cleaned = []

    async def cleanup():
        cleaned.append(True)

    subunit.cleanup = cleanup
    run(sampler.cleanup())
    assert cleaned == [True]


def test_errors_of_the_subunit_sampler_and_of_the_predicate_propagate():
    target = _table(VOCAB, seed=5)

    class Failing(DirectTokenSampler):
        async def sample(self, context, draw=None):
            if len(context) > 1:
                raise RuntimeError("subunit failed")
            return await super().sample(context, draw)

    sampler = MultiTokenUnitSampler(Failing(target), FixedLengthBoundary(5), 10)
    with pytest.raises(RuntimeError, match="subunit failed"):
        run(sampler.sample([], draw=lambda chart: b"a"))

    class Broken(BoundaryPredicate):
        def __call__(self, unit_context, subunit_buffer):
            raise KeyError("predicate failed")

    sampler = MultiTokenUnitSampler(DirectTokenSampler(target), Broken(), 10)
    with pytest.raises(KeyError, match="predicate failed"):
        run(sampler.sample([], draw=lambda chart: b"a"))


def test_the_predicate_sees_the_unit_context_and_finalize_unit_shapes_the_unit():
    seen = []

    class Words(BoundaryPredicate):
        def __call__(self, unit_context, subunit_buffer):
            seen.append((list(unit_context), list(subunit_buffer)))
            return subunit_buffer[-1] == SPACE

        def finalize_unit(self, subunit_buffer):
            return [b"".join(subunit_buffer)]  # a word as one item

    sampler = MultiTokenUnitSampler(DirectTokenSampler(_table(VOCAB)), Words())
    context = [[b"ab "]]
    script = iter([b"b", SPACE])
    unit, _, _ = run(sampler.sample(context, draw=lambda chart: next(script)))
    assert unit == [b"b "]
    assert seen == [(context, [b"b"]), (context, [b"b", SPACE])]


# ------------------------------------------ the running weight and async predicates


def test_a_predicate_that_asks_gets_the_running_unit_weight():
    weights = np.array([3.0, 5.0, 2.0, 1.0])  # a, b, space, EOS: Z = 11 after every context
    target = TablePotential(VOCAB, lambda ctx: np.log(weights))
    seen = []

    class Recording(BoundaryPredicate):
        def __call__(self, unit_context, subunit_buffer, cumulative_logw=None):
            seen.append(cumulative_logw)
            return len(subunit_buffer) == 3

    sampler = MultiTokenUnitSampler(DirectTokenSampler(target), Recording())
    unit, logw, _ = run(sampler.sample([], draw=lambda chart: b"a"))
    # each direct draw weighs log Z = log 11: the predicate sees 1, 2, 3 of them
    assert seen == pytest.approx([math.log(11) * k for k in (1, 2, 3)])
    assert unit == [b"a"] * 3 and logw == pytest.approx(3 * math.log(11))


def test_async_predicates_are_awaited_and_two_argument_ones_get_two_arguments():
    target = _table(VOCAB, seed=9)

    class Async(BoundaryPredicate):
        async def __call__(self, unit_context, subunit_buffer, **kwargs):
            await asyncio.sleep(0)
            return kwargs["cumulative_logw"] < -100 or len(subunit_buffer) == 2

    def plain(unit_context, subunit_buffer):  # a function, not a BoundaryPredicate
        return len(subunit_buffer) == 2

    for predicate in (Async(), plain, TokenSetBoundary({SPACE}), FixedLengthBoundary(2)):
        sampler = MultiTokenUnitSampler(DirectTokenSampler(target), predicate, 5)
        script = iter([b"a", SPACE, b"b"])
        unit, logw, _ = run(sampler.sample([], draw=lambda chart, s=script: next(s)))
        assert unit == [b"a", SPACE] and logw > -math.inf, predicate
    probe = MultiTokenUnitSampler._predicate_accepts_cumulative_logw
    assert (probe(Async()), probe(plain), probe(TokenSetBoundary({SPACE}))) == (True, False, True)


# --------------------------------------------------------------- SMC over units


async def _exact_unit_smc_mass(potential, boundary, cap, max_tokens):
    """Sum of complete(flat sequence) over every sequence SMC over units can return.

    A run has at most max_tokens steps: m < max_tokens - 1 whole units then a
    unit that ends with EOS (a tail without boundary, then EOS, within `cap`),
    or max_tokens - 1 whole units then the forced EOS.
    """
    units = [
        list(u)
        for u in itertools.chain.from_iterable(
            itertools.product(potential.vocab, repeat=n) for n in range(1, cap + 1)
        )
        if boundary([], list(u)) and not any(boundary([], list(u[:i])) for i in range(1, len(u)))
    ]
    tails = [
        list(t)
        for t in itertools.chain.from_iterable(
            itertools.product(potential.vocab, repeat=n) for n in range(cap)
        )
        if not any(boundary([], list(t[:i])) for i in range(1, len(t) + 1))
    ]
    total = 0.0
    for m in range(max_tokens):
        for seq in itertools.product(units, repeat=m):
            flat = flatten_units(list(seq))
            if m == max_tokens - 1:  # the step budget is spent: EOS is forced
                total += math.exp(await potential.complete(flat))
            else:  # the last unit ends with EOS
                for tail in tails:
                    total += math.exp(await potential.complete(flat + tail))
    return total


@pytest.mark.parametrize("ess", [0.0, 0.5])
def test_smc_over_units_is_unbiased_for_the_exact_normaliser(ess):
    target = _table(VOCAB, seed=6, eos_scale=0.5)
    boundary = TokenSetBoundary({SPACE})
    sampler = MultiTokenUnitSampler(DirectTokenSampler(target), boundary, 3)
    exact = run(_exact_unit_smc_mass(target, boundary, 3, 3))

    async def log_mls():
        out = []
        for seed in range(80):
            seqs = await SMC(sampler, record_factors=False)(16, ess, 3, seed=seed)
            for context, w in seqs:  # units, then EOS; never more than max_tokens steps
                if w == -math.inf:  # a unit that met no boundary within the cap
                    continue
                assert context[-1] is EOS and len(context) <= 3
                assert all(isinstance(u, list) and EOS not in u for u in context[:-1])
            out.append(seqs.log_ml)
        return np.exp(out)

    z = run(log_mls())
    assert within(z, exact, k=4.0), (z.mean(), exact)
    # one unit step fewer or more is a different total, far outside that tolerance
    for other in (2, 4):
        assert not within(z, run(_exact_unit_smc_mass(target, boundary, 3, other)), k=4.0)


def test_smc_over_units_records_steps_and_reads_back_as_text():
    target = _table(VOCAB, seed=8)
    sampler = MultiTokenUnitSampler(DirectTokenSampler(target), TokenSetBoundary({SPACE}), 4)
    seqs = run(SMC(sampler)(6, 0.5, 4, seed=0))
    for (context, _), text in zip(seqs, seqs.texts(), strict=True):
        assert text == b"".join(t for t in flatten_units(context) if t is not EOS).decode()
    for key in seqs.posterior:  # units become tuples inside the keys
        assert all(isinstance(u, tuple) or u is EOS for u in key)
    labels = [e["token"] for step in seqs.record.steps for e in step.get("extras", []) if e]
    assert labels and all(isinstance(label, str) for label in labels)


# ------------------------------------------------------------------- bad input


def test_bad_arguments_are_refused():
    subunit = DirectTokenSampler(_table(VOCAB))
    with pytest.raises(TypeError, match="subunit_sampler must be a TokenSampler"):
        MultiTokenUnitSampler("sampler", TokenSetBoundary({SPACE}))
    with pytest.raises(TypeError, match="boundary_predicate"):
        MultiTokenUnitSampler(subunit, {SPACE})
    for bad in (0, -1, True, 2.5):
        with pytest.raises(ValueError, match="max_subunits_per_unit"):
            MultiTokenUnitSampler(subunit, TokenSetBoundary({SPACE}), bad)
