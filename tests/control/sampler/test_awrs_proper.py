"""awrs_proper: the step's closed-form finish has the loop's law, and the loop is unchanged before it."""

from __future__ import annotations

import asyncio
import math

import numpy as np
import pytest
from _toys import RegexConstraint, TablePotential, assert_step_properly_weighted, within
from scipy import stats

from genlm_lab.control import AWRS, EOS, Potential
from genlm_lab.control.sampler import awrs_proper
from genlm_lab.control.sampler.awrs_proper import finish_counts


def run(coro):
    return asyncio.run(coro)


VOCAB = [bytes([c]) for c in b"abcdefgh"]
LOGITS = np.log([0.30, 0.20, 0.06, 0.15, 0.04, 0.10, 0.08, 0.05, 0.02])  # a..h, EOS
ALLOWED = {b"c", b"e", b"g"}  # 18% of the mass


class FirstToken(Potential):
    """Boolean: the first token must be in `allowed`; `logw_next` is its own (a mask)."""

    is_boolean = True

    def __init__(self, vocab, allowed, lie=False):
        super().__init__(vocab)
        self.allowed, self.lie, self.masks = allowed, lie, 0

    async def prefix(self, context):
        return 0.0 if not context or context[0] in self.allowed else -math.inf

    async def complete(self, context):
        return 0.0 if context and context[0] in self.allowed else -math.inf

    async def logw_next(self, context):
        self.masks += 1
        weights = (await super().logw_next(context)).weights
        return self.make_lazy_weights(np.zeros_like(weights) if self.lie else weights)


def _sampler(mask_after, seed=0, max_accepts=2, allowed=ALLOWED, vocab=VOCAB, logits=LOGITS, **kw):
    lm = TablePotential(vocab, lambda ctx: logits)
    sampler = AWRS(lm, FirstToken(vocab, allowed, **kw), seed=seed, max_accepts=max_accepts)
    sampler.mask_after = mask_after
    return sampler


def _steps(sampler, n, context=()):
    async def go():
        return [await sampler.sample_with_info(list(context)) for _ in range(n)]

    return run(go())


def _joint_pvalue(steps, r, allowed=ALLOWED):
    """Chi-square p-value of the (first token, N) counts against the i.i.d. law:
    P(y, n) = q(y) / q(S) * NB(n - r; r, p), p = q(S) / W (bins under 5 expected merged)."""
    q = np.exp(LOGITS)
    index = {t: i for i, t in enumerate(VOCAB)}
    p = sum(q[index[t]] for t in allowed) / q.sum()
    cells, probs = [], []
    for y in sorted(allowed):
        for n in range(r, r + 40):
            cells.append((y, n))
            probs.append(q[index[y]] / (p * q.sum()) * stats.nbinom.pmf(n - r, r, p))
    probs = np.array(probs)
    seen = {cell: 0 for cell in cells}
    for token, _, _, info in steps:
        key = (token, info["awrs"]["n_draws"])
        seen[key] = seen.get(key, 0) + 1
    observed = np.array([seen[c] for c in cells], dtype=float)
    tail = len(steps) - observed.sum()  # N beyond the table
    expected = probs * len(steps)
    small = expected < 5
    observed = np.append(observed[~small], observed[small].sum() + tail)
    expected = np.append(expected[~small], len(steps) - expected[~small].sum())
    return stats.chisquare(observed, expected).pvalue


@pytest.mark.parametrize(("mask_after", "r"), [(0, 2), (2, 3)])
def test_the_finish_draws_first_token_and_count_from_the_iid_law(mask_after, r):
    steps = _steps(_sampler(mask_after, seed=r, max_accepts=r), 3000)
    assert sum("summarised" in s[3]["awrs"] for s in steps) > (2999 if mask_after == 0 else 1000)
    assert _joint_pvalue(steps, r) > 1e-3


def test_the_law_test_rejects_a_wrong_success_probability_or_first_token(monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(awrs_proper, "finish_counts", lambda p, *a: finish_counts(0.8 * p, *a))
        assert _joint_pvalue(_steps(_sampler(0, seed=2), 3000), 2) < 1e-6
    with monkeypatch.context() as m:  # the first accept uniform over S instead of q | S
        m.setattr(awrs_proper, "pick_weighted", lambda w, rng: list(w)[rng.integers(len(w))])
        assert _joint_pvalue(_steps(_sampler(0, seed=2), 3000), 2) < 1e-6


def test_the_finish_is_properly_weighted():
    steps = _steps(_sampler(1, seed=7), 3000)
    q = np.exp(LOGITS)
    exact = {t: float(q[i]) for i, t in enumerate(VOCAB) if t in ALLOWED}
    assert_step_properly_weighted([(s[0], s[1]) for s in steps], exact)
    w = np.exp([s[1] for s in steps])
    assert within(w, sum(exact.values())) and not within(w, 1.1 * sum(exact.values()))


def test_max_rejects_stops_with_the_loops_probability():
    # r = 2 accepts before 3 rejected draws: P(stop) = P(NB(2, p) failures >= 3)
    q = np.exp(LOGITS)
    p = sum(q[i] for i, t in enumerate(VOCAB) if t in ALLOWED) / q.sum()
    exact = stats.nbinom.sf(2, 2, p)
    for mask_after in (0, 1):
        sampler = _sampler(mask_after, seed=11)
        sampler.max_rejects = 3
        stopped = np.array([s[1] == -math.inf for s in _steps(sampler, 2000)])
        se = math.sqrt(exact * (1 - exact) / len(stopped))
        assert abs(stopped.mean() - exact) < 4 * se, (mask_after, stopped.mean(), exact)


def test_finish_counts_stop_at_max_rejects_with_that_rejection():
    rng = np.random.default_rng(0)
    assert finish_counts(1.0, 3, 0, math.inf, rng) == (3, 0, False)
    draws, failed, stopped = finish_counts(1e-9, 2, 5, 8, rng)
    assert stopped and failed == 3 and draws == 3  # three more rejections, then stop
    counts = [finish_counts(0.25, 2, 0, math.inf, rng) for _ in range(4000)]
    assert abs(np.mean([d for d, _, _ in counts]) - 2 / 0.25) < 0.2  # E[N] = r / p


def _big(seed, mask_after, lie=False, budget=None):
    rng = np.random.default_rng(0)
    vocab = [f"t{i:03d}".encode() for i in range(400)]
    logits = rng.normal(scale=2.0, size=401)
    allowed = {vocab[i] for i in rng.choice(400, size=12, replace=False)}
    for t in allowed:
        logits[vocab.index(t)] -= 5.0
    sampler = _sampler(mask_after, seed, 3, allowed, vocab, logits, lie=lie)
    return sampler if budget is None else sampler.budgeted(budget)


def _same_until_the_finish(fast, slow):
    """Each fast step drew what the slow step drew, up to where it finished in closed form."""
    finished = 0
    for a, b in zip(fast, slow, strict=True):
        ta, tb = a[3]["awrs"], b[3]["awrs"]
        if "summarised" not in ta:
            assert a[:2] == b[:2] and ta == tb
            continue
        finished += 1
        summary = ta["summarised"]
        drawn = ta["drawn"][:-1] if summary["token"] else ta["drawn"]
        assert drawn == tb["drawn"][: len(drawn)] and ta["n_checks"] <= tb["n_checks"]
        assert summary["draws"] == summary["accepted"] + summary["rejected"] > 0
    return finished


def _first_steps(n, mask_after, **kw):
    """One step each of n samplers with seeds 0..n-1 (the same random numbers per seed)."""
    return [_steps(_big(seed, mask_after, **kw), 1)[0] for seed in range(n)]


def test_the_loop_draws_the_same_tokens_until_the_finish():
    fast = _first_steps(60, 40)
    assert _same_until_the_finish(fast, _first_steps(60, math.inf)) >= 30


class _Budget:
    """A guided budget: draws with limit 0 refuse the tokens in `over`; `unfit` never fit."""

    guides = [(0, None)]

    def __init__(self, over, unfit):
        self.over_set, self.unfit, self.asked = over, unfit, 0

    def plan(self, context, rng):
        return 0, 0

    def overrun(self, context, token=None):
        return int(token in self.over_set)

    async def ends_in_time(self, context, token=None):
        self.asked += 1
        return token not in self.unfit

    def twist(self, context, token, over, limit=None):
        return 0.0


def test_the_finish_respects_the_budget_and_the_guides_limit():
    q = np.exp(LOGITS)
    budget = _Budget(over={b"c"}, unfit={b"e"})
    sampler = _sampler(1, seed=5, allowed=ALLOWED | {b"a"}).budgeted(budget)
    steps = _steps(sampler, 3000)
    assert sum("summarised" in s[3]["awrs"] for s in steps) > 500
    exact = {t: float(q[i]) for i, t in enumerate(VOCAB) if t in {b"a", b"g"}}
    assert_step_properly_weighted([(s[0], s[1]) for s in steps], exact)


def test_with_a_budget_the_mask_answers_the_condition_until_few_tokens_are_left():
    # 12 allowed tokens of 400, the budget refuses 8: the mask comes at 3 checks, the
    # finish once the unchecked allowed tokens are no more than the checks made
    vocab = [f"t{i:03d}".encode() for i in range(400)]
    unfit = set(vocab[::3])
    fast = _first_steps(60, 3, budget=_Budget(set(), unfit))
    slow = _first_steps(60, math.inf, budget=_Budget(set(), unfit))
    assert _same_until_the_finish(fast, slow) >= 30


def test_a_mask_that_disagrees_with_the_checks_is_not_used():
    lying = _first_steps(30, 20, lie=True)
    assert _same_until_the_finish(lying, _first_steps(30, math.inf)) == 0


def test_a_condition_without_a_mask_of_its_own_is_asked_token_by_token():
    def steps(mask_after):
        lm = TablePotential(VOCAB, lambda ctx: LOGITS)
        sampler = AWRS(lm, RegexConstraint(VOCAB, rb"[ceg].*"), seed=1)
        sampler.mask_after = mask_after
        return _steps(sampler, 200)

    assert _same_until_the_finish(steps(0), steps(math.inf)) == 0


def test_a_grammar_condition_finishes_from_its_engines_mask():
    from genlm_lab.control import BoolFSA

    lm = TablePotential(VOCAB, lambda ctx: LOGITS)
    condition = BoolFSA.from_regex("[ceg]h*").coerce(lm, f=b"".join)
    sampler = AWRS(lm, condition, seed=2)
    sampler.mask_after = 0
    steps = _steps(sampler, 2000)
    assert all("summarised" in s[3]["awrs"] for s in steps)
    q = np.exp(LOGITS)
    exact = {t: float(q[i]) for i, t in enumerate(VOCAB) if t in ALLOWED}
    assert_step_properly_weighted([(s[0], s[1]) for s in steps], exact)
    token, logw, _, info = run(sampler.sample_with_info([b"c"]))  # h or EOS
    assert token in (b"h", EOS) and logw > -math.inf and info["factors"][1] == 0.0
