"""AsyncStreamingPotential: a checker over a byte stream scores as the same check on whole strings."""

from __future__ import annotations

import asyncio
import gc
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genlm_lab.control import EOS, AsyncStreamingPotential, BoolPredicate
from genlm_lab.control.potential.streaming import KEEP_ALIVE_SET, PING_TOKEN, SHUTDOWN_TOKEN


def run(coro):
    return asyncio.run(coro)


def depths(text: bytes) -> list[int]:
    depth, out = 0, [0]
    for b in text:
        depth += (b == ord("(")) - (b == ord(")"))
        out.append(depth)
    return out


# The reference: balanced parentheses, checked on whole strings by a plain potential.
REFERENCE = BoolPredicate(
    prefix_ok=lambda text: min(depths(text)) >= 0 and b"!" not in text,
    complete_ok=lambda text: depths(text)[-1] == 0,
)


class Parens(AsyncStreamingPotential):
    """The same check as a stream: raises at a stray ')' and returns -inf for '!'."""

    def __init__(self, cache_size=100):
        super().__init__(list(range(256)), cache_size=cache_size)
        self.streams: list[bytes] = []

    async def calculate_score_from_stream(self, stream):
        depth, seen = 0, b""
        async for chunk in stream:
            assert isinstance(chunk, bytes)
            seen += chunk
            for b in chunk:
                if b == ord("!"):
                    return -math.inf  # an early return settles the weight
                depth += (b == ord("(")) - (b == ord(")"))
                if depth < 0:
                    raise ValueError("unbalanced")
        self.streams.append(seen)
        return 0.0 if depth == 0 else -math.inf


texts = st.lists(st.sampled_from(b"()x!"), max_size=10).map(bytes)
queries = st.lists(
    st.tuples(st.sampled_from(["prefix", "complete"]), texts, st.floats(0, 1)), max_size=20
)


@settings(max_examples=60, deadline=None)
@given(queries=queries, cache_size=st.integers(0, 3))
def test_streaming_scores_equal_the_whole_string_check_and_no_task_is_left(queries, cache_size):
    async def main():
        potential = Parens(cache_size=cache_size)
        for method, text, cut in queries:
            context = text[: round(cut * len(text))]  # random prefixes, in random order
            got = await getattr(potential, method)(context)
            assert got == await getattr(REFERENCE, method)(context), (method, context)
        together = [text for _, text, _ in queries] or [b""]
        got = await potential.batch_complete(together)
        np.testing.assert_array_equal(got, await REFERENCE.batch_complete(together))
        await potential.cleanup()
        assert asyncio.all_tasks() == {asyncio.current_task()}
        assert not [t for t in KEEP_ALIVE_SET if t.get_loop() is asyncio.get_running_loop()]

    run(main())


@settings(max_examples=40, deadline=None)
@given(
    text=texts.filter(lambda t: b"!" not in t and min(depths(t)) >= 0),
    cuts=st.lists(st.integers(0, 10), max_size=4),
)
def test_the_checker_reads_exactly_the_context_however_it_was_extended(text, cuts):
    async def main():
        potential = Parens(cache_size=5)
        for cut in sorted(cuts):
            await potential.prefix(text[:cut])
        await potential.complete(text)
        assert potential.streams[-1] == text  # the chunks, joined, are the context
        await potential.cleanup()

    run(main())


@settings(max_examples=15, deadline=None)
@given(text=texts)
def test_logw_next_equals_the_whole_string_check(text):
    async def main():
        potential = Parens(cache_size=4)
        if await REFERENCE.prefix(text) == -math.inf:
            with pytest.raises(ValueError):
                await potential.logw_next(text)
        else:
            got = (await potential.logw_next(text)).weights
            np.testing.assert_array_equal(got, (await REFERENCE.logw_next(text)).weights)
        await potential.cleanup()
        assert asyncio.all_tasks() == {asyncio.current_task()}

    run(main())


class Weighted(AsyncStreamingPotential):
    """A weighted checker: minus the number of bytes read, None (0.0) when empty."""

    def __init__(self):
        super().__init__(list(range(256)))

    async def calculate_score_from_stream(self, stream):
        size = 0
        while True:
            try:
                size += len(await stream.more())
            except StopAsyncIteration:
                break
        return -float(size) if size else None


def test_the_checker_result_is_the_complete_weight_and_prefixes_weigh_zero():
    async def main():
        potential = Weighted()
        for text in [b"", b"a", b"hello"]:
            assert await potential.prefix(text) == 0.0
            assert await potential.complete(text) == -float(len(text))
            assert await potential.score([*text, EOS]) == -float(len(text))
        await potential.cleanup()

    run(main())


def test_an_error_before_reading_rejects_every_context():
    class Broken(AsyncStreamingPotential):
        async def calculate_score_from_stream(self, stream):
            raise RuntimeError("cannot start")

    async def main():
        potential = Broken(list(range(256)))
        state = await potential.new_state()
        assert state.current_score == -math.inf
        assert isinstance(state.diagnostics["error"], RuntimeError)
        assert await potential.prefix(b"abc") == -math.inf
        assert await potential.complete(b"") == -math.inf
        await state.finish()
        await potential.cleanup()
        assert asyncio.all_tasks() == {asyncio.current_task()}

    run(main())


def test_eos_finishes_a_state_and_later_tokens_are_ignored():
    async def main():
        potential = Weighted()
        state = await potential.new_state()
        await state.update_context([104, b"i", EOS])
        assert state.finished and state.current_score == -2.0
        await state.update_context([0])
        await state.finish()
        assert len(state.context) == 3 and state.current_score == -2.0

    run(main())


def test_tokens_that_are_not_bytes_are_refused():
    async def main():
        potential = Weighted()
        state = await potential.new_state()
        with pytest.raises(ValueError):
            await state.update_context([300])
        await state.finish()

    run(main())


def test_a_dropped_unfinished_state_has_its_task_cancelled():
    async def main():
        potential = Weighted()
        state = await potential.new_state()
        await state.update_context(b"abc")
        task = next(t for t in KEEP_ALIVE_SET if t.get_loop() is asyncio.get_running_loop())
        del state
        gc.collect()
        for _ in range(5):
            await asyncio.sleep(0)
        assert task.cancelled()
        assert task not in KEEP_ALIVE_SET

    run(main())


def test_sentinels_have_their_names_as_repr():
    assert (repr(PING_TOKEN), repr(SHUTDOWN_TOKEN)) == ("PING_TOKEN", "SHUTDOWN_TOKEN")
