"""How a profiled byte beam charges its time (`BeamParams(profile=True)`).

A beam operation (`initial`, `<<`, `logp_next`) opens a `Profiler` with
`profiling`: the context variable `PROFILER` carries it into the coroutines
the operation starts (the candidates' `materialize`), which charge their
model awaits to "lm.forward" and their trie work to "trie" (`Profiler.wrap`). Work
that runs outside those coroutines, in callbacks and background tasks of the
event loop, is charged to the operation's loop component while it awaits
(`awaiting`: "lm.forward", where the backend's batched forwards run), except
the trie's batched pass, which its background task charges to "trie"
through `charge_batch` (the operations open on this thread, `running`).
With no profiler open every helper is one context-variable read.

A profiled beam (`BeamParams(profile=True)`, `beam.profile`): every `<<`,
`logp_next()` and `prune()` charges its wall time to components, per step
(the `BeamStep` position: `<<` to the step it makes, `prune()` and
`logp_next()` to the step of their beam), so a step's parts add up to its
wall time (`genlm_lab.util.profile.Profiler`). Components:

- "lm.forward": the model's calls and the event loop while the beam awaits
  them (batched forwards run there); "lm.calls" is a counter (seconds 0):
  the LM calls the step made, `lm_calls + lm_calls_next` of its record;
- "trie": node masses from the model's probabilities (the trie pass, one
  per evaluated extension); "trie.build": finding (or, the first time for
  a model, building) the trie, in `initial`;
- "extend": the beam's own bookkeeping (advancing candidates, choosing the
  extensions to evaluate);
- "mixture": the next-byte distribution of `logp_next`;
- "heal": token healing's own code (its model calls are "lm.forward");
- "prune", "record" (the step record), "alarms" (the checks).

A profile measures wall time: beams read concurrently on one event loop
(SMC particles) each see the others' work in their own.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager, nullcontext
from contextvars import ContextVar
from typing import Any, TypeVar

from genlm_lab.util.profile import Profiler

T = TypeVar("T")

#: The profiler of the beam operation this coroutine works for, if any.
PROFILER: ContextVar[Profiler | None] = ContextVar("genlm_lab_beam_profiler", default=None)

#: Component of the time a profiled operation spends awaiting (batched forwards run then).
LOOP = "lm.forward"

_open = threading.local()


def running() -> list[Profiler]:
    """The profilers of the beam operations open on this thread's event loop."""
    out = getattr(_open, "profilers", None)
    if out is None:
        out = _open.profilers = []
    return out


@contextmanager
def profiling(profiler: Profiler) -> Iterator[Profiler]:
    """Charge the coroutines started inside the block (and the trie's batches) to `profiler`."""
    token = PROFILER.set(profiler)
    live = running()
    live.append(profiler)
    try:
        yield profiler
    finally:
        for i, p in enumerate(live):
            if p is profiler:
                del live[i]
                break
        PROFILER.reset(token)


def awaiting(awaitable: Awaitable[T], label: str | None = None) -> Awaitable[T]:
    """`awaitable`, with the loop's time while it waits charged to `LOOP`.

    `label`, if given, is charged for the awaitable's own slices.
    """
    p = PROFILER.get()
    if p is None:
        return awaitable
    return _awaiting(p, awaitable, label)


async def _awaiting(p: Profiler, awaitable: Awaitable[T], label: str | None) -> T:
    previous = p.switch(LOOP)
    try:
        return await (awaitable if label is None else p.wrap(awaitable, label))
    finally:
        p.switch(previous)


def timed(label: str) -> Any:
    """A block charged to `label` when a profiler is open (else a no-op)."""
    p = PROFILER.get()
    return nullcontext() if p is None else p.timed(label)


def charge_batch(label: str, run: Callable[..., T], *args: Any) -> T:
    """`run(*args)`, charged to `label` in every profiler open on this thread."""
    live = getattr(_open, "profilers", None)
    if not live:
        return run(*args)
    live = list(live)
    previous = [p.switch(label) for p in live]
    try:
        return run(*args)
    finally:
        for p, before in zip(live, previous, strict=True):
            p.switch(before)
