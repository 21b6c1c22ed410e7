"""Surprise and critic boundaries: units split exactly where the rule says, and SMC stays exact.

The references are independent of the code under test: a unit's surprise is
summed here from the toy's own next-token tables, a critic's change from its
`prefix`, and the rule (gate, then signed threshold) is restated in
`_rule`. The targets are enumerated from the potential's `prefix` /
`complete`, and SMC's law over whole sequences from every one-particle run.
"""

from __future__ import annotations

import asyncio
import itertools
import math

import numpy as np
import pytest
from _enumerate import enumerate_runs, enumerate_smc
from _toys import TablePotential, within

from genlm_lab.control import (
    EOS,
    SMC,
    CriticBoundary,
    DirectTokenSampler,
    MultiTokenUnitSampler,
    Potential,
    SurpriseBoundary,
    flatten_units,
)

VOCAB = [b"a", b"b", b"c"]
MAX_LEN = 3  # the toy language: at most three tokens, then EOS


def run(coro):
    return asyncio.run(coro)


def _table(seed: int) -> TablePotential:
    """Random next-token weights per context; after MAX_LEN tokens only EOS has weight."""
    rng = np.random.default_rng(seed)
    rows: dict[tuple, np.ndarray] = {}

    def fn(context):
        if context not in rows:
            # total mass around 1 (log Z in about [-0.7, 0.5]): surprise builds up over tokens
            row = np.log(rng.uniform(0.05, 1.0, len(VOCAB) + 1) / 2.1)
            if len(context) >= MAX_LEN:
                row[:-1] = -math.inf
            rows[context] = row
        return rows[context]

    return TablePotential(VOCAB, fn)


class _Critic(Potential):
    """A critic over the same tokens: each token adds its own score to the prefix weight.

    Under SMC over units it is given the context of units: it reads the tokens flattened.
    """

    SCORES = {b"a": -0.9, b"b": 0.4, b"c": -0.2}

    def __init__(self) -> None:
        super().__init__(VOCAB)

    async def prefix(self, context):
        return sum(self.SCORES[t] for t in flatten_units(context))

    async def complete(self, context):
        return await self.prefix(context)


def _rule(n: int, value: float, threshold: float, lo: int, hi: int, sign: str) -> bool:
    """The boundary rule, restated: forced at hi, never below lo, else the signed test."""
    if n >= hi:
        return True
    if n < lo or math.isnan(value):
        return False
    return bool(
        {"abs": abs(value) >= threshold, "down": value <= -threshold}.get(sign, value >= threshold)
    )


def _lse(row: np.ndarray) -> float:
    top = np.max(row)
    return -math.inf if top == -math.inf else float(top + np.log(np.sum(np.exp(row - top))))


def _surprise(target, proposal, flat, buffer):
    """The unit's running log-weight, from the tables: log Z per token (direct sampler),
    or log target - log normalised proposal at each token drawn (with a proposal)."""
    total = 0.0
    for i, token in enumerate(buffer):
        row = target.fn(tuple(flat + buffer[:i]))
        if proposal is None:
            total += _lse(row)
        else:
            q = proposal.fn(tuple(flat + buffer[:i]))
            j = VOCAB.index(token)
            total += row[j] - (q[j] - _lse(q))
    return total


def _critic_delta(flat, buffer):
    return sum(_Critic.SCORES[t] for t in buffer)  # prefix(flat + buffer) - prefix(flat)


def _reference(kind, target, proposal, settings):
    """`(unit_context, buffer) -> bool` for the boundary `kind`, computed from the tables."""

    def boundary(unit_context, buffer):
        flat = flatten_units(unit_context)
        if kind == "surprise":
            value = _surprise(target, proposal, flat, list(buffer))
        else:
            value = _critic_delta(flat, list(buffer))
        return _rule(len(buffer), value, *settings)

    return boundary


def _boundary(kind, settings):
    threshold, lo, hi, sign = settings
    if kind == "surprise":
        return SurpriseBoundary(threshold, min_subunits=lo, max_subunits=hi, sign=sign)
    return CriticBoundary(_Critic(), threshold, min_subunits=lo, max_subunits=hi, sign=sign)


# Thresholds picked so that units end at different lengths in each case (the signal, not
# only max_subunits, decides).
CASES = [
    ("surprise", (0.5, 1, 3, "abs"), False),
    ("surprise", (0.3, 2, 3, "down"), False),
    ("surprise", (0.2, 1, 3, "up"), False),
    ("surprise", (0.8, 1, 3, "abs"), True),
    ("surprise", (0.3, 1, 3, "up"), True),
    ("critic", (0.3, 1, 3, "abs"), False),
    ("critic", (0.5, 1, 3, "down"), True),
]
IDS = ["surprise-abs", "surprise-down-min2", "surprise-up", "surprise-abs-proposal",
       "surprise-up-proposal", "critic-abs", "critic-down-proposal"]  # fmt: skip
CONTEXTS = [[], [[b"b"]], [[b"a", b"c"]]]


def _sampler(kind, settings, with_proposal, seed=0):
    target = _table(seed)
    proposal = _table(seed + 100) if with_proposal else None
    subunit = DirectTokenSampler(target, proposal=proposal)
    sampler = MultiTokenUnitSampler(subunit, _boundary(kind, settings), max_subunits_per_unit=4)
    return sampler, target, proposal


async def _unit_mass(sampler, context):
    """Every unit draw after `context`: {unit: E[w 1{unit}]} and the list of units drawn."""
    outcomes = await enumerate_runs(lambda draw: sampler.sample(context, draw=draw))
    mass: dict[tuple, float] = {}
    for prob, (unit, logw, _) in outcomes:
        if logw > -math.inf:
            mass[tuple(unit)] = mass.get(tuple(unit), 0.0) + prob * math.exp(logw)
    return mass, [tuple(unit) for _, (unit, _, _) in outcomes]


async def _unit_target(potential, context, boundary):
    """Exact unit-level target: a unit closes at its first boundary; EOS ends one early."""
    flat = flatten_units(context)
    base = await potential.prefix(flat)
    out = {(EOS,): math.exp(await potential.complete(flat) - base)}
    for n in range(1, MAX_LEN - len(flat) + 1):
        for tokens in itertools.product(VOCAB, repeat=n):
            tokens = list(tokens)
            if any(boundary(context, tokens[:i]) for i in range(1, n)):
                continue
            if boundary(context, tokens):
                out[tuple(tokens)] = math.exp(await potential.prefix(flat + tokens) - base)
            else:
                out[(*tokens, EOS)] = math.exp(await potential.complete(flat + tokens) - base)
    return {k: v for k, v in out.items() if v > 0}


@pytest.mark.parametrize(("kind", "settings", "with_proposal"), CASES, ids=IDS)
def test_units_split_exactly_where_the_rule_says(kind, settings, with_proposal):
    sampler, target, proposal = _sampler(kind, settings, with_proposal)
    reference = _reference(kind, target, proposal, settings)
    lengths = set()  # of the units a boundary ended
    for context in CONTEXTS:
        _, units = run(_unit_mass(sampler, context))
        for unit in units:
            tokens = [t for t in unit if t is not EOS]
            # no boundary before the unit's end, and one at its end unless EOS ended it
            assert not any(reference(context, tokens[:i]) for i in range(1, len(tokens)))
            assert reference(context, tokens) is (unit[-1] is not EOS), (context, unit)
            if unit[-1] is not EOS:
                lengths.add(len(unit))
    assert len(lengths) >= 2, lengths


@pytest.mark.parametrize(("kind", "settings", "with_proposal"), CASES, ids=IDS)
def test_units_are_exactly_properly_weighted_for_the_unit_level_target(
    kind, settings, with_proposal
):
    sampler, target, proposal = _sampler(kind, settings, with_proposal)
    reference = _reference(kind, target, proposal, settings)
    for context in CONTEXTS:
        mass, _ = run(_unit_mass(sampler, context))
        exact = run(_unit_target(target, context, reference))
        assert set(mass) == set(exact), context
        for unit, value in exact.items():
            assert mass[unit] == pytest.approx(value, rel=1e-9), (context, unit)
    assert len(exact) > 3


def _language(target):
    """Every sequence of the toy language with its exact weight complete(s)."""
    out = {}
    for n in range(MAX_LEN + 1):
        for seq in itertools.product(VOCAB, repeat=n):
            out[(*seq, EOS)] = math.exp(run(target.complete(list(seq))))
    return out


@pytest.mark.parametrize(("kind", "settings", "with_proposal"), CASES, ids=IDS)
def test_smc_over_signal_units_is_exact_over_every_run(kind, settings, with_proposal):
    # Units of at least one token, at most MAX_LEN tokens then EOS: 5 steps never force EOS.
    sampler, target, _ = _sampler(kind, settings, with_proposal)
    mass = run(enumerate_smc(sampler, max_tokens=MAX_LEN + 2))
    exact = _language(target)
    assert set(mass) == set(exact)
    for seq, value in exact.items():
        assert mass[seq] == pytest.approx(value, rel=1e-9), seq


def test_smc_with_a_critic_over_critic_units_is_exact_over_every_run():
    # The critic both places the boundaries and weighs the particles: target * critic.
    sampler, target, _ = _sampler("critic", (0.8, 1, 3, "abs"), False)
    critic = _Critic()
    mass = run(enumerate_smc(sampler, max_tokens=MAX_LEN + 2, critic=critic))
    exact = {
        seq: w * math.exp(run(critic.complete(list(seq[:-1]))))
        for seq, w in _language(target).items()
    }
    assert set(mass) == set(exact)
    for seq, value in exact.items():
        assert mass[seq] == pytest.approx(value, rel=1e-9), seq


@pytest.mark.parametrize("kind", ["surprise", "critic"])
def test_smc_with_resampling_over_signal_units_is_unbiased_for_the_normaliser(kind):
    settings = (0.5, 1, 3, "abs") if kind == "surprise" else (0.8, 1, 3, "abs")
    sampler, target, _ = _sampler(kind, settings, False)
    z = [
        math.exp(
            run(
                SMC(sampler, record_factors=False)(16, 0.9, MAX_LEN + 2, seed=s, budget=False)
            ).log_ml
        )
        for s in range(80)
    ]
    exact = sum(_language(target).values())
    assert within(z, exact, k=4.0), (np.mean(z), exact)
    assert not within(z, 0.9 * exact, k=4.0)


# ------------------------------------------------------------- the predicates alone


def test_surprise_boundary_fires_by_sign_and_length():
    buffer = [b"a", b"b"]
    signs = {s: SurpriseBoundary(1.0, min_subunits=2, sign=s) for s in ("abs", "down", "up")}
    cases = [(-1.5, True, True, False), (1.5, True, False, True), (-0.5, False, False, False)]
    for value, by_abs, by_down, by_up in cases:
        got = [signs[s]([], buffer, cumulative_logw=value) for s in ("abs", "down", "up")]
        assert got == [by_abs, by_down, by_up], value
    for value in (math.nan, None, "x"):  # no number, no boundary
        assert signs["abs"]([], buffer, cumulative_logw=value) is False
    assert signs["abs"]([], buffer, cumulative_logw=-math.inf) is True  # a dead particle
    assert signs["abs"]([], buffer) is False  # no signal given: 0
    bounded = SurpriseBoundary(1.0, min_subunits=3, max_subunits=4)
    assert bounded([], [b"a"] * 2, cumulative_logw=-9.0) is False
    assert bounded([], [b"a"] * 4, cumulative_logw=0.0) is True
    assert "SurpriseBoundary(threshold=1.0" in repr(bounded)


def test_critic_boundary_measures_the_change_over_the_unit_only():
    critic = _Critic()
    boundary = CriticBoundary(critic, threshold=1.5, min_subunits=1)
    assert run(boundary([], [b"a"])) is False  # -0.9
    assert run(boundary([], [b"a", b"a"])) is True  # -1.8
    assert run(boundary([[b"a"], [b"a", EOS]], [b"a"])) is False  # the context is the baseline
    assert run(boundary([[b"a"], [b"a"]], [b"a", b"a"])) is True
    up = CriticBoundary(critic, threshold=0.7, sign="up")
    assert run(up([], [b"b", b"b"])) is True and run(up([], [b"a", b"b"])) is False
    coalesced = CriticBoundary(critic, threshold=1.5, coalesce_grammar=True)
    assert run(coalesced([], [b"a"], cumulative_logw=-0.7)) is True  # -0.9 - 0.7
    assert run(boundary([], [b"a"], cumulative_logw=-0.7)) is False  # not coalesced


def test_critic_boundary_caches_baselines_and_skips_the_critic_outside_the_gate():
    calls = []

    class Counting(_Critic):
        async def prefix(self, context):
            calls.append(list(context))
            return await super().prefix(context)

    boundary = CriticBoundary(Counting(), threshold=10.0, min_subunits=2, max_subunits=3)
    run(boundary([[b"a"]], [b"b"]))  # below min_subunits
    run(boundary([[b"a"]], [b"b", b"c", b"a"]))  # at max_subunits
    assert calls == []
    run(boundary([[b"a"]], [b"b", b"c"]))
    run(boundary([[b"a"]], [b"b", b"b"]))
    assert calls == [[b"a"], [b"a", b"b", b"c"], [b"a", b"b", b"b"]]  # one baseline
    boundary.reset()
    assert len(boundary._baseline_cache) == 0


def test_a_failing_critic_ends_no_unit_and_says_why():
    class Failing:
        async def prefix(self, context):
            raise RuntimeError("critic server down")

    boundary = CriticBoundary(Failing(), threshold=1.0)
    with pytest.warns(RuntimeWarning, match="critic server down"):
        assert run(boundary([], [b"a"])) is False


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="sign must be"):
        SurpriseBoundary(sign="sideways")
    for bad in (0, -1.0):
        with pytest.raises(ValueError, match="threshold must be positive"):
            SurpriseBoundary(threshold=bad)
    with pytest.raises(TypeError, match="threshold must be a number"):
        SurpriseBoundary(threshold="1")
    with pytest.raises(ValueError, match="min_subunits must be >= 1"):
        SurpriseBoundary(min_subunits=0)
    with pytest.raises(ValueError, match=r"max_subunits \(3\) must be >= min_subunits \(5\)"):
        SurpriseBoundary(min_subunits=5, max_subunits=3)
    with pytest.raises(TypeError, match="max_subunits must be an int"):
        SurpriseBoundary(max_subunits=2.5)
    with pytest.raises(TypeError, match="prefix"):
        CriticBoundary(object())
