"""`AutoBatcher`: gathers concurrent requests into one synchronous batch call.

Callers `await batcher.submit(key, payload)`. The queue is flushed into one
`process(payloads)` call

- at once when it holds `batch_size` distinct requests;
- on the first event-loop turn in which no new request arrived: every task
  started by the same `asyncio.gather` queues in one turn, so the batch goes
  as soon as they all have, with no fixed wait;
- at the latest `timeout` seconds after the first queued request, so that
  requests trickling in one per turn never starve.

Identical keys queued together are computed once. Each caller awaits its own
future, so cancelling one caller never cancels another; a request whose
callers were all cancelled is dropped before the batch runs. An exception
raised by `process` reaches every caller of that batch, never the event loop.

Each event loop has its own queue, so loops in several threads (each thread's
`asyncio.run`) can share one batcher; `process` then runs in their threads.
"""

from __future__ import annotations

import asyncio
import operator
import threading
from collections.abc import Callable, Hashable, Sequence
from numbers import Real
from typing import Any


class _Entry:
    __slots__ = ("payload", "futures")

    def __init__(self, payload: Any, future: asyncio.Future) -> None:
        self.payload = payload
        self.futures = [future]


class _LoopQueue:
    """The queued requests of one event loop, and the handles that will flush them."""

    __slots__ = ("loop", "entries", "timer", "turn", "arrivals", "arrivals_seen")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.entries: dict[Hashable, _Entry] = {}
        self.timer: asyncio.TimerHandle | None = None
        self.turn: asyncio.Handle | None = None
        self.arrivals = 0
        self.arrivals_seen = 0

    def cancel_handles(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self.turn is not None:
            self.turn.cancel()
            self.turn = None

    def other_thread_runs_it(self) -> bool:
        """Whether the loop runs now, in another thread (touch it only thread-safely)."""
        if not self.loop.is_running():
            return False
        try:
            return asyncio.get_running_loop() is not self.loop
        except RuntimeError:
            return True


class AutoBatcher:
    """Auto-batcher over a synchronous batch function.

    Args:
        process: maps a list of payloads to a list of results (same order).
        batch_size: most distinct requests in one batch.
        timeout: seconds after the first queued request when the batch goes
            even if callers keep arriving.
        on_batch: called with (distinct requests, callers) before each batch.
    """

    def __init__(
        self,
        process: Callable[[list[Any]], Sequence[Any]],
        batch_size: int = 32,
        timeout: float = 0.02,
        on_batch: Callable[[int, int], None] | None = None,
    ) -> None:
        self.process = process
        self.batch_size = batch_size
        self.timeout = timeout
        self.on_batch = on_batch
        self._queues: dict[asyncio.AbstractEventLoop, _LoopQueue] = {}
        self._queues_lock = threading.Lock()  # adding and dropping queues, not the hot path

    @property
    def batch_size(self) -> int:
        """Most distinct requests in one batch (>= 1)."""
        return self._batch_size

    @batch_size.setter
    def batch_size(self, value: int) -> None:
        if isinstance(value, bool) or not hasattr(value, "__index__") or value < 1:
            raise ValueError(f"batch_size must be an int >= 1, got {value!r}")
        self._batch_size = operator.index(value)

    @property
    def timeout(self) -> float:
        """Seconds after the first queued request when the batch goes anyway (>= 0)."""
        return self._timeout

    @timeout.setter
    def timeout(self, value: float) -> None:
        if isinstance(value, bool) or not isinstance(value, Real) or not value >= 0:
            # `not value >= 0` also catches NaN, which would break the loop's timer heap.
            raise ValueError(f"timeout must be a number of seconds >= 0, got {value!r}")
        self._timeout = value

    @property
    def pending(self) -> int:
        """Distinct requests waiting for their next batch (summed over event loops)."""
        return sum(len(q.entries) for q in list(self._queues.values()))

    async def submit(self, key: Hashable, payload: Any) -> Any:
        """Queue a request and wait for its result.

        Args:
            key: identifies the request; equal keys in one batch share a result.
            payload: what `process` receives for this request.
        """
        future = asyncio.get_running_loop().create_future()
        self.enqueue(key, payload, future)
        return await future

    def enqueue(self, key: Hashable, payload: Any, future: asyncio.Future) -> None:
        """Queue a request whose result goes to `future` (call it in the running loop).

        `submit` without the await: for a caller that holds its own future.

        Raises:
            ValueError: if `future` belongs to another event loop than the running one.
            RuntimeError: if no event loop runs in this thread.
        """
        loop = asyncio.get_running_loop()
        if future.get_loop() is not loop:
            raise ValueError("the future belongs to another event loop than the running one")
        q = self._queues.get(loop)
        if q is None:
            q = self._new_queue(loop)
        entry = q.entries.get(key)
        if entry is None:
            q.entries[key] = _Entry(payload, future)
        else:
            entry.futures.append(future)
        q.arrivals += 1
        if len(q.entries) >= self.batch_size:
            self._flush_queue(q)
        else:
            if q.turn is None:
                q.arrivals_seen = q.arrivals
                q.turn = loop.call_soon(self._on_turn, q)
            if q.timer is None:
                q.timer = loop.call_later(self.timeout, self._flush_queue, q)

    def queued(self) -> list[Any]:
        """The payloads of the distinct requests waiting, over all event loops."""
        return [e.payload for q in list(self._queues.values()) for e in list(q.entries.values())]

    def _new_queue(self, loop: asyncio.AbstractEventLoop) -> _LoopQueue:
        """A queue for a loop new to this batcher; those of closed loops are dropped."""
        with self._queues_lock:
            for old in [old for old in self._queues if old.is_closed()]:
                # Its requests can never be served; their futures die with the loop.
                del self._queues[old]
            q = self._queues[loop] = _LoopQueue(loop)
        return q

    def _on_turn(self, q: _LoopQueue) -> None:
        q.turn = None
        if q.arrivals != q.arrivals_seen:
            # Callers arrived during the last turn: more may be on their way.
            q.arrivals_seen = q.arrivals
            q.turn = q.loop.call_soon(self._on_turn, q)
        else:
            self._flush_queue(q)

    def flush(self) -> None:
        """Run every queued request now, in one `process` call per event loop.

        The requests of a loop running in another thread are run there, soon.
        """
        for q in list(self._queues.values()):
            if q.other_thread_runs_it():
                q.loop.call_soon_threadsafe(self._flush_queue, q)
            elif q.entries:
                self._flush_queue(q)

    def _flush_queue(self, q: _LoopQueue) -> None:
        """Run one loop's queued requests now, in one `process` call."""
        q.cancel_handles()
        queue, q.entries = q.entries, {}
        entries = []
        for entry in queue.values():
            entry.futures = [f for f in entry.futures if not f.done()]
            if entry.futures:
                entries.append(entry)
        if not entries:
            return
        if self.on_batch is not None:
            self.on_batch(len(entries), sum(len(e.futures) for e in entries))
        try:
            results = self.process([e.payload for e in entries])
            if len(results) != len(entries):
                raise RuntimeError(
                    f"batch function returned {len(results)} results for {len(entries)} requests"
                )
        except BaseException as exc:
            interrupted = not isinstance(exc, Exception)  # e.g. KeyboardInterrupt
            for entry in entries:
                for f in entry.futures:
                    if not f.done():
                        if interrupted:
                            f.cancel()
                        else:
                            f.set_exception(exc)
            if interrupted:
                raise
            return
        for entry, result in zip(entries, results, strict=True):
            for f in entry.futures:
                if not f.done():
                    f.set_result(result)

    def reset(self) -> None:
        """Drop queued requests; their callers get `asyncio.CancelledError`."""
        for q in list(self._queues.values()):
            if q.loop.is_closed():
                q.entries = {}
            elif q.other_thread_runs_it():
                q.loop.call_soon_threadsafe(self._reset_queue, q)
            else:
                self._reset_queue(q)

    @staticmethod
    def _reset_queue(q: _LoopQueue) -> None:
        q.cancel_handles()
        queue, q.entries = q.entries, {}
        for entry in queue.values():
            for f in entry.futures:
                if not f.done():
                    f.cancel()
