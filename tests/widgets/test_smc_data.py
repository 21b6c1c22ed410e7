"""widgets/smc_data.py directly: records read in every form, entries normalised, states, genealogy."""

from __future__ import annotations

import math

import pytest

from genlm_lab.smc import SMCRecord
from genlm_lab.widgets.smc_data import (
    as_record,
    awrs_counts,
    check_entry,
    display_text,
    genealogy,
    normalize_entry,
    run_summary,
    step_entries,
    summary_point,
)


def _entry(step, weights, finished=None, ancestors=None, texts=None, **extra):
    n = len(weights)
    return {
        "step": step,
        "contents": texts or [f"p{i}" for i in range(n)],
        "log_weights": weights,
        "weight_increments": [0.0] * n,
        "finished": finished or [False] * n,
        "ess": float(n),
        "log_ml": 0.0,
        "resampled": ancestors is not None,
        "ancestors": ancestors,
        **extra,
    }


def _record():
    return SMCRecord(
        n_particles=2,
        run_id="r",
        steps=[_entry(1, [0.0, math.log(3)], ancestors=[1, 1]), _entry(2, [0.0, -math.inf])],
    )


def test_a_record_is_read_from_itself_its_dict_its_json_and_its_file(tmp_path):
    record = _record()
    path = tmp_path / "r.json"
    record.save(path)
    forms = [record, record.to_dict(), record.to_json(), str(path), path]
    read = [as_record(form) for form in forms]
    assert [r.run_id for r in read] == ["r"] * len(forms)
    assert read[3].steps[1]["log_weights"] == [0.0, -math.inf]


def test_what_is_not_a_record_is_refused_with_why(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        as_record(str(tmp_path / "missing.json"))
    with pytest.raises(ValueError, match="got int"):
        as_record(42)
    with pytest.raises(ValueError, match="not an SMC record: a field is missing"):
        as_record({"run_id": "x"})


def test_states_follow_weights_finish_and_smc_steers_cut():
    raw = _entry(3, [0.0, -math.inf, 0.0, 0.0], finished=[False, False, True, False], ancestors=[2])
    entry = normalize_entry(raw)
    assert [p["state"] for p in entry["particles"]] == ["pruned", "dead", "finished", "pruned"]
    resampled = normalize_entry(_entry(3, [0.0, 0.0], ancestors=[1, 1]))
    assert [p["state"] for p in resampled["particles"]] == ["active", "active"]


def test_control_extras_give_the_token_the_killer_and_the_awrs_counts():
    raw = _entry(
        1,
        [0.0],
        extras=[
            {"token": "a", "killed_by": "Regex", "awrs": {"n_checks": 1234, "rejected": ["b"]}}
        ],
    )
    (part,) = normalize_entry(raw)["particles"]
    assert (part["token"], part["killed_by"]) == ("a", "Regex")
    assert part["awrs"] == "AWRS 1,234 checked, 1 rejected"
    assert awrs_counts(None, 2) == "0 checked, 2 rejected"


def test_malformed_entries_are_named():
    with pytest.raises(ValueError, match="lacks"):
        check_entry({"step": 1})
    bad = _entry(1, [0.0, 0.0])
    bad["finished"] = [False]
    with pytest.raises(ValueError, match="differ in length"):
        check_entry(bad, "entry 7")
    with pytest.raises(ValueError, match=r"ancestors \[4\] name particles outside 0..1"):
        normalize_entry(_entry(1, [0.0, 0.0], ancestors=[4]))


def test_display_text_escapes_control_and_invalid_bytes():
    assert display_text("a\nb\\") == "a\\nb\\\\"
    assert display_text(b"\xff") == "\\xff"
    assert display_text("ok") == "ok"


def test_summary_point_reads_without_texts_and_infinities_from_json():
    raw = _entry(4, [0.0], ancestors=[0])
    raw["log_ml"] = "-Infinity"
    assert summary_point(raw) == (4, 1.0, -math.inf, True)


def test_step_entries_and_genealogy_follow_the_records_parents():
    run_id, entries = step_entries(_record())
    assert run_id == "r"
    assert [e["parents"] for e in entries] == [None, [1, 1]]
    columns = genealogy(entries)
    assert [[n["parent"] for n in col] for col in columns] == [[None, None], [1, 1]]
    assert [n["weight"] for n in columns[0]] == pytest.approx([0.25, 0.75])
    assert [n["weight"] for n in columns[1]] == pytest.approx([1.0, 0.0])
    summary = run_summary(entries)
    assert summary["n_particles"] == 2 and summary["resampled"] == [1]
    with pytest.raises(ValueError, match="does not belong to this view's run"):
        step_entries(_record(), run_id="other")
