"""Step observers: how live views and loggers follow an inference run.

An observer is any object with `on_step(entry)` (and optionally
`on_finish(record)`), or a plain callable taking `entry`. `entry` is the
step dict documented in `genlm_lab.smc.record`; it is shared with the record,
so observers must not change it. Either method may be a coroutine function.
`on_finish` is also called when a run is interrupted (an exception, a
cancellation, KeyboardInterrupt), with the record's final status
"interrupted"; there it is called synchronously, so an async `on_finish` is
skipped.

An observer that raises is reported with a warning naming it and detached;
the run goes on. Observers never feed anything back into inference.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Iterable
from typing import Any, Protocol, runtime_checkable

__all__ = ["CollectingObserver", "Observer", "PrintingObserver"]


@runtime_checkable
class Observer(Protocol):
    """What an inference run calls after every step."""

    def on_step(self, entry: dict) -> Any:
        """Receive one step entry (see `genlm_lab.smc.record`)."""


def _name(observer: Any) -> str:
    return getattr(observer, "__name__", None) or type(observer).__name__


class ObserverSet:
    """The observers of one run; reports and detaches the ones that fail."""

    def __init__(self, observers: Iterable[Any] = ()) -> None:
        if observers is None:
            observers = ()
        if hasattr(observers, "on_step") or callable(observers):
            observers = (observers,)
        self._observers = list(observers)
        for observer in self._observers:
            if not (hasattr(observer, "on_step") or callable(observer)):
                raise ValueError(
                    f"observer {observer!r} has no on_step(entry) method and is not callable"
                )

    def __len__(self) -> int:
        return len(self._observers)

    async def _call(self, observer: Any, method: str, arg: Any) -> None:
        fn = getattr(observer, method, None)
        if fn is None and method == "on_step" and callable(observer):
            fn = observer
        if fn is None:
            return
        try:
            result = fn(arg)
            if inspect.isawaitable(result):
                await result
        except Exception as exc:  # an observer must never end the run
            warnings.warn(
                f"observer {_name(observer)} raised {type(exc).__name__}: {exc}; "
                "it is detached and the run goes on",
                RuntimeWarning,
                stacklevel=2,
            )
            if observer in self._observers:
                self._observers.remove(observer)

    async def step(self, entry: dict) -> None:
        for observer in list(self._observers):
            await self._call(observer, "on_step", entry)

    async def finish(self, record: Any) -> None:
        for observer in list(self._observers):
            await self._call(observer, "on_finish", record)

    def finish_interrupted(self, record: Any) -> None:
        """`on_finish` without awaiting: the run is unwinding from an interruption."""
        for observer in list(self._observers):
            fn = getattr(observer, "on_finish", None)
            if fn is None or inspect.iscoroutinefunction(fn):
                continue
            try:
                result = fn(record)
                if inspect.iscoroutine(result):
                    result.close()  # cannot be awaited while the run unwinds
            except Exception as exc:  # the interruption's own error must reach the caller
                warnings.warn(
                    f"observer {_name(observer)} raised {type(exc).__name__} in on_finish "
                    f"after the run was interrupted: {exc}",
                    RuntimeWarning,
                    stacklevel=2,
                )


class CollectingObserver:
    """Keeps every entry it receives (in `entries`) and the final record (in `record`)."""

    def __init__(self) -> None:
        self.entries: list[dict] = []
        self.record: Any = None

    def on_step(self, entry: dict) -> None:
        self.entries.append(entry)

    def on_finish(self, record: Any) -> None:
        self.record = record


class PrintingObserver:
    """Prints one line per step: step number, ESS, log_ml estimate, resampling."""

    def __init__(self, every: int = 1) -> None:
        self.every = max(1, int(every))

    def on_step(self, entry: dict) -> None:
        if entry["step"] % self.every == 0:
            done = sum(entry["finished"])
            flag = " resampled" if entry["resampled"] else ""
            print(
                f"step {entry['step']:4d}  ess {entry['ess']:8.2f}  log_ml {entry['log_ml']:10.4f}"
                f"  finished {done}/{len(entry['finished'])}{flag}"
            )
