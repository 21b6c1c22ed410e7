"""Alarms: each kind provoked by a model built to degenerate that way; a healthy run raises none."""

from __future__ import annotations

import math
import time
import warnings

import pytest

from genlm_lab.smc import (
    ALARM_KINDS,
    AlarmThresholds,
    AllParticlesDied,
    CollectingObserver,
    Model,
    SMCRecord,
    get_rng,
    importance_sampling,
    smc_standard,
    smc_steer,
)
from genlm_lab.smc.alarms import runaway


class Walk(Model):
    """Appends `piece(t, rng)` each step for `steps` steps, scored by `score(t, rng)`."""

    def __init__(self, steps=6, piece=None, score=None, extras=None, kill_at=None):
        super().__init__()
        self.steps, self.t, self.text = steps, 0, ""
        self.piece = piece or (lambda t, rng: "ab"[int(rng.integers(2))] + "cd"[t % 2])
        self.scorer = score or (lambda t, rng: float(rng.normal(0, 0.1)))
        self.extras = extras
        self.kill_at = kill_at

    def immutable_properties(self):
        return {"piece", "scorer", "extras"}

    async def step(self):
        rng = get_rng()
        self.t += 1
        self.text += self.piece(self.t, rng)
        self.score(self.scorer(self.t, rng))
        if self.kill_at is not None and self.t == self.kill_at:
            self.condition(False)
        if self.extras is not None:
            self.step_extras = self.extras(self)
        if self.t >= self.steps:
            self.finish()

    def string_for_serialization(self):
        return self.text


def kinds(record: SMCRecord) -> list[str]:
    return [kind for _, kind, _ in record.alarms]


async def test_a_healthy_run_raises_no_alarm():
    result = await smc_standard(Walk(), 8, seed=0)
    assert result.record.alarms == []
    assert all("alarms" not in e for e in result.record.steps)


async def test_low_ess_for_three_steps_in_a_row():
    wild = Walk(steps=6, score=lambda t, rng: float(rng.normal(0, 40)))
    record = (await importance_sampling(wild, 6, seed=1)).record
    assert kinds(record) == ["low_ess"]
    step, _, sentence = record.alarms[0]
    assert [e["ess"] < 1.5 for e in record.steps[:step]][-3:] == [True] * 3
    assert "below 1.5 for 3 steps in a row" in sentence
    # the same run with a looser floor: no alarm (the threshold is an argument)
    looser = AlarmThresholds(ess_floor=1.0)
    record = (await importance_sampling(wild, 6, seed=1, alarms=looser)).record
    assert "low_ess" not in kinds(record)


async def test_every_particle_dead_warns_once_with_the_commonest_reason():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = await smc_standard(Walk(kill_at=3), 5, seed=0)
    died = [w for w in caught if issubclass(w.category, AllParticlesDied)]
    assert len(died) == 1 and issubclass(AllParticlesDied, RuntimeWarning)
    assert "model killed 5 of 5" in str(died[0].message).lower()
    assert set(kinds(result.record)) == {"all_dead", "log_ml_inf"}
    step, _, sentence = next(a for a in result.record.alarms if a[1] == "all_dead")
    assert step == 3 and "model killed 5 of 5" in sentence
    assert result.log_ml == -math.inf


async def test_low_mass_when_the_constraint_fights_the_model():
    tight = Walk(extras=lambda m: {"logZ": math.log(1e-8)})
    record = (await smc_standard(tight, 4, seed=0)).record
    assert kinds(record) == ["low_mass"]
    assert record.alarms[0][0] == 1 and "1e-08" in record.alarms[0][2]
    fine = Walk(extras=lambda m: {"logZ": math.log(1e-5)})
    assert (await smc_standard(fine, 4, seed=0)).record.alarms == []


@pytest.mark.parametrize(
    ("piece", "what"), [(lambda t, rng: "  ", "whitespace"), (lambda t, rng: "la", "repetition")]
)
async def test_runaway_whitespace_and_repetition(piece, what):
    record = (await smc_standard(Walk(steps=40, piece=piece), 4, seed=0)).record
    assert kinds(record) == ["runaway"]
    assert f"4 of 4 live particles end in a {what} runaway" in record.alarms[0][2]


def test_runaway_needs_a_long_run_and_four_repeats():
    limits = AlarmThresholds(whitespace_run=4, repeat_period=3, repeat_chars=6)
    assert runaway("xx    ", limits) == "whitespace"
    assert runaway("xx   ", limits) is None
    assert runaway("q" + "abc" * 2, limits) is None  # 6 chars, but "abc" only twice
    assert runaway("q" + "abc" * 4, limits) == "repetition"
    assert runaway("zz" + "ab" * 3, limits) is None  # 6 chars, "ab" three times
    assert runaway("z" + "ab" * 4, limits) == "repetition"
    assert runaway("abcdefghabcdefgh", limits) is None  # period 8 > repeat_period


async def test_most_particles_cut_at_max_tokens():
    cut = Walk(steps=3, extras=lambda m: {"cut": m.t == 3})
    record = (await smc_standard(cut, 4, seed=0)).record
    assert kinds(record) == ["max_tokens"]
    assert "4 of 4 final particles were cut at max_tokens" in record.alarms[0][2]
    limits = AlarmThresholds(cut_fraction=1.0)  # "more than all": never
    assert (await smc_standard(cut, 4, seed=0, alarms=limits)).record.alarms == []


async def test_cut_flags_follow_resampling_and_smc_steer_candidates():
    class MostCut(Walk):
        """At step 2 most particles are cut (and weigh little); the rest go on to step 4."""

        async def step(self):
            await super().step()
            if self.t == 2 and get_rng().random() < 0.75:
                self.score(-30.0)
                self.step_extras = {"cut": True}
                self.finish()

    model = MostCut(steps=4, score=lambda t, rng: 0.0)
    kept = (await smc_standard(model, 8, 0.0, seed=0)).record  # no resampling: cut ones stay
    assert kinds(kept) == ["max_tokens"]
    resampled = (await smc_standard(model, 8, 1.0, seed=0)).record  # resampling drops them
    assert resampled.steps[1]["resampled"] and kinds(resampled) == []
    steer = Walk(steps=3, extras=lambda m: {"cut": m.t == 3})
    record = (await smc_steer(steer, 3, 2, seed=0)).record
    assert kinds(record) == ["max_tokens"]


async def test_alarms_reach_the_step_entries_observers_and_the_json_record(tmp_path):
    seen = CollectingObserver()
    path = tmp_path / "run.jsonl"
    tight = Walk(extras=lambda m: {"logZ": -40.0})
    record = (await smc_standard(tight, 3, seed=0, observers=[seen], json_file=path)).record
    assert seen.entries[0]["alarms"] == [list(record.alarms[0])]
    assert SMCRecord.from_json(record.to_json()).alarms == record.alarms
    assert SMCRecord.load(path).alarms == record.alarms


async def test_one_factor_taking_most_of_the_time():
    class Slow(Walk):
        def profile_with(self, profiler):
            profiler.factors["Slow.mask"] = "Slow"
            Slow.profiler = profiler
            return lambda: None

        async def step(self):
            with Slow.profiler.timed("Slow.mask"):
                time.sleep(0.01)
            await super().step()

    record = (await smc_standard(Slow(steps=4), 3, seed=0, profile=True)).record
    assert kinds(record) == ["slow_factor"]
    assert record.alarms[0][2].startswith("Slow took 9")
    assert (await smc_standard(Slow(steps=4), 3, seed=0)).record.alarms == []  # no profile


def test_every_kind_is_listed():
    assert set(ALARM_KINDS) == {
        "low_ess",
        "all_dead",
        "low_mass",
        "runaway",
        "max_tokens",
        "log_ml_inf",
        "slow_factor",
        "unfinishable",
    }


def _cut_entry(step, extras, weights=None):
    n = len(extras)
    return {
        "step": step,
        "ess": float(n),
        "log_weights": weights or [0.0] * n,
        "contents": ["x"] * n,
        "extras": extras,
    }


def test_the_max_tokens_alarm_counts_only_unfinished_cuts_and_names_factor_and_budget():
    from genlm_lab.smc.alarms import AlarmMonitor

    inf = float("-inf")
    valid = {"cut": True, "complete": True, "killed_by": None}
    monitor = AlarmMonitor(3)
    monitor.step(_cut_entry(1, [valid, valid, valid]))
    monitor.finish(0.0, None)
    assert monitor.raised == []  # all cut, all finished valid: not the budget's doing

    killed = {"cut": True, "killed_by": "JsonSchema", "killed_budget": 20}
    monitor = AlarmMonitor(3)
    monitor.step(_cut_entry(1, [killed, killed, valid], [inf, inf, 0.0]))
    monitor.finish(0.0, None)
    ((_, kind, sentence),) = monitor.raised
    assert kind == "max_tokens"
    assert sentence.startswith("2 of 3 final particles were cut at max_tokens before JsonSchema")
    assert "the budget of 20 tokens was too small for JsonSchema" in sentence
    assert "budget=False" in sentence and "WithinBudget" not in sentence
