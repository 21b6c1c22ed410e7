import math

import numpy as np
import pytest
from matplotlib.figure import Figure

from genlm_lab.smc import SMCRecord
from genlm_lab.widgets import ess_log_ml_figure, weight_histogram


def _record():
    steps = [
        {
            "run_id": "r",
            "step": t,
            "contents": ["a", "b", "c"],
            "log_weights": [0.0, -1.0 * t, -math.inf],
            "weight_increments": [0.0, 0.0, 0.0],
            "finished": [False] * 3,
            "ess": 3.0 - t / 2,
            "log_ml": -0.1 * t,
            "resampled": False,
            "ancestors": None,
        }
        for t in (1, 2, 3)
    ]
    return SMCRecord(n_particles=3, run_id="r", steps=steps)


def test_ess_figure_plots_the_recorded_series():
    record = _record()
    fig = ess_log_ml_figure(record)
    assert isinstance(fig, Figure)
    ess_line = fig.axes[0].get_lines()[0]
    assert list(ess_line.get_ydata()) == [s["ess"] for s in record.steps]
    log_ml = [s["log_ml"] for s in record.steps]
    assert list(fig.axes[1].get_lines()[0].get_ydata()) == pytest.approx(log_ml)


def test_weight_histogram_counts_every_particle():
    fig = weight_histogram(_record(), step=0)
    counts = sum(p.get_height() for p in fig.axes[0].patches)
    assert counts == 3
    w = np.exp([0.0, -1.0]) / np.exp([0.0, -1.0]).sum()
    assert fig.axes[0].get_xlim()[1] >= w.max()
    with pytest.raises(ValueError, match="outside"):
        weight_histogram(_record(), step=5)


@pytest.mark.parametrize(
    ("contents", "log_weights", "match"),
    [([], [], "step 2 has no particles"), (["a", "b"], [0.0, math.nan], "step 2 has a NaN")],
)
def test_weight_histogram_of_an_empty_or_nan_step_names_the_problem(contents, log_weights, match):
    # numpy's "zero-size array" / matplotlib's "range of [0, nan]" escaped before
    record = _record()
    n = len(contents)
    for entry in record.steps:
        entry.update(
            contents=contents,
            log_weights=log_weights,
            weight_increments=[0.0] * n,
            finished=[False] * n,
        )
    record.n_particles = n
    with pytest.raises(ValueError, match=match):
        weight_histogram(record, step=1)
