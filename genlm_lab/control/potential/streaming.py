"""`AsyncStreamingPotential`: a checker written as a loop over a byte stream, run as a potential.

Some checks are easiest to write as one coroutine that reads its input
piece by piece (a streaming parser, say) and returns a log-weight at the
end, or raises where the input goes wrong:

    async def calculate_score_from_stream(self, stream):
        async for chunk in stream:  # or: chunk = await stream.more()
            ...  # raise to reject
        return 0.0

Each `AsyncStreamingState` runs the checker in a background task and feeds it
the bytes of its context as they come. After each chunk the state waits until
the checker asks for more (so the chunk passed) or stops: an exception makes
the weight zero (-inf) at once, a return settles the weight (None reads as
0.0). Until then a prefix weighs 0.0. Finishing a state ends the stream.

Background tasks stay referenced in `KEEP_ALIVE_SET` until their state is
finished (asyncio only keeps weak references to tasks); `cleanup()` finishes
every cached state, and a state dropped unfinished has its checker cancelled.
"""

from __future__ import annotations

import asyncio
import math
import weakref
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Hashable, Sequence
from enum import Enum, auto
from typing import Any

from genlm_lab.control.core.constant import EndOfSequence
from genlm_lab.control.core.token_types import TokenType
from genlm_lab.control.potential.stateful import ParticleState, StatefulPotential

__all__ = [
    "KEEP_ALIVE_SET",
    "PING_TOKEN",
    "SHUTDOWN_TOKEN",
    "AsyncSource",
    "AsyncStreamingPotential",
    "AsyncStreamingState",
    "Chunks",
    "Responses",
    "RunningInTask",
    "UniqueIdentifier",
]


class Responses(Enum):
    """What the checker's task answers to each message: still reading, returned, or raised."""

    INCOMPLETE = auto()
    COMPLETE = auto()
    ERROR = auto()


class UniqueIdentifier:
    """A named sentinel, distinct from every chunk of data."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return self._name


#: The first message to a checker's task: it starts the checker, whose first answer says
#: whether it fails before reading anything.
PING_TOKEN = UniqueIdentifier("PING_TOKEN")
#: The last message: the checker's `more()` raises `StopAsyncIteration`.
SHUTDOWN_TOKEN = UniqueIdentifier("SHUTDOWN_TOKEN")

#: The background tasks of unfinished streaming states (asyncio keeps tasks only weakly).
KEEP_ALIVE_SET: set[asyncio.Task] = set()


class AsyncSource(ABC):
    """A stream of chunks read with `await source.more()` (or `async for`)."""

    @abstractmethod
    async def more(self) -> Any:
        """The next chunk.

        Raises:
            StopAsyncIteration: when the stream has ended.
        """

    def __aiter__(self) -> AsyncSource:
        return self

    async def __anext__(self) -> Any:
        return await self.more()


class Chunks(AsyncSource):
    """The stream a checker reads: asking for more also tells the state the last chunk passed."""

    def __init__(self, running_in_task: RunningInTask) -> None:
        self.running_in_task = running_in_task

    async def more(self) -> bytes:
        """The next chunk of bytes, once the state sends one.

        Raises:
            StopAsyncIteration: once the state finished.
        """
        task = self.running_in_task
        if task.closed:
            raise StopAsyncIteration
        task.responses.put_nowait((Responses.INCOMPLETE, None))
        message = await task.incoming_data.get()
        if message is SHUTDOWN_TOKEN:
            task.closed = True
            raise StopAsyncIteration
        return message


class RunningInTask:
    """The background side of a streaming state: the checker and its two queues.

    Each message put on `incoming_data` gets exactly one answer on
    `responses`: `(INCOMPLETE, None)` when the checker asks for the next
    chunk, `(COMPLETE, result)` when it returns, `(ERROR, exception)` when
    it raises. After the last answer `complete` is True and nothing reads
    the queue any more.
    """

    def __init__(self, function: Callable[[AsyncSource], Awaitable[Any]]) -> None:
        self.function = function
        self.incoming_data: asyncio.Queue = asyncio.Queue()
        self.responses: asyncio.Queue = asyncio.Queue()
        self.running = False
        self.complete = False
        self.closed = False  # the stream has ended (SHUTDOWN_TOKEN was read)

    async def run(self) -> None:
        """Wait for `PING_TOKEN`, run the checker, answer with its outcome."""
        self.running = True
        try:
            await self.incoming_data.get()  # PING_TOKEN: the state listens from now on
            outcome = (Responses.COMPLETE, await self.function(Chunks(self)))
        except Exception as exc:  # the checker rejected (or broke): the state reads -inf
            outcome = (Responses.ERROR, exc)
        finally:
            self.running = False
        self.complete = True
        self.responses.put_nowait(outcome)


def _cancel(task: asyncio.Task) -> None:
    task.add_done_callback(KEEP_ALIVE_SET.discard)
    task.cancel()


def _abandon(task: asyncio.Task) -> None:
    """A state was dropped unfinished: its checker would wait forever, so cancel it."""
    if task.done():
        KEEP_ALIVE_SET.discard(task)
        return
    loop = task.get_loop()
    if loop.is_closed():
        return  # it never runs again; kept referenced so asyncio does not report it pending
    try:
        loop.call_soon_threadsafe(_cancel, task)
    except RuntimeError:  # the loop closed meanwhile
        pass


def _as_bytes(tokens: Sequence[Any]) -> bytes:
    if isinstance(tokens, bytes):
        return tokens
    try:
        return bytes(tokens)
    except TypeError:  # single-byte `bytes` tokens (b"a") mixed with byte values (97)
        return b"".join(t if isinstance(t, bytes) else bytes([t]) for t in tokens)


class AsyncStreamingState(ParticleState):
    """A state whose score comes from the owner's checker, run over its context in a task.

    Attributes:
        diagnostics: `{"error": exception}` once the checker raised.
    """

    def __init__(self, owner: AsyncStreamingPotential) -> None:
        super().__init__(owner)
        self._runner: RunningInTask | None = None
        self._task: asyncio.Task | None = None
        self._finalizer: weakref.finalize | None = None
        self._score = 0.0
        self._lock = asyncio.Lock()
        self.diagnostics: dict[str, Any] = {}

    @property
    def current_score(self) -> float:
        """0.0 while the checker reads on, its result once it returned, -inf once it raised."""
        return self._score

    async def start(self) -> None:
        """Start the checker; an error it raises before reading is recorded at once."""
        await self._ensure_started()

    async def _ensure_started(self) -> None:
        if self._runner is not None:
            return
        self._runner = RunningInTask(self.owner.calculate_score_from_stream)
        self._task = asyncio.create_task(self._runner.run())
        KEEP_ALIVE_SET.add(self._task)
        # the task does not reference this state, so an abandoned state can be collected
        self._finalizer = weakref.finalize(self, _abandon, self._task)
        self._finalizer.atexit = False
        await self._send(PING_TOKEN)

    async def _send(self, message: Any) -> None:
        """Hand the checker one message and record its answer."""
        runner = self._runner
        async with self._lock:
            if runner.complete:
                return  # the checker already settled the score: the rest is ignored
            runner.incoming_data.put_nowait(message)
            kind, payload = await runner.responses.get()
        if kind is Responses.COMPLETE:
            self._score = 0.0 if payload is None else float(payload)
        elif kind is Responses.ERROR:
            self.diagnostics["error"] = payload
            self._score = -math.inf

    async def impl_update_context(self, incremental_context: Sequence[Any]) -> None:
        """Send the new bytes to the checker; a trailing EOS finishes the state.

        Raises:
            ValueError: for a token that is not a byte.
        """
        await self._ensure_started()
        tokens = list(incremental_context)
        ends = bool(tokens) and isinstance(tokens[-1], EndOfSequence)
        if ends:
            tokens.pop()
        chunk = _as_bytes(tokens)
        if chunk:
            await self._send(chunk)
        if ends:
            await self.finish()

    async def impl_finish(self) -> None:
        """End the stream, wait for the checker's task to end and let it go."""
        await self._ensure_started()
        await self._send(SHUTDOWN_TOKEN)
        task = self._task
        await asyncio.wait([task])  # waits without raising what the task raised
        self._finalizer.detach()
        KEEP_ALIVE_SET.discard(task)


class AsyncStreamingPotential(StatefulPotential, ABC):
    """A potential whose weight is what `calculate_score_from_stream` makes of the bytes.

    Subclasses implement the checker. A context's prefix weight is 0.0 until
    the checker raises (-inf) or returns (its result); its complete weight is
    the checker's result once the stream ends. States are cached and
    extended (`StatefulPotential`); call `cleanup()` to end their tasks.

    Args:
        vocabulary: the tokens, usually the 256 byte values.
        token_type: what one token is (inferred unless given).
        eos: the end-of-sequence marker, by default `EOS`.
        cache_size: how many open states (each with a task) to keep.
    """

    def __init__(
        self,
        vocabulary: Sequence[Hashable],
        token_type: TokenType | None = None,
        eos: EndOfSequence | None = None,
        cache_size: int = 100,
    ) -> None:
        super().__init__(
            vocabulary=vocabulary,
            token_type=token_type,
            eos=eos,
            state_class=AsyncStreamingState,
            cache_size=cache_size,
        )

    @abstractmethod
    async def calculate_score_from_stream(self, stream: AsyncSource) -> float | None:
        """Read `stream` to its end and return a log-weight (None: 0.0); raise to reject."""
