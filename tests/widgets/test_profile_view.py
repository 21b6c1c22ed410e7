"""ProfileView: stacked seconds per step and a whole-run table, from a record and live."""

from __future__ import annotations

import time

import pytest

from genlm_lab.smc import Model, SMCRecord, smc_standard
from genlm_lab.widgets import ProfileView, profile_data, profile_html

ROWS = [
    [0, "start", 1, 0.5],
    [1, "lm.forward", 2, 3.0],
    [1, "sampler", 4, 1.0],
    [1, "lm.batch_rows", 8, 0.0],
    [2, "lm.forward", 1, 2.0],
    [2, "JsonSchema.mask", 4, 0.5],
]


def test_the_data_sums_each_step_and_orders_components_by_time():
    data = profile_data(ROWS)
    assert data["steps"] == [0, 1, 2]
    assert data["components"] == ["lm.forward", "sampler", "start", "JsonSchema.mask"]
    assert data["stacks"] == [[0.0, 0.0, 0.5, 0.0], [3.0, 1.0, 0.0, 0.0], [2.0, 0.0, 0.0, 0.5]]
    assert data["total"] == pytest.approx(7.0)
    first = data["table"][0]
    assert first == {"component": "lm.forward", "calls": 3, "seconds": 5.0, "share": 5.0 / 7.0}
    assert data["counters"] == {"lm.batch_rows": 8}  # counted, not drawn


def test_many_components_share_one_colour_beyond_the_palette():
    rows = [[1, f"f{i}", 1, float(i + 1)] for i in range(12)]
    data = profile_data(rows)
    assert len(data["components"]) == 9 and data["components"][-1] == "the rest"
    assert sum(data["stacks"][0]) == pytest.approx(sum(range(1, 13)))
    assert len(data["table"]) == 12


def test_the_static_html_has_a_bar_per_step_segment_and_a_table_row_per_component():
    html = profile_html(profile_data(ROWS))
    assert html.count("<rect x=") == 5  # the non-zero segments of the three steps
    assert html.count("<tr data-component=") == 4  # counters go in the title line
    assert "7 s over 3 steps; lm.batch_rows 8" in html
    assert "no profile" in profile_html(profile_data(None))


class Busy(Model):
    def __init__(self):
        super().__init__()
        self.t = 0

    async def step(self):
        time.sleep(0.001)
        self.t += 1
        if self.t == 3:
            self.finish()


async def test_live_and_from_a_record_agree_at_the_end(tmp_path):
    view = ProfileView()
    result = await smc_standard(Busy(), 3, seed=0, profile=True, observers=[view])
    record = result.record
    live = view.view_data()
    assert live["done"] and live["steps"] == [0, 1, 2, 3]
    saved = tmp_path / "run.json"
    record.save(saved)
    again = ProfileView.from_record(saved).view_data()
    assert again == profile_data(record.profile_rows, run_id=record.run_id)
    # the live view got the record before the observers' own finish was timed
    assert live["steps"] == again["steps"]
    assert live["total"] == pytest.approx(again["total"], rel=0.2)
    assert {r["component"] for r in live["table"]} >= {"model", "start", "record"}


async def test_live_steps_show_before_the_end():
    view = ProfileView()
    record = (await smc_standard(Busy(), 2, seed=0, profile=True)).record
    for entry in record.steps[:2]:  # as an observer sees them while the run goes
        view.on_step(entry)
    data = view.view_data()
    assert not data["done"] and data["steps"] == [1, 2]
    assert "(running)" in view._repr_html_()
    assert all("profile" in e for e in record.steps)
    assert SMCRecord.from_json(record.to_json()).steps[0]["profile"] == record.steps[0]["profile"]
