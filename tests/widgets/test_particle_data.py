"""widgets/particle_data.py directly: rows, held particles after a last resampling, deaths' reasons."""

from __future__ import annotations

import math

import pytest

from genlm_lab.smc import SMCRecord
from genlm_lab.widgets.particle_data import death_reasons, final_status, particle_data
from genlm_lab.widgets.smc_data import normalize_entry


def _raw(step, weights, ancestors=None, extras=None):
    n = len(weights)
    out = {
        "step": step,
        "contents": [f"text {i}" for i in range(n)],
        "log_weights": weights,
        "weight_increments": [0.0] * n,
        "finished": [False] * n,
        "ess": 1.0,
        "log_ml": 0.0,
        "ancestors": ancestors,
    }
    if extras is not None:
        out["extras"] = extras
    return out


def test_rows_carry_normalised_weights():
    data = particle_data([normalize_entry(_raw(1, [0.0, math.log(3)]))])
    assert [p["weight"] for p in data["particles"]] == pytest.approx([0.25, 0.75])
    assert data["status"] == "running" and data["genealogy"] is None


def test_after_a_last_resampling_the_rows_are_the_held_copies_at_the_average_weight():
    logs = [math.log(0.1), math.log(0.7), -math.inf]
    entry = normalize_entry(_raw(2, logs, ancestors=[1, 1, 0]))
    data = particle_data([entry], done=True, final={"ess": 3.0, "log_ml": -0.9})
    average = math.log((0.1 + 0.7 + 0.0) / 3)  # log of the mean weight, by hand
    assert [p["copy_of"] for p in data["particles"]] == [1, 1, 0]
    assert [p["log_weight"] for p in data["particles"]] == pytest.approx([average] * 3)
    assert [p["text"] for p in data["particles"]] == ["text 1", "text 1", "text 0"]
    assert data["final_log_ml"] == -0.9
    assert "survivors" in data["held_note"]


def test_all_dead_held_rows_weigh_zero():
    entry = normalize_entry(_raw(1, [-math.inf, -math.inf], ancestors=[0, 1]))
    data = particle_data([entry], done=True)
    assert [p["log_weight"] for p in data["particles"]] == [-math.inf, -math.inf]


def test_death_reasons_and_final_status():
    steps = [_raw(3, [0.0, -math.inf], extras=[None, {"killed_why": "cut at max_tokens"}])]
    assert death_reasons(steps) == {(3, 1): "cut at max_tokens"}
    assert final_status(SMCRecord(n_particles=1)) == "unfinished"
    assert final_status(SMCRecord(n_particles=1, final={"status": "all_dead"})) == "all_dead"
