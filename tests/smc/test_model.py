"""Model API: weights, twists, cloning, proposals and submodels."""

import asyncio
import copy
import math

import numpy as np
import pytest

from genlm_lab.backend import ToyLM
from genlm_lab.smc import (
    Bernoulli,
    LMContext,
    LogCategorical,
    Model,
    SubModel,
    smc_standard,
    submodel,
)
from genlm_lab.smc.rng import using_rng


class Empty(Model):
    async def step(self):
        self.finish()


def test_score_condition_and_finish_update_weight_and_flag():
    m = Empty()
    m.score(-1.5)
    m.score(0.5)
    assert m.weight == pytest.approx(-1.0)
    m.condition(True)
    assert m.weight == pytest.approx(-1.0) and not m.done_stepping()
    m.condition(False)
    assert m.weight == -math.inf and m.done_stepping()


def test_twist_is_removed_by_untwist_and_by_finish():
    m = Empty()
    m.score(-2.0)
    m.twist(3.0)
    m.twist(-0.5)
    assert m.weight == pytest.approx(0.5)
    m.untwist()
    assert m.weight == pytest.approx(-2.0) and m.twist_amount == 0
    m.twist(1.0)
    m.finish()
    assert m.weight == pytest.approx(-2.0) and m.finished


def test_invalid_scores_are_rejected():
    m = Empty()
    with pytest.raises(ValueError, match="score"):
        m.score(math.nan)
    with pytest.raises(ValueError, match="twist"):
        m.twist(-math.inf)


class Shared(Model):
    def __init__(self):
        super().__init__()
        self.table = [1, 2, 3]
        self.state = [0]

    def immutable_properties(self):
        return {"table"}


def test_immutable_properties_are_shared_and_the_rest_copied():
    m = Shared()
    c = copy.deepcopy(m)
    assert c.table is m.table
    assert c.state == m.state and c.state is not m.state
    c.state.append(1)
    assert m.state == [0]


async def test_sample_with_proposal_adds_log_p_minus_log_q():
    m = Empty()
    target = LogCategorical(np.log([0.2, 0.3, 0.5]))
    proposal = LogCategorical(np.log([0.6, 0.3, 0.1]))
    with using_rng(np.random.default_rng(0)):
        for _ in range(20):
            before = m.weight
            x = await m.sample(target, proposal=proposal)
            assert m.weight - before == pytest.approx(
                math.log([0.2, 0.3, 0.5][x]) - math.log([0.6, 0.3, 0.1][x])
            )


class _ZeroProposal:
    async def sample(self):
        return 1, -math.inf


class _CountingTarget:
    def __init__(self):
        self.calls = 0

    async def log_prob(self, x):
        self.calls += 1
        return 0.0


async def test_a_zero_probability_proposal_is_refused_before_the_target_changes():
    m = Empty()
    target = _CountingTarget()
    with pytest.raises(ValueError, match="probability 0 under itself"):
        await m.sample(target, proposal=_ZeroProposal())
    assert target.calls == 0 and m.weight == 0.0


async def test_sample_without_proposal_leaves_weight_and_observe_adds_log_p():
    m = Empty()
    await m.sample(Bernoulli(0.3))
    assert m.weight == 0.0
    assert await m.observe(Bernoulli(0.3), True) is True
    assert m.weight == pytest.approx(math.log(0.3))
    await m.intervene(Bernoulli(0.3), False)
    assert m.weight == pytest.approx(math.log(0.3))


@submodel
async def observe_twice(self, p):
    await self.observe(Bernoulli(p), True)
    await self.observe(Bernoulli(p), True)
    return "done"


class Double(SubModel):
    def __init__(self, amount):
        super().__init__()
        self.amount = amount

    async def forward(self):
        self.score(self.amount)
        return await self.call(observe_twice(0.5))


async def test_submodels_weight_their_parent():
    m = Empty()
    assert await m.call(observe_twice(0.25)) == "done"
    assert m.weight == pytest.approx(2 * math.log(0.25))
    m2 = Empty()
    assert await m2.call(Double(1.0)) == "done"
    assert m2.weight == pytest.approx(1.0 + 2 * math.log(0.5))
    assert observe_twice.__name__ == "observe_twice"


async def test_submodel_outside_a_model_says_how_to_call_it():
    with pytest.raises(RuntimeError, match="model.call"):
        await Double(1.0).forward()


async def test_step_must_be_defined():
    with pytest.raises(NotImplementedError, match="step"):
        await Model().step()


class ScoresAfterAwait(SubModel):
    """Awaits (as an LM request would) before it weights its parent."""

    async def forward(self):
        await asyncio.sleep(0)
        self.score(1.0)
        return self.parent


SHARED = ScoresAfterAwait()  # one instance, called by every particle


class CallsShared(Model):
    async def step(self):
        assert await self.call(SHARED) is self
        self.finish()


async def test_one_submodel_instance_called_by_concurrent_particles_weights_each_caller():
    # self.parent was one attribute: a second particle's call overwrote it while the
    # first awaited, so the first particle's score went to the second (or nowhere).
    a, b = Empty(), Empty()
    assert await asyncio.gather(a.call(SHARED), b.call(SHARED)) == [a, b]
    assert a.weight == b.weight == 1.0
    assert SHARED.parent is None
    result = await smc_standard(CallsShared(), 4, seed=0)
    assert result.log_weights.tolist() == [1.0] * 4


class SharedAndAliased(Shared):
    """Refers to its shared table a second time, inside a copied attribute."""

    def __init__(self):
        super().__init__()
        self.view = {"rows": self.table}


def test_a_shared_property_stays_shared_where_other_attributes_refer_to_it():
    # Copying `view` copied the table it holds: clone.view["rows"] was no longer
    # clone.table, and an uncopyable shared object (an LM) made cloning fail.
    m = SharedAndAliased()
    c = copy.deepcopy(m)
    assert c.view["rows"] is c.table is m.table
    assert c.state is not m.state


class _Uncopyable:
    def __deepcopy__(self, memo):
        raise TypeError("cannot pickle '_thread.RLock' object")


class HoldsAnLM(Model):
    def __init__(self):
        super().__init__()
        self.flips = []
        self.backend = _Uncopyable()

    async def step(self):
        self.finish()


async def test_an_attribute_that_cannot_be_copied_is_named_with_the_remedy():
    with pytest.raises(TypeError, match=r"'backend'.*RLock.*immutable_properties"):
        await smc_standard(HoldsAnLM(), 2, seed=0)


async def _plain(self):
    return 1


@pytest.mark.parametrize(
    ("sub", "match"),
    [
        (observe_twice, r"the class observe_twice.*observe_twice\(\.\.\.\)"),
        (_plain(None), r"coroutine.*not a SubModel.*@submodel"),
    ],
    ids=["class", "coroutine"],
)
@pytest.mark.parametrize("via", ["model", "submodel"])
async def test_calling_something_that_is_not_a_submodel_says_what_to_pass(sub, match, via):
    # They failed with "missing 1 required positional argument: 'parent'" or
    # "'coroutine' object has no attribute 'run_with_parent'".
    m = Empty()
    caller = m if via == "model" else Double(0.0)
    with pytest.raises(TypeError, match=match):
        if via == "model":
            await m.call(sub)
        else:
            caller.parent = m
            await caller.call(sub)
    if asyncio.iscoroutine(sub):
        sub.close()
    assert m.weight == 0.0


class KeepsItsLM(Model):
    """A program that keeps its LM in a plain attribute (not in immutable_properties)."""

    def __init__(self, lm):
        super().__init__()
        self.lm = lm
        self.context = None

    async def start(self):
        self.context = LMContext(self.lm, [])

    async def step(self):
        await self.sample(self.context.next_token())
        if self.context.ended or self.context.token_count >= 3:
            self.finish()


async def test_a_program_keeping_its_lm_in_an_attribute_shares_it_across_particles():
    lm = ToyLM([b"a", b"b", b"<eos>"], seed=3, eos=b"<eos>")
    result = await smc_standard(KeepsItsLM(lm), 4, seed=0)
    assert all(p.lm is lm for p in result)
