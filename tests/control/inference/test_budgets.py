"""Budgets: SMC hands `max_tokens` to the factors that can finish, and the target stays exact.

On a seeded ToyLM over a tiny vocabulary, every sequence of at most
`max_tokens` tokens is enumerated with its exact weight (`exact_completions`):
the budgeted runs' normalising constant is unbiased for it and their
posterior converges to it, so nothing is set aside; and with the budget no
particle is cut at `max_tokens`.
"""

from __future__ import annotations

import asyncio
import copy
import math
import warnings

import numpy as np
import pytest
from _toys import assert_step_properly_weighted, exact_completions, toy_llm, within

from genlm_lab.control import (
    AWRS,
    SMC,
    BoolFSA,
    BudgetTooSmall,
    EndOfSequence,
    direct_token_sampler,
)
from genlm_lab.control.constraint.budget import AutomatonDistance, FinishGuide
from genlm_lab.control.constraint.budget.tokens import (
    byte_trie,
    token_bytes,
    usable_mask,
)
from genlm_lab.control.inference.budgets import Budget, BudgetedSampler, budget_for, with_budget

MAIL = [b"a", b"b", b"ab", b"@", b".", b"c", b"<eos>"]
PATTERN = r"(ab|b)+@c(\.c)?"


def run(coro):
    return asyncio.run(coro)


def _normalise(weights: dict) -> dict:
    total = sum(weights.values())
    return {k: v / total for k, v in weights.items()}


def _tv(p: dict, q: dict) -> float:
    return 0.5 * sum(abs(p.get(k, 0.0) - q.get(k, 0.0)) for k in set(p) | set(q))


def _setup(pattern: str = PATTERN):
    llm = toy_llm(vocab=MAIL, seed=5)
    return llm, BoolFSA.from_regex(pattern).coerce(llm, f=b"".join)


def _cut(sequences) -> int:
    """Particles that reached max_tokens without finishing (EOS forced, weight zero)."""
    return sum(
        1
        for step in sequences.record.steps
        for e in step.get("extras", [])
        if e and e.get("cut") and e.get("killed_by")
    )


@pytest.mark.parametrize("kind", ["awrs", "direct"])
def test_the_budgeted_run_is_unbiased_for_the_constraint_within_max_tokens(kind):
    llm, constraint = _setup()
    exact = run(exact_completions(llm * constraint, 5))
    sampler = AWRS(llm, constraint) if kind == "awrs" else direct_token_sampler(llm * constraint)
    smc = SMC(sampler, record_factors=False)
    z = []
    for seed in range(40):
        z.append(math.exp(run(smc(8, 0.5, 5, seed=seed)).log_ml))
    assert within(np.array(z), sum(exact.values()))
    stats = smc.budget_stats[next(iter(smc.budget_stats))]
    assert stats["refused"] > 0  # the budget did refuse tokens


@pytest.mark.slow
def test_the_budgeted_posterior_is_the_exact_conditional_and_no_particle_is_cut():
    llm, constraint = _setup()
    exact = _normalise(run(exact_completions(llm * constraint, 5)))
    pooled: dict = {}
    # max_accepts=10 and no resampling: independent, little-varying weights, so the pooled
    # posterior's error shrinks as 1/sqrt(1500)
    for seed in range(6):
        sequences = run(SMC(AWRS(llm, constraint, max_accepts=10))(250, 0.0, 5, seed=seed))
        assert _cut(sequences) == 0
        assert np.isfinite(sequences.log_weights).all()  # AWRS redraws: every particle ends
        for key, p in dict(sequences.posterior).items():
            pooled[key] = pooled.get(key, 0.0) + p / 6
    assert set(pooled) <= set(exact)
    # measured 0.018 over 20 such runs (0.048 without the budget, whose cut particles are wasted)
    assert _tv(pooled, exact) < 0.06


def test_without_the_budget_particles_are_cut_and_with_it_none_are():
    llm, constraint = _setup(r"[ab]+@(ab|c)+\.c")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        off = run(AWRS(llm, constraint).smc(12, 0.5, 7, seed=0, budget=False))
        on = run(AWRS(llm, constraint).smc(12, 0.5, 7, seed=0))
    assert _cut(off) > 0
    assert _cut(on) == 0 and np.isfinite(on.log_weights).all()


def test_a_product_is_budgeted_factor_by_factor():
    llm, first = _setup(r"[ab]+@c(\.c)?")
    second = BoolFSA.from_regex(r"(ab|b)+.*").coerce(llm, f=b"".join)  # not plain: searched
    sampler = AWRS(llm, first * second)
    budget = budget_for(sampler, 5)
    assert [name for _, name, _ in budget.factors] == ["BoolFSA", "BoolFSA#2"]
    assert isinstance(budget.factors[0][2], AutomatonDistance)
    exact = run(exact_completions(llm * first * second, 5))
    z = [math.exp(run(sampler.smc(8, 0.5, 5, seed=s)).log_ml) for s in range(30)]
    assert within(np.array(z), sum(exact.values()))


def test_with_budget_picks_the_sampler_form_and_leaves_unconstrained_runs_alone():
    llm, constraint = _setup()
    awrs = AWRS(llm, constraint)
    budgeted, budget = with_budget(awrs, 5)
    assert isinstance(budgeted, AWRS) and budgeted.budget is budget and awrs.budget is None
    assert "within 5 tokens" in repr(budgeted)
    direct, _ = with_budget(direct_token_sampler(llm * constraint), 5)
    assert isinstance(direct, BudgetedSampler)
    plain, none = with_budget(direct_token_sampler(llm), 5)
    assert none is None and not isinstance(plain, BudgetedSampler)


def test_a_direct_draw_that_cannot_end_in_time_names_the_factor_and_budget():
    llm, constraint = _setup()
    sampler = BudgetedSampler(direct_token_sampler(llm * constraint), budget_for(
        direct_token_sampler(llm * constraint), 3))  # fmt: skip
    seen = False
    for _ in range(60):
        token, logw, _, info = run(sampler.sample_with_info([]))
        if "budget" in info:
            seen = True
            assert logw == -math.inf and info["budget"]["max_tokens"] == 3
            assert info["factors"][1] == -math.inf  # the constraint, not the LM
    assert seen


def test_a_run_that_cannot_end_at_all_starts_dead():
    llm, constraint = _setup()  # the shortest text takes 3 tokens and EOS
    assert not run(
        Budget([(1, "c", budget_for(AWRS(llm, constraint), 9).factors[0][2])], 3).ends_in_time([])
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sequences = run(SMC(AWRS(llm, constraint))(4, 0.5, 3, seed=0))
    assert sequences.log_ml == -math.inf
    assert not any(isinstance(c[-1], EndOfSequence) for c in sequences.contexts if c)
    # said up front, naming the budget and the ways out, not only "start() gave weight zero"
    too_small = [w for w in caught if issubclass(w.category, BudgetTooSmall)]
    assert len(too_small) == 1
    assert "max_tokens=3" in str(too_small[0].message)
    assert "budget=False" in str(too_small[0].message)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run(SMC(AWRS(llm, constraint))(4, 0.5, 3, seed=0, budget=False))
    assert not any(issubclass(w.category, BudgetTooSmall) for w in caught)


def _misguided(llm, constraint, max_tokens: int):
    """A budgeted AWRS whose guide misjudges: its "finish" grows with the text (b"ab" per
    two bytes written), so longer prefixes look as if they overran though many end in time.
    """
    sampler = AWRS(llm, constraint, max_accepts=10)
    ((index, name, finisher),) = budget_for(sampler, max_tokens).factors
    trie = byte_trie(token_bytes(constraint), np.flatnonzero(usable_mask(constraint)).tolist())
    finisher = copy.copy(finisher)
    finisher.guide = FinishGuide(
        lambda text: b"ab" * (len(text) // 2 + 1), token_bytes(constraint), trie
    )
    budget = Budget([(index, name, finisher)], max_tokens)
    budget.eps = budget.penalty = 0.3  # any are exact; a misjudging guide's weights vary less
    assert budget.guides
    return sampler.budgeted(budget), budget


@pytest.mark.slow
def test_a_guided_draw_is_properly_weighted_for_the_twisted_step():
    """E[w 1{t = y}] = p(y) c(y) psi(x + y) / psi(x), token by token, where the guide misjudges."""
    llm, constraint = _setup()
    sampler, budget = _misguided(llm, constraint, 6)
    vocab = sampler.target.vocab_eos
    ab, b = vocab[2], vocab[1]
    base = budget.eps * budget.penalty
    draws = 4000
    for context in ([ab], [ab, b], [ab, ab, b]):  # the last one already overruns
        over = budget.overrun(context)
        drawn = [run(sampler.sample(context))[:2] for _ in range(draws)]
        weights = run((llm * constraint).logw_next(context))
        exact = {}
        for token in vocab:
            logp = float(weights[token])
            if logp > -math.inf and (
                token == vocab[-1] or run(budget.ends_in_time(context, token))
            ):
                exact[token] = math.exp(logp) * base ** (budget.overrun(context, token) - over)
        assert_step_properly_weighted(drawn, exact, context)
    assert budget.guide_stats["plain"] > 0 and budget.guide_stats["overran"] > 0


@pytest.mark.slow
def test_a_misjudging_guide_steers_but_sets_nothing_aside():
    llm, constraint = _setup()
    exact = run(exact_completions(llm * constraint, 6))
    z, stats = [], {"guided": 0, "overran": 0}
    for seed in range(120):
        sampler, budget = _misguided(llm, constraint, 6)
        sequences = run(SMC(sampler)(10, 0.5, 6, seed=seed, budget=False))
        z.append(math.exp(sequences.log_ml))
        assert set(dict(sequences.posterior)) <= set(exact)
        for key in stats:
            stats[key] += budget.guide_stats[key]
    assert stats["guided"] > 0 and stats["overran"] > 0  # the guide was used and misjudged
    # the normalising constant stays unbiased, though the guide's view (a long text
    # overruns) would set aside most of the mass if it were a cut
    assert within(np.array(z), sum(exact.values()))


def test_a_value_the_finish_cannot_complete_is_an_alarm_naming_its_path_and_keyword():
    from genlm_lab.control import FinishWarning, JsonSchema

    vocab = [b'{"p": "', b"a", b"b", b'"}', b"<eos>"]
    llm = toy_llm(vocab=vocab, seed=1)
    schema = JsonSchema({"type": "object", "properties": {"p": {"type": "string",
                         "pattern": "^(?=a)ab$"}}, "required": ["p"]})  # fmt: skip
    sampler = AWRS(llm, schema.coerce(llm, f=b"".join))
    with pytest.warns(FinishWarning, match=r"\$\.p: pattern"):
        sequences = run(sampler.smc(4, 0.5, 6, seed=0))
    alarms = [a for a in sequences.record.alarms if a[1] == "unfinishable"]
    assert len(alarms) == 1
    assert "$.p: pattern cannot be finished" in alarms[0][2] and "JsonSchema" in alarms[0][2]
    # said once per schema: a second run that meets it again raises no new alarm
    again = run(sampler.smc(4, 0.5, 6, seed=1))
    assert not [a for a in again.record.alarms if a[1] == "unfinishable"]


class _OverrunGuide:
    """Token 1's finish overruns the tokens left by one, token 0's fits."""

    def overrun(self, ids, left):
        return int(bool(ids) and ids[-1] == 1)

    def unfinishable(self):
        return []


class _GuidedFinisher:
    guide = _OverrunGuide()
    lookup = {"fits": 0, "overruns": 1}
    stats: dict = {}

    def encode(self, context):
        return [self.lookup[t] for t in context]


def test_an_overrunning_plain_draw_weighs_less_than_a_guided_draw_the_model_dislikes():
    # cloudbuild:GoModules: guided draws (close the string now) held e^-6 of the model's
    # mass, a plain draw that overran ~all of it; at penalty 0.01 the plain one won every
    # resampling, and it could no longer end in time
    budget = Budget([(0, "toy", _GuidedFinisher())], 10)
    plain = budget.twist([], "overruns", over=0, limit=None)
    guided = budget.twist([], "fits", over=0, limit=0)
    assert guided == 0.0
    assert math.log(1.0) + plain < -6.0 + guided


def test_a_d_class_too_long_for_the_budget_is_said_up_front_with_its_minimum():
    """`\\d` classes have a lower bound (their superset's count), so a budget below it is
    `BudgetTooSmall` before the run, naming the tokens the shortest text needs."""
    vocab = [*(str(d).encode() for d in range(10)), b"-", "的一是".encode(), b"<eos>"]
    llm = toy_llm(vocab=vocab, seed=1)
    constraint = BoolFSA.from_regex(r"\d{3}-\d{4}").coerce(llm, f=b"".join)
    for sampler in (AWRS(llm, constraint), direct_token_sampler(llm * constraint)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            sequences = run(SMC(sampler)(3, 0.5, 8, seed=0))
        (too_small,) = [w for w in caught if issubclass(w.category, BudgetTooSmall)]
        assert "max_tokens=8 (EOS included; it needs at least 9)" in str(too_small.message)
        assert sequences.log_ml == -math.inf
