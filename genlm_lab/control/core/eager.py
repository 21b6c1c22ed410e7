"""`gather_eager`: `asyncio.gather` of coroutines that mostly finish without waiting.

A potential's `prefix` or `complete` is often plain Python behind an `async
def` (a regex, a finite-state automaton, a set of sequences): it returns
without ever suspending. `asyncio.gather` still wraps each call in a Task and
runs it on a later turn of the event loop, which costs far more than the
call itself and, over many particles, a large share of an SMC step.
`gather_eager` first runs each coroutine inline, up to its first
suspension: one that finishes costs no Task; one that waits on something
(an autobatched language model, a sleep) goes on as a Task from where it
stopped, all of them concurrently, as under `gather`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Generator, Iterable
from typing import Any

__all__ = ["gather_eager"]


async def gather_eager(coros: Iterable[Coroutine[Any, Any, Any]]) -> list[Any]:
    """The results of `coros`, in order, as `asyncio.gather(*coros)` gives them.

    Each coroutine first runs inline until it finishes or first suspends; the
    suspended ones then finish as Tasks, concurrently. The first exception
    propagates (coroutines not started yet are closed; Tasks already started
    go on, as under `gather`).
    """
    coros = list(coros)
    results: list[Any] = [None] * len(coros)
    waiting: list[tuple[int, asyncio.Future]] = []
    for i, coro in enumerate(coros):
        try:
            first = coro.send(None)
        except StopIteration as done:
            results[i] = done.value
            continue
        except BaseException:
            for rest in coros[i + 1 :]:
                rest.close()
            raise
        waiting.append((i, asyncio.ensure_future(_finish(coro, first))))
    if waiting:
        values = await asyncio.gather(*(task for _, task in waiting))
        for (i, _), value in zip(waiting, values, strict=True):
            results[i] = value
    return results


async def _finish(coro: Coroutine[Any, Any, Any], first: Any) -> Any:
    return await _Resumed(coro, first)


class _Resumed:
    """Awaitable going on with a coroutine that already yielded `first` to the event loop."""

    def __init__(self, coro: Coroutine[Any, Any, Any], first: Any) -> None:
        self.coro, self.first = coro, first

    def __await__(self) -> Generator[Any, None, Any]:
        return _resume(self.coro, self.first)


def _resume(coro: Coroutine[Any, Any, Any], first: Any) -> Generator[Any, None, Any]:
    # Hand the future `coro` waits on to the Task; what the Task throws in (a
    # cancellation) goes to `coro`, which may catch it and wait on something else.
    while True:
        try:
            yield first
        except GeneratorExit:
            coro.close()
            raise
        except BaseException as exc:
            try:
                first = coro.throw(exc)
            except StopIteration as done:
                return done.value
            continue
        break
    return (yield from coro.__await__())
