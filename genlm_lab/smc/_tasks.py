"""Asyncio helpers for stepping particles together: collect their awaitables, run them as tasks.

`gather_all` cancels the other tasks when one fails and carries a
KeyboardInterrupt out of a task, so a run's clean-up always runs.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Iterable
from typing import Any


def call_all(particles: Iterable[Any], method: str) -> list[Awaitable[Any]]:
    """`particle.method()` of each particle, to await together.

    Raises:
        TypeError: naming the method if one returns no awaitable (a plain `def`).
    """
    out: list[Any] = []
    for p in particles:
        result = getattr(p, method)()
        if not inspect.isawaitable(result):
            for a in out:  # never awaited now: close them, without a warning
                if inspect.iscoroutine(a):
                    a.close()
            raise TypeError(
                f"{type(p).__name__}.{method}() returned {result!r}, not an awaitable: "
                f"define it with `async def {method}(self)`"
            )
        out.append(result)
    return out


class _Interrupt(Exception):
    """Carries a KeyboardInterrupt / SystemExit out of a particle's task.

    asyncio lets those two escape a task straight out of the event loop,
    which would skip the run's clean-up; wrapped, they reach `gather_all`.
    """

    def __init__(self, error: BaseException) -> None:
        super().__init__(repr(error))
        self.error = error


async def _guarded(awaitable: Awaitable[Any]) -> Any:
    try:
        return await awaitable
    except (KeyboardInterrupt, SystemExit) as error:
        raise _Interrupt(error) from error


async def gather_all(awaitables: Iterable[Awaitable[Any]]) -> list[Any]:
    """Run awaitables concurrently; if one fails or we are cancelled, cancel the rest first.

    A KeyboardInterrupt inside one of them is re-raised here, in the caller.
    """
    pending = list(awaitables)
    tasks = [asyncio.ensure_future(_guarded(a)) for a in pending]
    try:
        return await asyncio.gather(*tasks)
    except BaseException as error:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for a in pending:  # a task cancelled before it ran never awaited its coroutine
            a = getattr(a, "inner", a)  # a profiled step: its coroutine
            if inspect.iscoroutine(a) and inspect.getcoroutinestate(a) == inspect.CORO_CREATED:
                a.close()
        if isinstance(error, _Interrupt):
            raise error.error.with_traceback(error.error.__traceback__) from None
        raise
