"""What the inference algorithms share: the particle loop, and its record, file, observers, clean-up.

`run_particles` is the one particle loop: start every particle, then step the
live ones together, record the step and let a `Policy` choose the particles
that go on (smc_standard resamples when the ESS drops, smc_steer expands
each particle into a beam of children and cuts back), until none is alive.

Its helpers live beside it: `_particles` (checks, weights, liveness, copies,
the walk that finds a model's LM backends) and `_tasks` (stepping particles
together as asyncio tasks).
"""

from __future__ import annotations

import copy
import math
import os
import warnings
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Protocol

import numpy as np

from genlm_lab.smc._particles import (
    check_model,
    checked_weights,
    contents_of,
    counting_backends,
    is_alive,
    resettable_backends,
    seed_param,
    step_extras,
    untwist_finished,
    weights_of,
)
from genlm_lab.smc._tasks import call_all, gather_all
from genlm_lab.smc.alarms import AlarmMonitor, AlarmThresholds
from genlm_lab.smc.deaths import AllParticlesDied, death_rows, deaths_sentence, final_deaths
from genlm_lab.smc.observers import ObserverSet
from genlm_lab.smc.options import RunOptions
from genlm_lab.smc.profile import Profiler
from genlm_lab.smc.record import SMCRecord
from genlm_lab.smc.record_json import RecordWriter
from genlm_lab.smc.result import SMCResult, effective_sample_size
from genlm_lab.smc.rng import make_rng, using_rng
from genlm_lab.util import logmeanexp
from genlm_lab.util.progress import finish_early, progress_bar, progress_enabled

__all__ = ["Policy", "Run", "open_run", "run_particles", "start_all"]


async def start_all(particles: Sequence[Any]) -> bool:
    """Run every particle's `start()` together; True iff all of them died there.

    A model without a `start` attribute skips it: `Model.start` does nothing
    by default, so a duck-typed model (no `Model` base) starts as one would.
    A `start` that is there must still be an `async def`.
    """
    await gather_all(call_all([p for p in particles if hasattr(p, "start")], "start"))
    return bool(np.all(checked_weights(particles, 0) == -math.inf))


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
                self._lms = (
                    profiler.lms if profiler.lms is not None else counting_backends(particles)
                )
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
            "contents": contents_of(particles),
            "log_weights": weights.tolist(),
            "weight_increments": increments.tolist(),
            "finished": [bool(p.done_stepping()) for p in particles],
            "ess": effective_sample_size(weights),
            "log_ml": logmeanexp(weights),
            "resampled": ancestors is not None,
            "ancestors": None if ancestors is None else [int(a) for a in ancestors],
        }
        params = self.record.params
        if ancestors is not None and params.get("resampling_method"):
            entry["resampling_method"] = params["resampling_method"]  # live views show it
        if params.get("retained") is not None:  # csmc_standard: the retained particle's slot
            entry["retained"] = int(params["retained"])
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
        for lm in resettable_backends(particles):
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


def open_run(
    algorithm: str, model: Any, n: int, params: dict, options: RunOptions
) -> tuple[Run, np.random.Generator]:
    """A `Run` of `algorithm` with `options`, and its random generator (the seed joins `params`)."""
    params = {**params, "seed": seed_param(options.seed)}
    rng = make_rng(options.seed)
    run = Run(
        algorithm,
        model,
        n,
        params,
        options.json_file,
        options.observers,
        progress_enabled(options.progress),
        profile=options.profile,
        alarms=options.alarms,
    )
    return run, rng


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
