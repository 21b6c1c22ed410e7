"""Where wall time goes: a profiler that charges it to components, step by step.

The profiler keeps one *current component* and a clock. Every switch of
component (entering or leaving a timed region) charges the time since the
last switch to the component that was current, so the parts of a step add
up to its wall time by construction: nothing is counted twice and nothing is
lost. Concurrent coroutines are handled by wrapping each one that should be
timed in `Profiler.wrap`: every time the event loop resumes it, its
component becomes current, and when it suspends (to wait for a batch) the
previous one comes back. Time when no wrapped coroutine runs belongs to the
loop's component (the one current around the `await`): where the awaited
work is a batched model call, that is "lm.forward".

Rows are `[step, component, calls, seconds]` (`PROFILE_COLUMNS`); a
component that never takes time is a counter (`Profiler.count`). Two users:
an SMC run (`SMCRecord.profile`, components in `genlm_lab.smc.profile`) and
a byte beam (`ByteBeamState.profile`, components in `genlm_lab.bytes.beam`).
A profile measures wall time: work of other coroutines that shares the
event loop meanwhile is charged to whatever was current.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Generator, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["PROFILE_COLUMNS", "Profiler", "add_rows", "profile_frame"]

PROFILE_COLUMNS = ("step", "component", "calls", "seconds")
"""The columns of a profile (`SMCRecord.profile`, `ByteBeamState.profile`)."""


class _Segments:
    """An awaitable that runs `inner`, charging each of its slices of the event loop to `label`."""

    __slots__ = ("inner", "label", "profiler")

    def __init__(self, inner: Awaitable[Any], label: str, profiler: Profiler) -> None:
        self.inner, self.label, self.profiler = inner, label, profiler

    def close(self) -> None:
        """Close the inner coroutine if it never ran (no "never awaited" warning)."""
        close = getattr(self.inner, "close", None)
        if close is not None:
            close()

    def __await__(self) -> Generator[Any, Any, Any]:
        it = self.inner.__await__()
        switch = self.profiler.switch
        value: Any = None
        error: BaseException | None = None
        while True:
            previous = switch(self.label)
            try:
                out = it.send(value) if error is None else it.throw(error)
            except StopIteration as stop:
                switch(previous)
                return stop.value
            except BaseException:
                switch(previous)
                raise
            switch(previous)
            try:
                value, error = (yield out), None
            except GeneratorExit:
                it.close()
                raise
            except BaseException as thrown:  # e.g. CancelledError: hand it to the inner code
                value, error = None, thrown


class Profiler:
    """Charges wall time to components, step by step.

    Args:
        clock: seconds, monotonic (a fake one in tests).
        label: the component current from the start.
        step: the step charged from the start.

    Attributes:
        step: the step that time is charged to now (0 before the first).
        label: the current component.
    """

    def __init__(
        self,
        clock: Callable[[], float] = time.perf_counter,
        label: str = "other",
        step: int = 0,
    ) -> None:
        self._clock = clock
        self.step = step
        self.label = label
        self._last = clock()
        # step -> component -> seconds / calls
        self._seconds: dict[int, dict[str, float]] = {}
        self._calls: dict[int, dict[str, int]] = {}
        #: Components that are potentials' methods, with their potential's name (SMC runs).
        self.factors: dict[str, str] = {}
        #: The LM backends whose `stats` the run reads (None: the run looks for them).
        self.lms: list[Any] | None = None

    def switch(self, label: str) -> str:
        """Charge the time since the last switch to the current component; make `label` current.

        Returns:
            The component that was current (to switch back to).
        """
        now = self._clock()
        cell = self._seconds.get(self.step)
        if cell is None:
            cell = self._seconds[self.step] = {}
        cell[self.label] = cell.get(self.label, 0.0) + (now - self._last)
        self._last = now
        previous, self.label = self.label, label
        return previous

    def count(self, label: str, n: int = 1) -> None:
        """Add `n` calls of `label` in the current step (a counter row if it never takes time)."""
        cell = self._calls.get(self.step)
        if cell is None:
            cell = self._calls[self.step] = {}
        cell[label] = cell.get(label, 0) + n

    @contextmanager
    def timed(self, label: str) -> Iterator[None]:
        """Charge the synchronous code of the block to `label` (one call)."""
        self.count(label)
        previous = self.switch(label)
        try:
            yield
        finally:
            self.switch(previous)

    def wrap(self, awaitable: Awaitable[Any], label: str, count: bool = True) -> _Segments:
        """`awaitable`, with every slice of the event loop it takes charged to `label` (one call).

        A call made from inside a call of the same label (a batch method
        calling the single one) is not counted again; `count=False` counts none.
        """
        if count and self.label != label:
            self.count(label)
        return _Segments(awaitable, label, self)

    def timed_method(self, method: Callable[..., Awaitable[Any]], label: str) -> Callable:
        """An async function that calls `method` and charges its own time to `label`."""

        async def timed(*args: Any, **kwargs: Any) -> Any:
            return await self.wrap(method(*args, **kwargs), label)

        return timed

    def rows(self, step: int | None = None) -> list[list[Any]]:
        """`[step, component, calls, seconds]` for every component seen (of `step` only if
        given), in step order."""
        self.switch(self.label)
        steps = sorted(set(self._seconds) | set(self._calls)) if step is None else [step]
        out = []
        for t in steps:
            seconds, calls = self._seconds.get(t, {}), self._calls.get(t, {})
            for label in sorted(set(seconds) | set(calls)):
                out.append([t, label, calls.get(label, 0), seconds.get(label, 0.0)])
        return out


def profile_frame(rows: list[list[Any]] | None) -> Any:
    """The rows as a pandas DataFrame with `PROFILE_COLUMNS` (empty when there are none)."""
    import pandas as pd

    frame = pd.DataFrame([list(r) for r in rows or []], columns=list(PROFILE_COLUMNS))
    return frame.astype({"step": int, "component": str, "calls": int, "seconds": float})


def add_rows(into: list[list[Any]], rows: list[list[Any]]) -> list[list[Any]]:
    """`into` with `rows` added: calls and seconds of the same (step, component) summed.

    Both are `[step, component, calls, seconds]` rows; `into` is changed in
    place (new components are appended) and returned.
    """
    where = {(r[0], r[1]): r for r in into}
    for step, component, calls, seconds in rows:
        row = where.get((step, component))
        if row is None:
            row = where[step, component] = [step, component, 0, 0.0]
            into.append(row)
        row[2] += int(calls)
        row[3] += float(seconds)
    return into
