"""What the inference algorithms share: the particle loop, and its record, file, observers, clean-up.

`run_particles` is the one particle loop: start every particle, then step the
live ones together, record the step and let a `Policy` choose the particles
that go on (smc_standard resamples when the ESS drops, smc_steer expands
each particle into a beam of children and cuts back), until none is alive.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import math
import os
import warnings
from collections.abc import Awaitable, Callable, Iterable, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Protocol

import numpy as np

from genlm_lab.smc.alarms import AlarmMonitor, AlarmThresholds
from genlm_lab.smc.deaths import AllParticlesDied, death_rows, deaths_sentence, final_deaths
from genlm_lab.smc.observers import ObserverSet
from genlm_lab.smc.profile import Profiler
from genlm_lab.smc.record import RecordWriter, SMCRecord
from genlm_lab.smc.result import SMCResult, effective_sample_size
from genlm_lab.smc.rng import using_rng
from genlm_lab.util import logmeanexp
from genlm_lab.util.progress import finish_early, progress_bar


def check_n(name: str, value: Any) -> int:
    """`value` as an int, or ValueError naming `name` unless it is a positive int."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return int(value)


def check_model(model: Any) -> None:
    """TypeError, with the fix, for a model class or a model whose base was not initialised."""
    if isinstance(model, type):
        raise TypeError(
            f"got the class {model.__name__}, not a model: pass an instance, e.g. "
            f"{model.__name__}(...)"
        )
    if not hasattr(model, "weight"):
        raise TypeError(
            f"{type(model).__name__} has no weight: its __init__ must call "
            "super().__init__() (Model.__init__ sets weight, finished and twist_amount)"
        )


def seed_param(seed: Any) -> int | None:
    """The seed as the record keeps it: an int seed (numpy ints too), else None."""
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        return int(seed)
    return None


def weights_of(particles: Sequence[Any]) -> np.ndarray:
    """The particles' log-weights as a float64 array."""
    return np.array([float(p.weight) for p in particles], dtype=np.float64)


def checked_weights(particles: Sequence[Any], step: int) -> np.ndarray:
    """`weights_of(particles)`, or ValueError naming the first particle with a NaN or +inf weight.

    Such a weight cannot be compared, resampled or averaged: left alone it
    reads as weight zero in some sums and poisons others (log_ml, ESS).
    """
    weights = weights_of(particles)
    bad = np.flatnonzero(np.isnan(weights) | (weights == math.inf))
    if bad.size:
        i = int(bad[0])
        try:
            contents = repr(particles[i].string_for_serialization())
        except Exception:  # noqa: BLE001 - the message must not hide the weight
            contents = "?"
        when = "before the first step" if step == 0 else f"after step {step}"
        raise ValueError(
            f"particle {i} ({contents}) has log-weight {weights[i]} {when}; log-weights must "
            "be finite or -inf. Change weights through score / observe / condition, which "
            "check their argument, rather than by assigning `weight`."
        )
    return weights


def is_alive(particle: Any) -> bool:
    """A particle that still steps: not done and not of weight zero."""
    return not particle.done_stepping() and particle.weight > -math.inf


def untwist_finished(particles: Sequence[Any]) -> None:
    """Remove the twist of every particle that is done: it has no next step to remove it.

    `finish()` untwists, but a particle may also end through `done_stepping()`
    or `finished = True`, or twist after finishing; its twist must not stay
    in the final weights (and so in `log_ml`).
    """
    for p in particles:
        if p.done_stepping():
            p.untwist()


def clone_all(particles: Sequence[Any], indices: Iterable[int]) -> list[Any]:
    """`particles[i]` for each index: the first use of a particle reuses it, later ones copy."""
    used: set[int] = set()
    out = []
    for i in indices:
        i = int(i)
        out.append(particles[i] if i not in used else copy.deepcopy(particles[i]))
        used.add(i)
    return out


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


async def start_all(particles: Sequence[Any]) -> bool:
    """Run every particle's `start()` together; True iff all of them died there."""
    await gather_all(call_all(particles, "start"))
    return bool(np.all(checked_weights(particles, 0) == -math.inf))


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


def _backends(particles: Sequence[Any]) -> list[Any]:
    """LM-like objects (with `reset_async_queries`) reachable from the particles' attributes."""
    found: dict[int, Any] = {}

    def visit(value: Any, depth: int) -> None:
        if hasattr(value, "reset_async_queries") and callable(value.reset_async_queries):
            found[id(value)] = value
            return
        if depth == 0:
            return
        if isinstance(value, dict):
            items = list(value.values())
        elif isinstance(value, (list, tuple, set)):
            items = list(value)
        else:
            items = list(getattr(value, "__dict__", {}).values())
        for item in items[:64]:
            visit(item, depth - 1)

    for particle in particles[:1]:
        visit(particle, 2)
    return list(found.values())


def _contents(particles: Sequence[Any]) -> list[str]:
    """`string_for_serialization()` of each particle; TypeError naming one that is not text."""
    out = [p.string_for_serialization() for p in particles]
    for i, text in enumerate(out):
        if not isinstance(text, str):
            raise TypeError(
                f"particle {i}: {type(particles[i]).__name__}.string_for_serialization() "
                f"returned {type(text).__name__} ({text!r:.60}); it must return str"
            )
    return out


def step_extras(particles: Sequence[Any]) -> list[Any] | None:
    """Each particle's `step_extras` (JSON-able details of its last step), or None if none has any.

    A model that sets `self.step_extras` in `step` gets it into the step
    entry's "extras" list (one item per particle, None where unset). The
    attribute is consumed: reset to None once recorded, so a particle that
    did not step (it had finished) shows None in later steps.
    """
    out = [getattr(p, "step_extras", None) for p in particles]
    if all(x is None for x in out):
        return None
    for p in particles:
        if getattr(p, "step_extras", None) is not None:
            p.step_extras = None
    return out


class Run:
    """One inference run: its record, record file, observers and random generator."""

    def __init__(
        self,
        algorithm: str,
        model: Any,
        n_particles: int,
        params: dict,
        json_file: str | os.PathLike | None,
        observers: Any,
        progress: bool | None = False,
        profile: bool = False,
        alarms: AlarmThresholds | None = None,
    ) -> None:
        check_model(model)
        # First: the profile's steps add up to the whole run's wall time.
        self.profiler = Profiler() if profile else None
        self.record = SMCRecord(
            n_particles=n_particles,
            algorithm=algorithm,
            params={"model": type(model).__name__, **params},
        )
        self.observers = ObserverSet(observers)
        self.writer = None if json_file is None else RecordWriter(json_file, self.record)
        self.steps = 0
        # The bar names what runs (a wrapper such as control.SMC names itself) and shows
        # a total where the model bounds its steps; else it counts them.
        self.bar = progress_bar(
            total=getattr(model, "max_steps", None),
            desc=getattr(model, "progress_label", None) or algorithm,
            enabled=progress,
            unit="step",
        )
        self.step_label = getattr(model, "profile_label", "model")
        self.alarms = AlarmMonitor(n_particles, algorithm, params.get("n_beam"), alarms)
        self._lms: list[Any] | None = None
        # A model may time its own parts (control.SMC: each potential by name).
        hook = getattr(model, "profile_with", None)
        self._unprofile = None
        if self.profiler is not None and hook is not None:
            self._unprofile = hook(self.profiler)
            self.alarms.factor_of = self.profiler.factors

    def _stop_profiling(self) -> None:
        if self._unprofile is not None:
            self._unprofile()
            self._unprofile = None

    def timed(self, label: str) -> AbstractContextManager[None]:
        """A block whose time the profile charges to `label` (nothing when profiling is off)."""
        return _NO_PROFILE if self.profiler is None else self.profiler.timed(label)

    async def step_all(self, particles: list[Any]) -> None:
        """Step the particles together; with profiling, their LM forwards and own code apart."""
        profiler = self.profiler
        if profiler is None:
            await gather_all(call_all(particles, "step"))
            return
        profiler.step = self.steps + 1
        if self._lms is None:
            with profiler.timed("profiler"):  # its own set-up: a search for the LM backends
                self._lms = profiler.lms if profiler.lms is not None else _lm_stats(particles)
        counts = [dict(lm.stats) for lm in self._lms]
        steps = call_all(particles, "step")
        previous = profiler.switch("lm.forward")
        try:
            await gather_all([profiler.wrap(a, self.step_label) for a in steps])
        finally:
            profiler.switch(previous)
            for lm, before in zip(self._lms, counts, strict=True):
                for key, label in _LM_COUNTERS:
                    profiler.count(label, int(lm.stats.get(key, 0)) - int(before.get(key, 0)))

    async def emit(
        self,
        particles: Sequence[Any],
        before: np.ndarray,
        ancestors: Sequence[int] | None,
    ) -> dict:
        """Record one step (weights as they were before any resampling) and tell the observers."""
        self.steps += 1
        weights = weights_of(particles)
        with np.errstate(invalid="ignore"):
            increments = np.where(weights == -math.inf, -math.inf, weights - before)
        entry = {
            "run_id": self.record.run_id,
            "step": self.steps,
            "contents": _contents(particles),
            "log_weights": weights.tolist(),
            "weight_increments": increments.tolist(),
            "finished": [bool(p.done_stepping()) for p in particles],
            "ess": effective_sample_size(weights),
            "log_ml": logmeanexp(weights),
            "resampled": ancestors is not None,
            "ancestors": None if ancestors is None else [int(a) for a in ancestors],
        }
        extras = step_extras(particles)
        if extras is not None:
            entry["extras"] = extras
        with self.timed("alarms"):
            raised = self.alarms.step(entry)
        if raised:
            entry["alarms"] = raised
        if self.profiler is not None:  # the step's rows so far, for live views
            entry["profile"] = self.profiler.rows(self.steps)
        with self.timed("record"):
            self.record.steps.append(entry)
            if self.writer is not None:
                self.writer.step(entry)
            self.bar.update()
            alive = sum(is_alive(p) for p in particles)
            self.bar.set_postfix(alive=f"{alive}/{len(particles)}", ess=f"{entry['ess']:.1f}")
        if self.profiler is None:
            await self.observers.step(entry)
        else:
            previous = self.profiler.switch("observers")
            self.profiler.count("observers", len(self.observers))
            try:
                await self.observers.step(entry)
            finally:
                self.profiler.switch(previous)
        return entry

    async def stop_all_dead(self, particles: Sequence[Any], before: np.ndarray | None) -> SMCResult:
        """Record the last step, warn that every weight is zero and end the run.

        `before` is None when the particles died in `start()`: no step to record.
        """
        if before is None:
            when = "in start(), before the first step"
            why = "every particle's start() gave it weight zero"
        else:
            await self.emit(particles, before, None)
            when = f"after step {self.steps}"
            steps, parents = self.record.steps, self.record.parents()
            rows = final_deaths(death_rows(steps, parents), steps, parents)
            why = deaths_sentence(rows, n_particles=len(steps[-1]["log_weights"]))
        self.alarms.raise_(self.steps, "all_dead", f"every particle died ({when}): {why}.")
        warnings.warn(
            f"every particle has weight zero (log-weight -inf) {when}: "
            f"the run stops with log_ml = -inf. {why[0].upper()}{why[1:]}. "
            "See `sequences.deaths` or `record.alarms`.",
            AllParticlesDied,
            stacklevel=4,
        )
        return await self.finish(particles, "all_dead")

    async def finish(self, particles: Sequence[Any], status: str) -> SMCResult:
        """Close the record with `status`, tell the observers, return the result."""
        result = SMCResult(particles, record=self.record)
        with self.timed("alarms"):
            self.alarms.finish(result.log_ml, self._final_ancestors())
        profiler = self.profiler
        if profiler is not None:
            profiler.step = max(self.steps, 1)
            self.record.profile_rows = profiler.rows()
            self.alarms.profile(self.record.profile_rows)
        self.record.alarms = list(self.alarms.raised)
        self._final(status, result.log_ml, result.ess)
        if profiler is None:
            await self.observers.finish(self.record)
            return result
        self._stop_profiling()
        previous = profiler.switch("observers")
        try:
            await self.observers.finish(self.record)
        finally:
            profiler.switch(previous)
        self.record.profile_rows = profiler.rows()  # now with the observers' finish
        return result

    def _final_ancestors(self) -> list[int] | None:
        """Which particles of the last recorded step the result holds (None: all of them)."""
        if not self.record.steps:
            return None
        return self.record.steps[-1].get("ancestors")

    def _final(self, status: str, log_ml: float, ess: float) -> None:
        self.record.final = {
            "status": status,
            "log_ml": float(log_ml),
            "ess": float(ess),
            "n_steps": self.steps,
        }
        total = getattr(self.bar, "total", None)
        if total is not None and self.steps < total:
            finish_early(self.bar, self.steps)  # ended early: a full bar, not 12/30
        self.bar.set_postfix(status=status, log_ml=f"{log_ml:.3f}", ess=f"{ess:.1f}")
        self.bar.close()
        if self.writer is not None:
            self.writer.diagnostics(self.record)  # before the final line, which ends a file
            self.writer.finish(self.record.final)
            self.writer.close()

    def interrupted(self, particles: Sequence[Any]) -> None:
        """After an exception or cancellation: drop queued LM requests, close the file."""
        for lm in _backends(particles):
            try:
                lm.reset_async_queries()
            except Exception:  # clean-up must not hide the original error
                pass
        self._stop_profiling()
        if self.record.final is None:
            if self.profiler is not None:
                self.record.profile_rows = self.profiler.rows()
            self.record.alarms = list(self.alarms.raised)
            weights = weights_of(particles) if particles else np.zeros(0)
            self._final("interrupted", logmeanexp(weights), effective_sample_size(weights))
            self.observers.finish_interrupted(self.record)  # live views stop saying "running"


_NO_PROFILE = nullcontext()
#: Backend counters read around each step: (stats key, profile component).
_LM_COUNTERS = (
    ("batches", "lm.forward"),
    ("rows", "lm.batch_rows"),
    ("cache_hits", "lm.cache_hits"),
)


def _lm_stats(particles: Sequence[Any]) -> list[Any]:
    """LM backends (objects with a `stats` dict counting "batches") reachable from a particle."""
    found: dict[int, Any] = {}

    def visit(value: Any, depth: int) -> None:
        stats = getattr(value, "stats", None)
        if isinstance(stats, dict) and "batches" in stats and "cache_hits" in stats:
            found[id(value)] = value
            return
        if depth == 0 or isinstance(value, (str, bytes, int, float, np.ndarray)):
            return
        if isinstance(value, dict):
            items = list(value.values())
        elif isinstance(value, (list, tuple)):
            items = list(value)
        else:
            items = list(getattr(value, "__dict__", {}).values())
        for item in items[:64]:
            visit(item, depth - 1)

    for particle in particles[:1]:
        visit(particle, 5)
    return list(found.values())


class Policy(Protocol):
    """How an algorithm turns one round's particles into the next (see `run_particles`)."""

    def expand(self, particles: list[Any], before: np.ndarray) -> tuple[list[Any], np.ndarray]:
        """The candidates that step this round, and each one's log-weight before the step."""

    def select(
        self, candidates: list[Any], weights: np.ndarray
    ) -> tuple[list[int] | None, Callable[[], list[Any]]]:
        """After the step: the ancestors to record (None: no resampling) and a function
        that makes the particles of the next round (called after the step is recorded)."""


async def run_particles(run: Run, model: Any, n: int, policy: Policy, rng: Any) -> SMCResult:
    """The particle loop of every algorithm: start, then step, record and select until done.

    Each round the policy expands the particles into candidates; every live
    candidate steps (concurrently); finished ones lose their twist; the step
    is recorded with the weights as they were before any resampling; the
    policy picks the next round's particles. When every weight is zero the
    run stops with status "all_dead".

    Raises:
        Whatever a particle raises, after `run.interrupted` has dropped queued
        LM requests and closed the record file.
    """
    particles: list[Any] = []
    with using_rng(rng):
        try:
            particles = [copy.deepcopy(model) for _ in range(n)]
            before = weights_of(particles)
            with run.timed("start"):
                dead = await start_all(particles)
            if dead:
                return await run.stop_all_dead(particles, None)
            while any(is_alive(p) for p in particles):
                with run.timed("resampling"):
                    candidates, before = policy.expand(particles, before)
                await run.step_all([p for p in candidates if is_alive(p)])
                untwist_finished(candidates)
                weights = checked_weights(candidates, run.steps + 1)
                if np.all(weights == -math.inf):
                    return await run.stop_all_dead(candidates, before)
                with run.timed("resampling"):
                    ancestors, select = policy.select(candidates, weights)
                await run.emit(candidates, before, ancestors)
                with run.timed("resampling"):
                    particles = select()
                before = weights_of(particles)
            return await run.finish(particles, "finished")
        except BaseException:
            run.interrupted(particles)
            raise
