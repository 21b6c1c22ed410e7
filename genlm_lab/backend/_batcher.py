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
"""

from __future__ import annotations

import asyncio
import operator
from collections.abc import Callable, Hashable, Sequence
from numbers import Real
from typing import Any


class _Entry:
    __slots__ = ("payload", "futures")

    def __init__(self, payload: Any, future: asyncio.Future) -> None:
        self.payload = payload
        self.futures = [future]


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
        self._queue: dict[Hashable, _Entry] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._turn: asyncio.Handle | None = None
        self._arrivals = 0
        self._arrivals_seen = 0

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
        """Distinct requests waiting for the next batch."""
        return len(self._queue)

    async def submit(self, key: Hashable, payload: Any) -> Any:
        """Queue a request and wait for its result.

        Args:
            key: identifies the request; equal keys in one batch share a result.
            payload: what `process` receives for this request.
        """
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self._forget_loop()
            self._loop = loop
        future = loop.create_future()
        entry = self._queue.get(key)
        if entry is None:
            self._queue[key] = _Entry(payload, future)
        else:
            entry.futures.append(future)
        self._arrivals += 1
        if len(self._queue) >= self.batch_size:
            self.flush()
        else:
            if self._turn is None:
                self._arrivals_seen = self._arrivals
                self._turn = loop.call_soon(self._on_turn)
            if self._timer is None:
                self._timer = loop.call_later(self.timeout, self.flush)
        return await future

    def _on_turn(self) -> None:
        self._turn = None
        if self._arrivals != self._arrivals_seen and self._loop is not None:
            # Callers arrived during the last turn: more may be on their way.
            self._arrivals_seen = self._arrivals
            self._turn = self._loop.call_soon(self._on_turn)
        else:
            self.flush()

    def _cancel_handles(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._turn is not None:
            self._turn.cancel()
            self._turn = None

    def flush(self) -> None:
        """Run every queued request now, in one `process` call."""
        self._cancel_handles()
        queue, self._queue = self._queue, {}
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
        self._cancel_handles()
        queue, self._queue = self._queue, {}
        for entry in queue.values():
            for f in entry.futures:
                if not f.done() and not f.get_loop().is_closed():
                    f.cancel()

    def _forget_loop(self) -> None:
        """A new event loop took over: requests of the old one can never be served."""
        if self._loop is not None and not self._loop.is_closed():
            self.reset()
        else:
            self._timer = self._turn = None
            self._queue = {}
