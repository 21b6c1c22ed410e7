"""widgets/particle_data.py directly: rows, held particles after a last resampling, deaths' reasons,
each resampling's draws and the retained particle of a conditional SMC run."""

from __future__ import annotations

import math
from collections import Counter

import pytest

from genlm_lab.smc import SMCRecord
from genlm_lab.widgets.particle_data import (
    death_reasons,
    final_status,
    particle_data,
    record_data,
    resampling_draw,
    resampling_draws,
    retained_slot,
)
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


# -- resampling draws and the retained particle (conditional SMC) ------------------------


def test_each_resampling_lists_the_copies_its_particles_got():
    first = {**_raw(1, [0.0, -1.0, -2.0, 0.5], ancestors=[3, 0, 3, 3])}
    first["resampling_method"] = "residual"  # the entry's own scheme wins over the run's
    steps = [first, _raw(2, [0.0] * 4), _raw(3, [0.0, 1.0, 2.0, 3.0], ancestors=[1, 1, 2, 0])]
    draws = resampling_draws(steps, "stratified")
    assert [(d["step"], d["method"]) for d in draws] == [(1, "residual"), (3, "stratified")]
    for d, step in zip(draws, (steps[0], steps[2]), strict=True):
        counted = Counter(step["ancestors"])  # counted apart: copies of particle i
        assert d["offspring"] == [counted[i] for i in range(4)]
        assert d["ancestors"] == step["ancestors"]
    assert resampling_draw(steps[1]) is None
    normalised = [normalize_entry(s) for s in steps]
    assert particle_data(normalised, resampling_method="stratified")["resamplings"][1] == draws[1]


def test_the_retained_slot_is_marked_in_its_row_and_every_genealogy_column():
    steps = [
        normalize_entry(_raw(1, [0.0, -1.0, -9.0], ancestors=[0, 0, 1])),
        normalize_entry(_raw(2, [0.0, 0.0, -1.0], ancestors=[0, 0, 0])),
    ]
    data = particle_data(steps, done=True, retained=0)
    # the last step resampled: rows 1 and 2 are copies of the retained path, yet free slots
    assert [p["copy_of"] for p in data["particles"]] == [0, 0, 0]
    assert [p["retained"] for p in data["particles"]] == [True, False, False]
    marks = [[bool(node.get("retained")) for node in col] for col in data["genealogy"]]
    assert marks == [[True, False, False]] * 2
    assert [node.get("children") for node in data["genealogy"][0]] == [2, 1, 0]
    assert [node.get("children") for node in data["genealogy"][1]] == [3, 0, 0]
    plain = particle_data(steps, done=True)
    assert plain["retained"] is None and "retained" not in plain["particles"][0]
    assert not any(node.get("retained") for col in plain["genealogy"] for node in col)


async def test_a_conditional_run_names_its_retained_slot_and_scheme_from_the_record():
    from _toys import RegexConstraint, toy_llm

    from genlm_lab.control import EOS, SMC, direct_token_sampler

    llm = toy_llm(vocab=[b"a", b"b", b"c", b"<eos>"])
    target = llm * RegexConstraint(llm.vocab, rb"(ab|b|c)*")
    b, c = llm.vocab[1], llm.vocab[2]
    seqs = await SMC(direct_token_sampler(target))(4, 1.0, 4, retained_sequence=[c, b, EOS], seed=2)
    data = record_data(seqs.record)
    assert data["retained"] == 0 == retained_slot({}, seqs.record.steps)
    resampled = [s for s in seqs.record.steps if s["resampled"]]
    assert [d["step"] for d in data["resamplings"]] == [s["step"] for s in resampled]
    assert {d["method"] for d in data["resamplings"]} == {"multinomial"}
    assert all(d["ancestors"][0] == 0 for d in data["resamplings"])  # the retained survives
    assert resampled and all(sum(d["offspring"]) == 4 for d in data["resamplings"])
