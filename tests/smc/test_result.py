"""SMCResult and effective_sample_size: exact for weights of any magnitude."""

import math

import numpy as np
import pytest

from genlm_lab.smc import Model, SMCResult, effective_sample_size


class _Fixed(Model):
    def __init__(self, weight: float, text: str) -> None:
        super().__init__()
        self.weight, self.text = weight, text

    def string_for_serialization(self) -> str:
        return self.text


@pytest.mark.parametrize("level", [0.0, -700.0, -1e6, -1e300, 1e300])
def test_equal_weights_at_any_level_give_ess_n_and_uniform_weights(level):
    # log(sum) = -1e300 + log(4) rounds back to -1e300, so normalising by
    # subtracting the log of the total made each of four equal weights read 1.
    result = SMCResult([_Fixed(level, t) for t in "aabc"])
    assert effective_sample_size([level] * 4) == pytest.approx(4.0)
    assert result.ess == pytest.approx(4.0)
    assert result.normalized_weights == pytest.approx(np.full(4, 0.25))
    assert sum(result.posterior.values()) == pytest.approx(1.0)
    assert result.posterior["a"] == pytest.approx(0.5)


@pytest.mark.parametrize("shift", [0.0, -1e6, 1e6])
def test_ess_and_normalised_weights_do_not_depend_on_a_common_shift(shift):
    lw = np.log([0.5, 0.3, 0.2])
    w = np.array([0.5, 0.3, 0.2])
    assert effective_sample_size(lw + shift) == pytest.approx(1 / np.sum(w**2), rel=1e-9)
    result = SMCResult([_Fixed(x + shift, str(i)) for i, x in enumerate(lw)])
    assert result.normalized_weights == pytest.approx(w, rel=1e-9)


def test_ess_of_dead_or_empty_weights_is_zero():
    assert effective_sample_size([-math.inf, -math.inf]) == 0.0
    assert effective_sample_size([]) == 0.0


def test_html_summarises_and_bounds_the_posterior():
    from genlm_lab.util.chart import MAX_ROWS

    lw = np.linspace(0.0, -5.0, 300)
    result = SMCResult([_Fixed(w, f"<t{i}>") for i, w in enumerate(lw)])
    html = result._repr_html_()
    assert "300 particles" in html and f"log_ml {result.log_ml:.4f}" in html
    assert f"ESS {result.ess:.2f}" in html
    assert html.count("<tr>") == 1 + MAX_ROWS and f"… {300 - MAX_ROWS} more" in html
    assert "&lt;t0&gt;" in html and "<t0>" not in html  # the heaviest first, escaped
    assert html.index("&lt;t0&gt;") < html.index("&lt;t1&gt;")
