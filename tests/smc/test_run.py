"""smc/_run.py directly: the particle loop under a hand-written policy, the record it keeps."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from genlm_lab.smc import AllParticlesDied, Model
from genlm_lab.smc._particles import clone_all
from genlm_lab.smc._run import Run, run_particles, start_all
from genlm_lab.util import logmeanexp


class Countdown(Model):
    """Scores `scores[i]` at step i and finishes after the last one; text: the steps taken."""

    def __init__(self, scores: list[float]) -> None:
        super().__init__()
        self.scores = scores
        self.taken = 0

    async def step(self) -> None:
        self.score(self.scores[self.taken])
        self.taken += 1
        if self.taken == len(self.scores):
            self.finish()

    def string_for_serialization(self) -> str:
        return "x" * self.taken


class KeepAll:
    """A policy that never resamples: every particle goes on unchanged."""

    def expand(self, particles, before):
        return particles, before

    def select(self, candidates, weights):
        return None, lambda: candidates


class KeepFirst:
    """A policy that resamples every step onto particle 0 (ancestors recorded)."""

    def expand(self, particles, before):
        return particles, before

    def select(self, candidates, weights):
        ancestors = [0] * len(candidates)
        return ancestors, lambda: clone_all(candidates, ancestors)


def _run(model, n=3, **kw):
    return Run("test", model, n, {}, None, None, **kw)


async def test_run_particles_records_every_step_and_the_evidence():
    model = Countdown([math.log(0.5), math.log(0.25)])
    run = _run(model)
    result = await run_particles(run, model, 3, KeepAll(), np.random.default_rng(0))
    steps = run.record.steps
    assert [s["step"] for s in steps] == [1, 2]
    assert steps[0]["contents"] == ["x", "x", "x"]
    assert steps[1]["weight_increments"] == pytest.approx([math.log(0.25)] * 3)
    assert steps[1]["finished"] == [True, True, True]
    assert not steps[0]["resampled"]
    assert run.record.final["status"] == "finished"
    assert run.record.final["n_steps"] == 2
    assert result.log_ml == pytest.approx(math.log(0.5 * 0.25))


async def test_run_particles_records_the_policy_ancestors():
    model = Countdown([0.0, 0.0])
    run = _run(model, n=2)
    await run_particles(run, model, 2, KeepFirst(), None)
    assert [s["ancestors"] for s in run.record.steps] == [[0, 0], [0, 0]]
    assert all(s["resampled"] for s in run.record.steps)


async def test_emit_log_ml_is_the_log_mean_of_the_weights():
    model = Countdown([0.0])
    run = _run(model, n=2)
    particles = [Countdown([0.0]), Countdown([0.0])]
    particles[0].weight, particles[1].weight = math.log(0.2), math.log(0.6)
    entry = await run.emit(particles, np.zeros(2), None)
    assert entry["log_ml"] == pytest.approx(math.log(0.4))
    assert entry["log_ml"] == pytest.approx(logmeanexp(np.log([0.2, 0.6])))


async def test_every_particle_dead_stops_the_run_with_a_warning():
    model = Countdown([-math.inf, 0.0])
    run = _run(model, n=2)
    with pytest.warns(AllParticlesDied, match="every particle has weight zero"):
        result = await run_particles(run, model, 2, KeepAll(), None)
    assert run.record.final["status"] == "all_dead"
    assert result.log_ml == -math.inf
    assert "all_dead" in [kind for _, kind, _ in run.record.alarms]


async def test_start_all_says_whether_every_particle_died_in_start():
    class DiesInStart(Countdown):
        async def start(self) -> None:
            self.weight = -math.inf

    assert await start_all([DiesInStart([0.0]), DiesInStart([0.0])])
    assert not await start_all([DiesInStart([0.0]), Countdown([0.0])])


async def test_a_failing_step_closes_the_record_as_interrupted_and_resets_backends():
    class FakeLM:
        def __init__(self) -> None:
            self.resets = 0

        def __deepcopy__(self, memo: dict) -> FakeLM:
            return self  # shared by every particle, as a real backend is

        def reset_async_queries(self) -> None:
            self.resets += 1

    lm = FakeLM()

    class Fails(Countdown):
        async def step(self) -> None:
            raise RuntimeError("boom")

    model = Fails([0.0])
    model.lm = lm
    run = _run(model, n=2)
    with pytest.raises(RuntimeError, match="boom"):
        await run_particles(run, model, 2, KeepAll(), None)
    assert run.record.final["status"] == "interrupted"
    assert lm.resets == 1  # found once, though every particle holds it


def test_run_refuses_a_model_class():
    with pytest.raises(TypeError, match="pass an instance"):
        _run(Countdown)


async def test_profiled_run_charges_the_steps_to_the_model_label():
    model = Countdown([0.0, 0.0])
    run = _run(model, n=2, profile=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        await run_particles(run, model, 2, KeepAll(), None)
    components = {row[1] for row in run.record.profile_rows}
    assert {"start", "model", "record"} <= components
