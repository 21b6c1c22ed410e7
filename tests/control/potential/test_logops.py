"""genlm-control main's power-mean names ("pm5", "p2.5", ...) against the power mean computed
directly on probabilities."""

from __future__ import annotations

import numpy as np
import pytest
from _toys import TablePotential

from genlm_lab.control import Ensemble, convert_to_weighted_logop

#: genlm-control main's thirteen names and the exponents its docs give them.
MAIN_NAMES = {
    "pm5": -5.0,
    "pm2.5": -2.5,
    "p-2": -2.0,
    "pm1.5": -1.5,
    "pm0.5": -0.5,
    "pm0.25": -0.25,
    "p0.25": 0.25,
    "p0.5": 0.5,
    "p1.5": 1.5,
    "p2": 2.0,
    "p2.5": 2.5,
    "p3": 3.0,
    "p5": 5.0,
}


@pytest.mark.parametrize("a", [0.3, 0.5, 0.8])
def test_main_names_are_the_weighted_power_means(a):
    x = np.array([0.7, 0.3, 0.05, 1e-3])
    y = np.array([0.2, 0.6, 0.5, 0.9])
    checked = 0
    for name, p in MAIN_NAMES.items():
        f = convert_to_weighted_logop(name, a)
        direct = (a * x**p + (1 - a) * y**p) ** (1 / p)  # M_p on the probabilities themselves
        np.testing.assert_allclose(np.exp(f(np.log(x), np.log(y))), direct, rtol=1e-12)
        assert f.op == name and f.label == f"{name}(a={a:g})"
        checked += 1
    assert checked == 13


def test_other_spellings_of_the_same_exponent_agree():
    x, y = np.log([0.4, 0.1]), np.log([0.25, 0.5])
    for a, b in [("pm2", "p-2"), ("p1", "sum"), ("pm1", "harmonic"), ("p0", "prod")]:
        np.testing.assert_allclose(
            convert_to_weighted_logop(a, 0.3)(x, y), convert_to_weighted_logop(b, 0.3)(x, y)
        )
    np.testing.assert_allclose(
        convert_to_weighted_logop("pm2.5", 0.3)(x, y), convert_to_weighted_logop(-2.5, 0.3)(x, y)
    )


async def test_an_ensemble_takes_a_main_name():
    p1 = TablePotential(["a", "b"], lambda ctx: np.log([0.7, 0.2, 0.1]))
    p2 = TablePotential(["a", "b"], lambda ctx: np.log([0.3, 0.6, 0.1]))
    ensemble = Ensemble(p1, p2, op="pm5", a=0.5)
    w1, w2 = await p1.complete(["a"]), await p2.complete(["a"])
    direct = np.log((0.5 * np.exp(-5 * w1) + 0.5 * np.exp(-5 * w2)) ** (-1 / 5))
    assert await ensemble.complete(["a"]) == pytest.approx(direct, rel=1e-12)
