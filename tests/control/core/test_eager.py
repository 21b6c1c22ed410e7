"""`gather_eager` gives what `asyncio.gather` gives, with no Task for coroutines that never wait."""

import asyncio

import pytest

from genlm_lab.control.core.eager import gather_eager


async def now(x):
    return x


async def later(x, steps=1):
    for _ in range(steps):
        await asyncio.sleep(0)
    return x


def test_results_come_in_order_whether_or_not_a_coroutine_waits():
    async def main():
        coros = [now(0), later(1, 3), now(2), later(3), now(4)]
        return await gather_eager(coros)

    assert asyncio.run(main()) == [0, 1, 2, 3, 4]


def test_coroutines_that_never_wait_start_no_task():
    async def main():
        before = len(asyncio.all_tasks())
        seen = []

        async def count(x):
            seen.append(len(asyncio.all_tasks()) - before)
            return x

        assert await gather_eager(count(i) for i in range(5)) == list(range(5))
        return seen

    assert asyncio.run(main()) == [0] * 5


def test_waiting_coroutines_run_concurrently():
    async def main():
        event = asyncio.Event()

        async def wait():
            await event.wait()
            return "woken"

        async def wake():
            await asyncio.sleep(0)
            event.set()
            return "set"

        # under sequential awaiting, `wait` would block forever
        return await asyncio.wait_for(gather_eager([wait(), wake(), now(1)]), timeout=5)

    assert asyncio.run(main()) == ["woken", "set", 1]


def test_the_first_exception_propagates_and_unstarted_coroutines_are_closed():
    async def boom():
        raise KeyError("x")

    async def main():
        rest = now(2)
        with pytest.raises(KeyError):
            await gather_eager([now(0), boom(), rest])
        return rest.cr_frame is None  # closed, never awaited

    assert asyncio.run(main())


def test_an_exception_after_waiting_propagates():
    async def fail_later():
        await asyncio.sleep(0)
        raise ValueError("late")

    async def main():
        with pytest.raises(ValueError, match="late"):
            await gather_eager([now(0), fail_later()])

    asyncio.run(main())


def test_cancelling_the_caller_reaches_a_waiting_coroutine():
    cleaned = []

    async def sleeper():
        try:
            await asyncio.sleep(10)
        finally:
            cleaned.append(True)

    async def main():
        task = asyncio.ensure_future(gather_eager([sleeper()]))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert cleaned == [True]
