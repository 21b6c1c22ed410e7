"""AutoBatcher: one batch per wave of concurrent callers, no fixed wait, isolated failures."""

import asyncio

import pytest

from genlm_lab.backend._batcher import AutoBatcher


class Recorder:
    """A batch function that records every batch and squares its payloads."""

    def __init__(self, fail_on=None):
        self.batches = []
        self.fail_on = fail_on

    def __call__(self, payloads):
        self.batches.append(list(payloads))
        if self.fail_on is not None and self.fail_on in payloads:
            raise RuntimeError(f"boom on {self.fail_on}")
        return [p * p for p in payloads]


# A timeout far beyond any test's patience: a batch that waited for it would time out.
NEVER = 60.0


async def test_gathered_callers_form_one_batch_without_waiting_for_the_timer():
    rec = Recorder()
    b = AutoBatcher(rec, batch_size=100, timeout=NEVER)
    results = await asyncio.wait_for(
        asyncio.gather(*(b.submit(i, i) for i in range(40))), timeout=5
    )
    assert results == [i * i for i in range(40)]
    assert len(rec.batches) == 1
    assert len(rec.batches[0]) >= 0.95 * 40


async def test_callers_reaching_the_batcher_through_nested_awaits_share_a_batch():
    rec = Recorder()
    b = AutoBatcher(rec, batch_size=100, timeout=NEVER)

    async def caller(i):
        for _ in range(i % 3):  # each caller yields to the loop 0-2 times first
            await asyncio.sleep(0)
        return await b.submit(i, i)

    results = await asyncio.wait_for(asyncio.gather(*(caller(i) for i in range(30))), 5)
    assert results == [i * i for i in range(30)]
    assert len(rec.batches) == 1


async def test_batches_never_exceed_batch_size():
    rec = Recorder()
    b = AutoBatcher(rec, batch_size=8, timeout=NEVER)
    results = await asyncio.wait_for(asyncio.gather(*(b.submit(i, i) for i in range(20))), 5)
    assert results == [i * i for i in range(20)]
    assert [len(x) for x in rec.batches] == [8, 8, 4]


async def test_trickling_callers_are_flushed_by_the_timer():
    rec = Recorder()
    b = AutoBatcher(rec, batch_size=1000, timeout=0.05)
    done = asyncio.Event()

    async def keep_busy():
        # A new caller every loop turn: the turn rule alone would never flush.
        i = 0
        tasks = []
        while not done.is_set():
            tasks.append(asyncio.ensure_future(b.submit(i, i)))
            i += 1
            await asyncio.sleep(0)
        return tasks

    busy = asyncio.ensure_future(keep_busy())
    await asyncio.sleep(0.2)
    done.set()
    tasks = await busy
    b.flush()
    await asyncio.gather(*tasks)
    assert len(rec.batches) >= 2  # the timer fired while callers kept arriving


async def test_identical_keys_are_computed_once():
    rec = Recorder()
    b = AutoBatcher(rec, batch_size=100, timeout=NEVER)
    keys = [1, 2, 1, 3, 2, 1]
    results = await asyncio.gather(*(b.submit(k, k) for k in keys))
    assert results == [k * k for k in keys]
    assert sorted(rec.batches[0]) == [1, 2, 3]


async def test_error_reaches_every_caller_of_the_batch_and_batcher_recovers():
    rec = Recorder(fail_on=3)
    b = AutoBatcher(rec, batch_size=100, timeout=NEVER)
    results = await asyncio.gather(*(b.submit(i, i) for i in range(5)), return_exceptions=True)
    assert all(isinstance(r, RuntimeError) and "boom" in str(r) for r in results)
    assert await asyncio.gather(b.submit(10, 10), b.submit(11, 11)) == [100, 121]


async def test_cancelled_caller_leaves_others_and_batcher_working():
    rec = Recorder()
    b = AutoBatcher(rec, batch_size=100, timeout=NEVER)
    tasks = [asyncio.ensure_future(b.submit(i, i)) for i in range(4)]
    dup = asyncio.ensure_future(b.submit(2, 2))
    await asyncio.sleep(0)  # all queued, none flushed yet
    tasks[1].cancel()
    tasks[2].cancel()  # shares its key with `dup`, which must still be served
    results = await asyncio.gather(*tasks, dup, return_exceptions=True)
    assert isinstance(results[1], asyncio.CancelledError)
    assert isinstance(results[2], asyncio.CancelledError)
    assert results[0] == 0 and results[3] == 9 and results[4] == 4
    assert 1 not in rec.batches[0]  # no caller left for key 1: not computed
    assert await b.submit(7, 7) == 49


async def test_reset_cancels_waiting_callers_and_keeps_batcher_usable():
    rec = Recorder()
    b = AutoBatcher(rec, batch_size=100, timeout=NEVER)
    tasks = [asyncio.ensure_future(b.submit(i, i)) for i in range(3)]
    await asyncio.sleep(0)
    b.reset()
    for t in tasks:
        with pytest.raises(asyncio.CancelledError):
            await t
    assert rec.batches == []
    assert await b.submit(5, 5) == 25


def test_batcher_survives_a_new_event_loop():
    rec = Recorder()
    b = AutoBatcher(rec, batch_size=100, timeout=NEVER)
    assert asyncio.run(b.submit(2, 2)) == 4
    assert asyncio.run(b.submit(3, 3)) == 9


@pytest.mark.parametrize("kwargs", [{"batch_size": 0}, {"timeout": -1.0}])
def test_bad_settings_raise_value_error(kwargs):
    with pytest.raises(ValueError):
        AutoBatcher(Recorder(), **kwargs)


async def test_interrupt_in_a_batch_cancels_its_callers_and_propagates():
    def interrupted(payloads):
        raise KeyboardInterrupt

    b = AutoBatcher(interrupted, batch_size=100, timeout=NEVER)
    tasks = [asyncio.ensure_future(b.submit(i, i)) for i in range(3)]
    await asyncio.sleep(0)
    with pytest.raises(KeyboardInterrupt):
        b.flush()
    for t in tasks:
        with pytest.raises(asyncio.CancelledError):
            await t


def test_bad_settings_are_rejected_at_construction_and_on_assignment():
    with pytest.raises(ValueError, match="batch_size"):
        AutoBatcher(Recorder(), batch_size=0)
    with pytest.raises(ValueError, match="timeout"):
        AutoBatcher(Recorder(), timeout=-1.0)
    b = AutoBatcher(Recorder(), batch_size=4, timeout=0.5)
    with pytest.raises(ValueError, match="batch_size"):
        b.batch_size = 0
    with pytest.raises(ValueError, match="timeout"):
        b.timeout = -0.1
    assert (b.batch_size, b.timeout) == (4, 0.5)  # a rejected value changes nothing


@pytest.mark.parametrize("value", [2.5, True, "4", None])
def test_batch_size_that_is_not_a_positive_int_is_rejected(value):
    # 2.5 was accepted before, and failed later inside range() of the batched path
    with pytest.raises(ValueError, match="batch_size"):
        AutoBatcher(lambda xs: xs, batch_size=value)


@pytest.mark.parametrize("value", [float("nan"), "1", None, -0.5])
def test_timeout_that_is_not_a_number_of_seconds_is_rejected(value):
    # NaN was accepted before and put a NaN deadline into the event loop's timer heap
    with pytest.raises(ValueError, match="timeout"):
        AutoBatcher(lambda xs: xs, timeout=value)


def test_numpy_ints_and_infinite_timeout_are_accepted():
    import numpy as np

    b = AutoBatcher(lambda xs: xs, batch_size=np.int64(3), timeout=float("inf"))
    assert b.batch_size == 3 and type(b.batch_size) is int


def test_event_loops_in_two_threads_each_get_their_own_results():
    # A caller from a second loop (another thread's asyncio.run) cancelled every
    # request still queued by the first, live loop.
    import threading

    rec = Recorder()
    b = AutoBatcher(rec, batch_size=100, timeout=NEVER)
    other_done = threading.Event()
    results = {}

    def other_thread():
        results["other"] = asyncio.run(b.submit(2, 2))
        other_done.set()

    async def first():
        queued = asyncio.ensure_future(b.submit(3, 3))
        await asyncio.sleep(0)  # queued; its batch goes on the next turn of this loop
        assert b.pending == 1
        thread = threading.Thread(target=other_thread)
        thread.start()
        assert other_done.wait(10)  # this loop is blocked meanwhile: 3 is still queued
        thread.join()
        return await queued

    assert asyncio.run(first()) == 9
    assert results["other"] == 4
    assert sorted(map(sorted, rec.batches)) == [[2], [3]]


async def test_enqueue_resolves_a_callers_own_future_in_the_next_batch():
    rec = Recorder()
    b = AutoBatcher(rec, batch_size=100, timeout=NEVER)
    loop = asyncio.get_running_loop()
    futures = [loop.create_future() for _ in range(3)]
    for i, f in enumerate(futures):
        b.enqueue(i % 2, i % 2 + 3, f)  # keys 0, 1, 0: two distinct requests
    assert sorted(b.queued()) == [3, 4] and b.pending == 2
    assert await asyncio.wait_for(asyncio.gather(*futures), timeout=5) == [9, 16, 9]
    assert rec.batches == [[3, 4]] and b.queued() == []


async def test_enqueued_request_goes_after_the_timeout_when_no_turn_flushes_it():
    rec = Recorder()
    b = AutoBatcher(rec, batch_size=100, timeout=0.05)
    future = asyncio.get_running_loop().create_future()
    b.enqueue("k", 5, future)
    await asyncio.sleep(0.1)
    assert future.done() and future.result() == 25


async def test_enqueue_refuses_a_future_of_another_loop():
    b = AutoBatcher(Recorder(), batch_size=100, timeout=NEVER)
    other = asyncio.new_event_loop()
    try:
        with pytest.raises(ValueError, match="another event loop"):
            b.enqueue("k", 1, other.create_future())
    finally:
        other.close()
    assert b.pending == 0


def test_enqueue_outside_a_running_loop_is_an_error():
    b = AutoBatcher(Recorder(), batch_size=100, timeout=NEVER)
    loop = asyncio.new_event_loop()
    try:
        with pytest.raises(RuntimeError):
            b.enqueue("k", 1, loop.create_future())
    finally:
        loop.close()
