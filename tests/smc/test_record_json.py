"""smc/record_json.py: non-finite floats survive JSON; a bad number is named by its field."""

from __future__ import annotations

import json
import math

import pytest

from genlm_lab.smc.record import SMCRecord
from genlm_lab.smc.record_json import RecordWriter, decode_entry, dumps, to_float


def test_nonfinite_floats_round_trip_through_json():
    entry = {
        "log_weights": [-math.inf, 0.5],
        "weight_increments": [math.inf, 0.0],
        "ess": 1.0,
        "log_ml": -math.inf,
        "extras": [{"logw": -math.inf, "factors": {"f": -math.inf}, "token": "a"}, None],
    }
    text = dumps(entry)
    assert "-Infinity" in text and "NaN" not in text
    back = decode_entry(json.loads(text))
    assert back["log_weights"] == [-math.inf, 0.5]
    assert back["weight_increments"] == [math.inf, 0.0]
    assert back["log_ml"] == -math.inf
    assert back["extras"][0] == {"logw": -math.inf, "factors": {"f": -math.inf}, "token": "a"}


def test_a_bad_number_is_named_by_its_field():
    assert math.isnan(to_float("NaN", "ess"))
    with pytest.raises(ValueError, match="record field 'ess' holds 'x'"):
        to_float("x", "ess")


def test_the_writer_writes_lines_that_load_back(tmp_path):
    record = SMCRecord(n_particles=1)
    path = tmp_path / "run.jsonl"
    writer = RecordWriter(path, record)
    writer.step({"step": 1, "contents": ["a"], "log_weights": [-math.inf], "finished": [True]})
    writer.finish({"status": "all_dead", "log_ml": -math.inf})
    writer.close()
    writer.close()  # idempotent
    lines = path.read_text().splitlines()
    assert [json.loads(line)["type"] for line in lines] == ["header", "step", "final"]
    back = SMCRecord.load(path)
    assert back.steps[0]["log_weights"] == [-math.inf]
    assert back.final["log_ml"] == -math.inf
