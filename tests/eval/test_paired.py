"""compare (genlm_lab.eval.paired): paired differences against scipy, interval coverage over seeds, the detectable effect."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from genlm_lab.eval.paired import compare, holm, pairwise, sign_test
from genlm_lab.eval.stats import detectable_difference, paired_interval


def _runs(scores_a, scores_b, domain="d", models=("m", "m"), methods=("x", "y")):
    """A runs table: side a and side b scored on the same instances."""
    rows = []
    for side, scores in enumerate((scores_a, scores_b)):
        for i, s in enumerate(scores):
            rows.append(
                {
                    "model": models[side],
                    "method": methods[side],
                    "domain": domain,
                    "instance_id": str(i),
                    "status": "finished",
                    "weighted_accuracy": float(s),
                    "runtime_seconds": 1.0,
                    "lm_requests": 1,
                }
            )
    return pd.DataFrame(rows)


@pytest.mark.parametrize("n", [0, 1, 5, 12, 40, 301])
def test_sign_test_equals_scipys_exact_binomial_test(n):
    got = [sign_test(k, n - k) for k in range(n + 1)]
    expected = [stats.binomtest(k, n, 0.5).pvalue if n else 1.0 for k in range(n + 1)]
    assert got == pytest.approx(expected, rel=1e-9, abs=1e-300)


def test_binary_scores_give_mcnemars_exact_test_on_the_discordant_pairs():
    rng = np.random.default_rng(0)
    a = (rng.random(80) < 0.7).astype(float)
    b = (rng.random(80) < 0.5).astype(float)
    c = compare(_runs(a, b), "x", "y")
    only_a, only_b = int(((a == 1) & (b == 0)).sum()), int(((a == 0) & (b == 1)).sum())
    assert c.test == "McNemar exact"
    assert (c.n_a_better, c.n_b_better, c.n) == (only_a, only_b, 80)
    assert c.p_value == pytest.approx(stats.binomtest(only_a, only_a + only_b).pvalue)
    assert c.diff == pytest.approx(a.mean() - b.mean())


def test_the_interval_and_the_test_are_the_stated_ones_on_the_paired_differences():
    rng = np.random.default_rng(1)
    a = rng.beta(4, 2, size=12)
    b = np.clip(a - 0.1 + rng.normal(0, 0.1, size=12), 0, 1)
    c = compare(_runs(a, b), "x", "y")
    iv = paired_interval(a - b)
    assert (c.diff, c.ci_low, c.ci_high) == pytest.approx((iv.estimate, iv.low, iv.high))
    assert c.interval == iv.method == "Clopper-Pearson range, fractional parts"
    assert c.test == "sign-flip (exact)"
    ref = stats.permutation_test((a, b), lambda x, y: np.mean(x - y), permutation_type="samples",
                                 n_resamples=np.inf)  # fmt: skip
    assert c.p_value == pytest.approx(ref.pvalue, rel=1e-9)


@pytest.mark.parametrize("n", [1, 2])
def test_one_or_two_pairs_give_a_wide_interval_and_an_exact_p(n):
    for a, b in (([1] * n, [0] * n), ([1] * n, [1] * n), ([1, 0][:n], [0, 1][:n])):
        c = compare(_runs(a, b), "x", "y")
        assert c.ci_low < 0 < c.ci_high or c.ci_low < c.diff < c.ci_high, c
        assert c.ci_high - c.ci_low > 0.9 and -1 <= c.ci_low and c.ci_high <= 1
        plus, minus = c.n_a_better, c.n_b_better
        assert c.p_value == pytest.approx(
            stats.binomtest(plus, plus + minus).pvalue if plus + minus else 1
        )
        assert math.isnan(c.mde) and "unsizeable" in c.summary()


@pytest.mark.slow
@pytest.mark.parametrize("effect", [0.0, 0.15])
def test_the_interval_covers_the_true_difference_at_its_nominal_rate(effect):
    n_seeds, n = 300, 40
    covered, widths = 0, []
    for seed in range(n_seeds):
        rng = np.random.default_rng(seed)
        base = rng.random(n)  # instance difficulty, shared by both sides
        a = (rng.random(n) < np.clip(base + effect, 0, 1)).astype(float)
        b = (rng.random(n) < base).astype(float)
        truth = np.mean(np.clip(base + effect, 0, 1) - base)  # E[a - b | these instances]
        c = compare(_runs(a, b), "x", "y")
        covered += c.ci_low <= truth <= c.ci_high
        widths.append(c.ci_high - c.ci_low)
    # 95% nominal, and at least that (the range over exact intervals); 300 seeds: sd 1.3%.
    assert covered / n_seeds >= 0.95
    assert np.mean(widths) < 0.55  # and not by being uselessly wide (the range is 2)


def test_the_minimum_detectable_effect_is_the_exact_tests_at_this_n():
    for n in (6, 12, 50):
        a, b = [1] * n, [0] * (n // 2) + [1] * (n - n // 2)
        c = compare(_runs(a, b), "x", "y")
        assert c.mde == detectable_difference(n) and 0 < c.mde <= 1
        assert c.summary().endswith(f"smallest effect detectable at this n: {c.mde:.3f}")
    c = compare(_runs([1, 0, 1, 1], [0, 0, 1, 0]), "x", "y", alpha=0.2, power=0.5)
    assert c.mde == detectable_difference(4, 0.2, 0.5) < 1  # 4-0 has p = 1/8: sizeable at 0.2


def test_only_instances_both_sides_ran_are_paired_and_errors_are_left_out():
    runs = _runs([1, 1, 0, 1], [0, 1, 0])
    runs.loc[(runs["method"] == "x") & (runs["instance_id"] == "0"), "status"] = "error"
    c = compare(runs, "x", "y")
    assert c.n == 2  # instance 3: b never ran it; instance 0: a failed
    assert (c.mean_a, c.mean_b) == (0.5, 0.5)


def test_models_are_compared_like_methods_and_ambiguity_is_refused():
    runs = pd.concat(
        [
            _runs([1, 1, 1], [0, 0, 1], models=("big", "small"), methods=("smc", "smc")),
            _runs([1, 0, 1], [0, 0, 0], models=("big", "small"), methods=("lcd", "lcd")),
        ]
    )
    c = compare(runs, "big", "small", method="smc")
    assert c.a == "smc @ big" and c.diff == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="2 methods"):
        compare(runs, "big", "small")
    with pytest.raises(ValueError, match="neither a method"):
        compare(runs, "nope", "small")


def test_holm_equals_its_definition_and_pairwise_applies_it():
    p = [0.01, 0.04, 0.03, 0.2]
    order = np.argsort(p)
    expected = np.maximum.accumulate([min(1, (len(p) - r) * p[i]) for r, i in enumerate(order)])
    assert holm(p) == pytest.approx(list(expected[np.argsort(order)]))
    runs = pd.concat(
        [
            _runs([1, 1, 1, 0], [0, 0, 1, 0], models=("big", "small"), methods=("smc", "smc")),
            _runs([1, 0, 1, 1], [0, 0, 0, 1], models=("big", "small"), methods=("lcd", "lcd")),
        ]
    )
    table = pairwise(runs)
    assert len(table) == 4  # two model pairs, two method pairs; no diagonal pairs
    assert table["p_holm"].tolist() == pytest.approx(holm(table["p_value"].tolist()))


def test_the_detectable_effect_never_exceeds_one_and_reads_the_same_for_the_same_n():
    two = [
        compare(_runs([1, 1], [0, 0], domain=dom), "x", "y")
        for dom in ("pattern_matching", "json_schema")
    ]
    noisy = compare(_runs([1, sum([0.1] * 10)], [0, 0]), "x", "y")  # +1 and +0.9999999999999999
    texts = {c.summary().split("smallest")[1] for c in (*two, noisy)}
    assert texts == {" effect detectable at this n: unsizeable (2 pairs cannot detect even a "
                     "difference of 1)"}  # fmt: skip
    ties = compare(_runs([1, 0, 1, 1] * 3, [1, 0, 1, 1] * 3), "x", "y")
    spread = compare(_runs([1, 0, 1, 1] * 3, [0, 0, 1, 0] * 3), "x", "y")
    shifted = compare(_runs([1.0] * 12, [0.0] * 12), "x", "y")
    assert ties.mde == spread.mde == shifted.mde == detectable_difference(12) <= 1
    for n in range(1, 60):
        mde = compare(_runs([1] * n, [0] * n), "x", "y").mde
        assert math.isnan(mde) or 0 < mde <= 1


def test_equal_accuracies_reached_by_different_sums_are_ties():
    ten_tenths = sum([0.1] * 10)  # ten responses of weight 0.1, all right
    assert ten_tenths != 1.0  # the float noise this test is about
    runs = _runs([ten_tenths] * 12, [1.0] * 12)
    c = compare(runs, "x", "y")
    assert (c.n_a_better, c.n_b_better, c.n_ties) == (0, 0, 12)
    assert c.p_value == 1.0 and "not significant" in c.summary()
    assert c.diff == 0.0 and c.mde == detectable_difference(12)  # never 3e-17 from the noise
    assert c.test == "McNemar exact"  # 0.9999999999999999 is a 1
    assert (c.ci_low, c.ci_high) == pytest.approx((-c.ci_high, -c.ci_low))  # ties: about 0
    exact = compare(runs, "x", "y", tie_tolerance=0.0)  # without the tolerance: a false discovery
    assert exact.n_b_better == 12 and exact.p_value < 0.001


def test_one_instance_off_by_float_noise_is_a_tie_not_a_win():
    a = [0.3, 0.1 + 0.2] + [1.0] * 18  # 0.1 + 0.2 = 0.30000000000000004
    b = [0.3, 0.3] + [1.0] * 18
    c = compare(_runs(a, b), "x", "y")
    assert (c.n_a_better, c.n_b_better, c.n_ties) == (0, 0, 20)
    assert c.p_value == 1.0 and c.diff == 0.0
    assert f"smallest effect detectable at this n: {detectable_difference(20):.3f}" in c.summary()
    real = compare(_runs([0.5, *a[1:]], b), "x", "y")  # a real difference still counts
    assert real.n_a_better == 1 and real.n_ties == 19


def test_counts_in_the_summary_take_their_plural():
    one = compare(_runs([1], [0]), "x", "y").summary()
    assert "on 1 instance;" in one and "0 ties" in one
    one_tie = compare(_runs([1, 0], [1, 1]), "x", "y").summary()
    assert "on 2 instances;" in one_tie and "1 tie;" in one_tie
