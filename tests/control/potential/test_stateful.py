"""StatefulPotential and PriorityMap against plain models: whole-context sums and sorted lists."""

from __future__ import annotations

import asyncio
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genlm_lab.control import EOS, ParticleState, PriorityMap, StatefulPotential, make_immutable


def run(coro):
    return asyncio.run(coro)


# ---------------------------------------------------------------- make_immutable


@given(st.lists(st.integers(0, 255)))
def test_byte_values_become_bytes_with_the_same_items(values):
    key = make_immutable(values)
    assert isinstance(key, bytes)
    assert list(key) == values


@given(st.lists(st.one_of(st.integers(256, 1000), st.binary(max_size=3)), min_size=1))
def test_other_tokens_become_a_hashable_tuple_with_the_same_items(tokens):
    key = make_immutable(tokens)
    hash(key)
    assert isinstance(key, tuple)
    assert list(key) == tokens


@given(st.one_of(st.text(), st.binary(), st.tuples(st.integers(), st.integers())))
def test_immutable_contexts_come_back_as_they_are(context):
    assert make_immutable(context) is context


# ---------------------------------------------------------------- PriorityMap vs a model

ops = st.lists(
    st.one_of(
        st.tuples(st.just("set"), st.integers(0, 6), st.integers(-5, 5)),
        st.tuples(st.just("del"), st.integers(0, 6), st.just(0)),
        st.tuples(st.just("pop"), st.just(0), st.just(0)),
        st.tuples(st.just("peek"), st.just(0), st.just(0)),
    ),
    max_size=200,
)


@settings(max_examples=150, deadline=None)
@given(ops)
def test_priority_map_agrees_with_a_dict_model(operations):
    pmap, model = PriorityMap(), {}
    for op, key, priority in operations:
        if op == "set":
            pmap[key] = priority
            model[key] = priority
        elif op == "del":
            if key in model:
                del pmap[key]
                del model[key]
            else:
                with pytest.raises(KeyError):
                    del pmap[key]
        elif not model:
            with pytest.raises(ValueError):
                pmap.pop() if op == "pop" else pmap.peek()
        else:
            got_key, got = pmap.pop() if op == "pop" else pmap.peek()
            assert got == min(model.values()) == model[got_key]
            if op == "pop":
                del model[got_key]
        assert len(pmap) == len(model)
        assert dict(zip(pmap, (pmap[k] for k in pmap), strict=True)) == model
        assert all((k in pmap) == (k in model) for k in range(7))


@given(st.dictionaries(st.text(max_size=3), st.floats(allow_nan=False)))
def test_popping_everything_sorts_by_priority(items):
    pmap = PriorityMap()
    for key, priority in items.items():
        pmap[key] = priority
    popped = [pmap.pop() for _ in range(len(items))]
    assert [p for _, p in popped] == sorted(items.values())
    assert dict(popped) == items
    assert len(pmap) == 0


def test_repr_shows_the_priorities():
    pmap = PriorityMap()
    pmap["b"], pmap["a"] = 2, 1
    pmap["b"] = 3  # a new priority keeps the key's place
    assert repr(pmap) == "PriorityMap(" + repr({"b": 3, "a": 1}) + ")"


# ---------------------------------------------------------------- StatefulPotential


def token_weight(token) -> float:
    """The reference: a context's prefix weight is the sum of its tokens' weights."""
    return -math.inf if token == 7 else -0.1 * (token % 5)


def reference_prefix(context) -> float:
    return sum(token_weight(t) for t in context)


def reference_complete(context) -> float:
    return reference_prefix(context) + (0.0 if len(context) % 2 == 0 else -1.0)


class SumState(ParticleState):
    """Adds token weights as tokens arrive; counts what it was fed and how many are open."""

    def __init__(self, owner):
        super().__init__(owner)
        self.total = 0.0
        self.done = False
        owner.open_states += 1

    @property
    def current_score(self):
        if self.done:
            return self.total + (0.0 if len(self.context) % 2 == 0 else -1.0)
        return self.total

    async def impl_update_context(self, incremental_context):
        await asyncio.sleep(0)  # a real state awaits something: let other calls interleave
        self.owner.tokens_fed += len(incremental_context)
        self.total += sum(token_weight(t) for t in incremental_context)

    async def impl_finish(self):
        self.done = True
        self.owner.open_states -= 1


class SumPotential(StatefulPotential):
    def __init__(self, cache_size=100):
        self.open_states = 0
        self.tokens_fed = 0
        super().__init__(list(range(10)), state_class=SumState, cache_size=cache_size)


contexts = st.lists(st.integers(0, 9).filter(lambda t: t != 7), max_size=8)


@settings(max_examples=60, deadline=None)
@given(
    queries=st.lists(st.tuples(st.sampled_from(["prefix", "complete"]), contexts), max_size=25),
    cache_size=st.integers(0, 4),
)
def test_scores_equal_the_whole_context_reference_and_the_cache_stays_bounded(queries, cache_size):
    async def main():
        potential = SumPotential(cache_size=cache_size)
        for method, context in queries:
            got = await getattr(potential, method)(context)
            want = (reference_prefix if method == "prefix" else reference_complete)(context)
            assert got == pytest.approx(want)
            assert potential.open_states <= cache_size
        concurrent = await potential.batch_prefix([c for _, c in queries] or [[]])
        np.testing.assert_allclose(
            concurrent, [reference_prefix(c) for _, c in queries] or [0.0], atol=1e-12
        )
        await potential.cleanup()
        assert potential.open_states == 0
        assert potential.cached_contexts() == []

    run(main())


@settings(max_examples=60, deadline=None)
@given(cached=st.lists(contexts, max_size=8), query=contexts)
def test_a_query_resumes_from_its_longest_cached_prefix(cached, query):
    async def main():
        potential = SumPotential(cache_size=100)
        for context in cached:
            await potential.prefix(context)
        # each query took (and extended) the state of its longest cached prefix
        keys = [list(k) for k in potential.cached_contexts()]
        assert cached == [] or list(cached[-1]) in keys
        longest = max((len(k) for k in keys if query[: len(k)] == k), default=0)
        before = potential.tokens_fed
        await potential.prefix(query)
        assert potential.tokens_fed - before == len(query) - longest
        await potential.cleanup()

    run(main())


def test_extending_a_context_token_by_token_feeds_each_token_once():
    async def main():
        potential = SumPotential(cache_size=2)
        context = [1, 2, 3, 4, 5, 6, 8, 9]
        for n in range(len(context) + 1):
            await potential.prefix(context[:n])
        assert potential.tokens_fed == len(context)
        await potential.cleanup()

    run(main())


@settings(max_examples=30, deadline=None)
@given(context=contexts)
def test_logw_next_equals_brute_force_and_leaves_no_state_open(context):
    async def main():
        potential = SumPotential(cache_size=3)
        weights = (await potential.logw_next(context)).weights
        base = reference_prefix(context)
        want = [reference_prefix([*context, t]) - base for t in range(10)]
        want.append(reference_complete(context) - base)
        np.testing.assert_allclose(weights, want)
        assert potential.open_states <= 3
        await potential.cleanup()
        assert potential.open_states == 0

    run(main())


def test_logw_next_of_a_ruled_out_context_raises():
    async def main():
        potential = SumPotential()
        with pytest.raises(ValueError, match="weight zero"):
            await potential.logw_next([7])
        await potential.cleanup()

    run(main())


def test_score_with_eos_is_complete():
    async def main():
        potential = SumPotential()
        assert await potential.score([1, 2, 3, EOS]) == pytest.approx(reference_complete([1, 2, 3]))
        await potential.cleanup()

    run(main())


def test_bytes_and_byte_values_share_cached_states():
    class ByteState(SumState):
        async def impl_update_context(self, incremental_context):
            self.owner.tokens_fed += len(incremental_context)

    class BytePotential(StatefulPotential):
        def __init__(self):
            self.open_states = 0
            self.tokens_fed = 0
            super().__init__(list(range(256)), state_class=ByteState)

    async def main():
        potential = BytePotential()
        await potential.prefix(b"ab")
        await potential.prefix([97, 98, 99])  # resumes from b"ab"
        await potential.prefix([b"a", b"b", b"c", b"d"])  # and from b"abc"
        assert potential.tokens_fed == 4
        await potential.cleanup()

    run(main())


def test_without_a_state_class_new_state_is_not_implemented():
    with pytest.raises(NotImplementedError):
        run(StatefulPotential([0, 1]).new_state())


def test_finished_states_ignore_tokens_and_are_their_own_clones():
    async def main():
        potential = SumPotential()
        state = await potential.new_state()
        await state.update_context([1, 2])
        copy = await state.clone()
        assert copy is not state and copy.context == [1, 2]
        assert copy.current_score == state.current_score
        await state.finish()
        await state.update_context([3])
        await state.finish()
        assert state.context == [1, 2]
        assert await state.clone() is state

    run(main())


def test_a_spawned_copy_scores_the_same_from_its_own_empty_cache():
    async def main():
        potential = SumPotential()
        await potential.prefix([1, 2])
        cached = potential.cached_contexts()
        twin = potential.spawn()
        assert twin.cached_contexts() == []
        assert await twin.prefix([1, 2, 3]) == pytest.approx(reference_prefix([1, 2, 3]))
        assert potential.cached_contexts() == cached
        await twin.cleanup()
        await potential.cleanup()

    run(main())
