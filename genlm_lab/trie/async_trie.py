"""`AsyncTokenCharacterTrie`: concurrent mass requests answered by one batched call.

Callers `await trie.weight_sum(ws)`; a background task drains every request
queued so far, groups them by operation (and mode), runs one batched kernel
call per group and hands each caller its row. Errors of a batched call reach
every caller of that batch; the task keeps serving later requests. Stopping
the task answers the requests already queued (it never cancels them).
"""

from __future__ import annotations

import asyncio
import threading
from collections import defaultdict
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np
import torch

from genlm_lab.trie._weights import as_numpy_weights, check_shape
from genlm_lab.trie.base import resolve_device
from genlm_lab.trie.char_trie import TokenCharacterTrie
from genlm_lab.trie.parallel import ParallelTokenCharacterTrie

BACKENDS = ("auto", "sequential", "parallel")


def check_request(ws: Any, n_tokens: int) -> Any:
    """Check a request's shape before queueing; CPU weights come back as numpy.

    Values (NaN, negatives) are checked by the batched kernel; a batch that
    fails with ValueError is retried request by request, so that only the
    callers with bad weights get the error.
    """
    if torch.is_tensor(ws) and ws.device.type != "cpu":
        check_shape(tuple(ws.shape), n_tokens, batched=False)
        return ws
    return as_numpy_weights(ws, n_tokens, batched=False)


class RequestBatcher:
    """Collects concurrent requests and answers each group with one batched call.

    Args:
        run_batch: `run_batch(key, payloads) -> results` (one result per payload).
    """

    def __init__(self, run_batch: Callable[[Hashable, list], Sequence]):
        self._run_batch = run_batch
        # One queue and task per event loop: loops in several threads may share a
        # trie (it is cached per model), and a future may only be answered on its
        # own loop. Batches from different loops run one at a time.
        self._served: dict[asyncio.AbstractEventLoop, tuple[asyncio.Queue, asyncio.Task]] = {}
        self._served_lock = threading.Lock()
        self._run_lock = threading.Lock()
        self.batches = 0
        self.requests = 0

    @property
    def _task(self) -> asyncio.Task | None:
        """The background task of the running loop, if any (None outside a loop)."""
        try:
            served = self._served.get(asyncio.get_running_loop())
        except RuntimeError:
            return None
        return None if served is None else served[1]

    def start(self) -> None:
        """Start the background task on the running loop (a fresh queue per loop)."""
        self._queue_of_running_loop()

    def _queue_of_running_loop(self) -> asyncio.Queue:
        loop = asyncio.get_running_loop()
        with self._served_lock:
            served = self._served.get(loop)
            if served is not None and not served[1].done():
                return served[0]
            for old in [other for other in self._served if other.is_closed()]:
                del self._served[old]
            queue: asyncio.Queue = asyncio.Queue()
            task = loop.create_task(self._serve(queue))
            task.add_done_callback(self._forget_task)
            self._served[loop] = (queue, task)
            return queue

    def _forget_task(self, task: asyncio.Task) -> None:
        """Drop a finished task (a loop that ended, or `cleanup`).

        A cancelled task holds its CancelledError, whose traceback reaches this batcher;
        kept here, it tied the trie into a cycle that test processes were measured never
        to free: a 256k-token vocabulary's byte trie, about 0.7 GB, per vocabulary.
        """
        with self._served_lock:
            for loop, (_, served_task) in list(self._served.items()):
                if served_task is task:
                    del self._served[loop]

    async def submit(self, key: Hashable, payload: Any) -> Any:
        """Queue one request and wait for its result."""
        queue = self._queue_of_running_loop()
        future = asyncio.get_running_loop().create_future()
        queue.put_nowait((key, payload, future))
        return await future

    async def _serve(self, queue: asyncio.Queue) -> None:
        loop = asyncio.get_running_loop()
        groups: dict[Hashable, list] = {}
        try:
            while True:
                groups = defaultdict(list)
                key, payload, future = await queue.get()
                groups[key].append((payload, future))
                await asyncio.sleep(0)  # let callers scheduled in this tick queue too
                while not queue.empty():
                    key, payload, future = queue.get_nowait()
                    groups[key].append((payload, future))
                for key, items in groups.items():
                    self._serve_group(key, items)
        finally:
            # Stopped (cleanup, shutdown): answer what was already asked. Cancelling
            # would raise CancelledError in callers that were never cancelled, and
            # one trie serves many callers (every beam over a model shares one).
            # A loop already closed (the task garbage-collected) has no one to answer.
            if not loop.is_closed():
                while not queue.empty():
                    key, payload, future = queue.get_nowait()
                    groups.setdefault(key, []).append((payload, future))
                for key, items in groups.items():
                    self._serve_group(key, items)

    def _serve_group(self, key: Hashable, items: list) -> None:
        live = [(p, f) for p, f in items if not f.done()]
        if not live:
            return
        try:
            with self._run_lock:
                self.batches += 1
                self.requests += len(live)
                results = self._run_batch(key, [p for p, _ in live])
        except ValueError as e:
            if len(live) > 1:  # bad input: retry one by one, so only its caller fails
                self._run_one_by_one(key, live)
            else:
                self._fail(live, e)
            return
        except Exception as e:  # noqa: BLE001 - handed to every waiting caller
            self._fail(live, e)
            return
        if len(results) != len(live):  # would stop the task, leaving every caller waiting
            error = RuntimeError(f"a batch of {len(live)} requests gave {len(results)} results")
            self._fail(live, error)
            return
        for (_, f), r in zip(live, results, strict=True):
            if not f.done():
                f.set_result(r)

    @staticmethod
    def _fail(items: list, error: BaseException | None) -> None:
        for _, f in items:
            if not f.done():
                f.set_exception(error)

    def _run_one_by_one(self, key: Hashable, items: list) -> None:
        for payload, f in items:
            try:
                with self._run_lock:
                    result = self._run_batch(key, [payload])[0]
            except Exception as e:  # noqa: BLE001 - handed to this caller
                self._fail([(payload, f)], e)
            else:
                if not f.done():
                    f.set_result(result)

    async def cleanup(self) -> None:
        """Stop the running loop's background task and wait for it to finish."""
        with self._served_lock:
            served = self._served.pop(asyncio.get_running_loop(), None)
        task = None if served is None else served[1]
        if task is not None and not task.done():
            task.cancel()
            try:
                await task
            except (asyncio.CancelledError, RuntimeError):
                pass

    def shutdown(self) -> None:
        """Cancel every loop's background task without awaiting it (safe outside a loop)."""
        with self._served_lock:
            served, self._served = list(self._served.items()), {}
        for loop, (_, task) in served:
            if task.done():
                continue
            try:
                try:
                    running = asyncio.get_running_loop()
                except RuntimeError:
                    running = None
                if running is loop:
                    task.cancel()
                else:
                    loop.call_soon_threadsafe(task.cancel)
            except RuntimeError:  # the loop is already closed
                pass


class AsyncTrieBase:
    """Lifecycle of an async trie: a `RequestBatcher` over the subclass's `_run_batch`."""

    def __init__(self, trie: Any) -> None:
        self.trie = trie
        self._batcher = RequestBatcher(self._run_batch)

    def _run_batch(self, key: Any, payloads: list) -> np.ndarray:
        raise NotImplementedError

    def start(self) -> None:
        """Start the background task (done automatically on the first request)."""
        self._batcher.start()

    async def cleanup(self) -> None:
        """Stop the background task."""
        await self._batcher.cleanup()

    def shutdown(self) -> None:
        """Cancel the background task without awaiting it."""
        self._batcher.shutdown()

    def __del__(self) -> None:
        try:
            self._batcher.shutdown()
        except Exception:  # noqa: BLE001 - never raise from a finalizer
            pass


class AsyncTokenCharacterTrie(AsyncTrieBase):
    """Batches concurrent `weight_sum` / `weight_max` awaits into batched trie calls.

    Args:
        trie: a `TokenCharacterTrie` or `ParallelTokenCharacterTrie`.
    """

    trie: TokenCharacterTrie

    @classmethod
    def from_vocab(
        cls, vocab: Sequence[bytes], backend: str = "auto", **kwargs: Any
    ) -> AsyncTokenCharacterTrie:
        """Build the trie and wrap it.

        Args:
            vocab: one byte string (or `Token`) per token id.
            backend: "sequential" (numba, CPU), "parallel" (torch sparse), or
                "auto": parallel when the device (kwargs["device"], default
                CUDA if available) is CUDA, sequential otherwise.
            **kwargs: passed to the trie (`device` for the parallel trie).
        """
        if backend not in BACKENDS:
            raise ValueError(f"backend {backend!r} is unknown; use one of {BACKENDS}")
        if backend == "auto":
            backend = (
                "parallel" if resolve_device(kwargs.get("device")).type == "cuda" else "sequential"
            )
        if backend == "sequential":
            kwargs.pop("device", None)
            return cls(TokenCharacterTrie(vocab, **kwargs))
        return cls(ParallelTokenCharacterTrie(vocab, **kwargs))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.trie!r})"

    def _repr_html_(self) -> str:
        """The wrapped trie's summary, under a line saying requests are batched."""
        return (
            f"<div class='genlm-trie-summary'><b>{type(self).__name__}</b>: batches "
            f"concurrent requests over</div>{self.trie._repr_html_()}"
        )

    def _run_batch(self, op: Hashable, payloads: list) -> np.ndarray:
        if op == "sum":
            return self.trie.batch_weight_sum(payloads)
        return self.trie.batch_weight_max(payloads)

    async def weight_sum(self, ws: Any) -> np.ndarray:
        """Queue a `weight_sum`; concurrent calls share one batched call.

        Raises:
            ValueError: for bad weights, to this caller only.
        """
        return await self._batcher.submit("sum", check_request(ws, self.trie.n_tokens))

    async def weight_max(self, ws: Any) -> np.ndarray:
        """Queue a `weight_max`; concurrent calls share one batched call."""
        return await self._batcher.submit("max", check_request(ws, self.trie.n_tokens))
