import json
import math

import pytest

from genlm_lab.smc import SMCRecord
from genlm_lab.widgets import record_report_html, write_report


def _record():
    steps = [
        {
            "run_id": "run-7",
            "step": t,
            "contents": ["<script>x</script>", "ok\n"],
            "log_weights": [0.0, -math.inf if t == 2 else -1.0],
            "weight_increments": [0.0, -1.0],
            "finished": [t == 2, False],
            "ess": 1.5,
            "log_ml": -0.5 * t,
            "resampled": t == 1,
            "ancestors": [0, 0] if t == 1 else None,
        }
        for t in (1, 2)
    ]
    return SMCRecord(
        n_particles=2, run_id="run-7", steps=steps, final={"status": "finished", "log_ml": -1.0}
    )


def test_report_is_a_standalone_page_with_one_row_per_particle(tmp_path):
    rec = _record()
    rec.save(tmp_path / "rec.json")
    out = write_report(tmp_path / "rec.json", tmp_path / "report.html")
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>")
    assert "<script" not in page  # no script at all: offline and safe
    assert "http" not in page.replace("http://www.w3.org/2000/svg", "")
    assert page.count("<tr class='genlm-") == 2
    assert "&lt;script&gt;x&lt;/script&gt;" in page and "ok\\n" in page
    assert "<th>run</th><td>run-7</td>" in page
    assert "resampled at step 1" in page
    assert page.count("<line ") == 2  # both step-2 particles descend from particle 0
    assert record_report_html(rec) == page


def test_report_refuses_what_is_not_a_record(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"hello": 1}')
    with pytest.raises(ValueError):
        write_report(bad, tmp_path / "out.html")
    with pytest.raises(ValueError, match="expected an SMCRecord"):
        record_report_html(42)


@pytest.mark.parametrize("text", ["[]", "42", '"steps"', '[{"type": "header"}]'])
def test_json_that_is_not_an_object_is_named_as_such(tmp_path, text):
    bad = tmp_path / "bad.json"
    bad.write_text(text)
    with pytest.raises(ValueError, match="not an SMC record: line 1 is a JSON"):
        write_report(bad, tmp_path / "out.html")


@pytest.mark.parametrize(
    ("record", "match"),
    [
        ('{"steps": [], "run_id": "r"}', "n_particles"),  # JSON text: a raw KeyError before
        ('{"steps": [], "run_id": "r", "n_particles": null}', "wrong|bad"),
        ({"steps": [], "run_id": "r", "n_particles": None}, "wrong type"),  # raw TypeError
    ],
)
def test_record_text_or_dict_missing_a_field_is_a_value_error(record, match):
    with pytest.raises(ValueError, match=match):
        record_report_html(record)


def _lines(tmp_path, step_fields):
    header = {"type": "header", "run_id": "r", "n_particles": 1}
    step = {"type": "step", "step": 0, "contents": ["a"], "log_weights": [0.0]}
    step.update({"weight_increments": [0.0], "finished": [False], **step_fields})
    path = tmp_path / "rec.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in (header, step)) + "\n")
    return path


@pytest.mark.parametrize(
    ("fields", "match"),
    [
        ({"step": "x"}, r"step entry 0: step 'x' is not an integer"),  # int()'s message before
        ({"weight_increments": [None]}, r"'weight_increments' holds None, not a number"),
    ],
)
def test_a_malformed_record_file_names_the_problem(tmp_path, fields, match):
    with pytest.raises(ValueError, match=match):
        record_report_html(_lines(tmp_path, fields))


def test_a_binary_file_is_named_as_not_a_record(tmp_path):
    path = tmp_path / "image.png"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00")
    with pytest.raises(ValueError, match=r"image\.png' is not an SMC record: it is not UTF-8"):
        record_report_html(path)
