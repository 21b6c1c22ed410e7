"""widgets/beam_data.py directly: step dicts checked, logZ and its bound read per step."""

from __future__ import annotations

import math

import pytest

from genlm_lab.widgets.beam_data import beam_data, step_dict, step_view


def _step(position, byte, logz, upper=None, candidates=None):
    return {
        "position": position,
        "byte": byte,
        "logZ": logz,
        "logZ_upper": upper,
        "lm_calls": 1,
        "lm_calls_next": 0,
        "skipped": 0,
        "candidates": candidates
        or [
            {
                "tokens": [],
                "token_ids": [],
                "tokens_text": ["a"],
                "partial": [],
                "partial_text": "",
                "log_weight": logz,
                "share": 1.0,
                "status": "kept",
                "terminated": False,
            }
        ],
        "healing": [],
        "next_logprobs": None,
        "alarms": [],
    }


def test_a_step_that_is_not_a_beam_step_is_named():
    with pytest.raises(ValueError, match="beam step 4 must be a BeamStep"):
        step_dict({"position": 0}, 4)


def test_an_unknown_candidate_status_is_refused():
    step = _step(0, None, 0.0)
    step["candidates"][0]["status"] = "lost"
    with pytest.raises(ValueError, match="candidate status 'lost'"):
        step_view(step)


def test_the_series_hold_logz_its_bound_and_the_calls_of_each_step():
    steps = [_step(0, None, 0.0), _step(1, 97, math.log(0.5), math.log(0.6))]
    data = beam_data(steps, b"a", 1, "")
    assert data["logZ"] == pytest.approx([0.0, math.log(0.5)])
    assert data["logZ_upper"] == pytest.approx([0.0, math.log(0.6)])  # none given: logZ itself
    assert data["lm_calls"] == [1, 1]
    assert data["position"] == 1
