"""smc/_tasks.py: awaitables of every particle, run together, cancelled together."""

from __future__ import annotations

import asyncio

import pytest

from genlm_lab.smc._tasks import call_all, gather_all


class Stepper:
    def __init__(self, log: list[str], name: str, fail: bool = False) -> None:
        self.log, self.name, self.fail = log, name, fail

    async def step(self) -> str:
        await asyncio.sleep(0)
        if self.fail:
            raise RuntimeError(self.name)
        await asyncio.sleep(0.05)
        self.log.append(self.name)
        return self.name


async def test_gather_all_returns_results_in_order():
    log: list[str] = []
    out = await gather_all(call_all([Stepper(log, "a"), Stepper(log, "b")], "step"))
    assert out == ["a", "b"]
    assert sorted(log) == ["a", "b"]


async def test_a_failure_cancels_the_others_before_raising():
    log: list[str] = []
    with pytest.raises(RuntimeError, match="bad"):
        await gather_all(call_all([Stepper(log, "slow"), Stepper(log, "bad", fail=True)], "step"))
    await asyncio.sleep(0.1)
    assert log == []  # the slow one never finished: it was cancelled


async def test_a_keyboard_interrupt_reaches_the_caller():
    async def interrupt() -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        await gather_all([interrupt()])


def test_call_all_refuses_a_plain_def_and_closes_the_others():
    class Sync:
        def step(self) -> int:
            return 1

    log: list[str] = []
    with pytest.raises(TypeError, match=r"Sync.step\(\) returned 1.*async def step"):
        call_all([Stepper(log, "a"), Sync()], "step")
