"""smc_steer: resampling without replacement (inclusion probabilities, unbiased weights) and
the parent of every candidate in its record."""

import math

import numpy as np
import pytest

from genlm_lab.smc import LogCategorical, Model, SMCRecord, smc_steer
from genlm_lab.smc.examples import Coins
from genlm_lab.smc.steer import resample_without_replacement


def test_inclusion_probabilities_are_min_one_c_w_and_weights_unbiased():
    rng = np.random.default_rng(0)
    log_w = np.log(np.array([0.4, 0.2, 0.1, 0.1, 0.08, 0.07, 0.05]))
    n, m, runs = 3, log_w.size, 3000
    w = np.exp(log_w) / np.exp(log_w).sum()
    # c solves sum(min(1, c w)) = n: 0.4 is kept surely, then c = 2 / 0.6.
    c = 2 / 0.6
    want = np.minimum(1.0, c * w)
    kept_counts = np.zeros(m)
    totals = []
    for _ in range(runs):
        kept, new = resample_without_replacement(log_w, n, rng)
        assert len(set(kept.tolist())) == len(kept) == n
        kept_counts[kept] += 1
        totals.append(np.exp(new).sum())
    assert kept_counts / runs == pytest.approx(want, abs=0.03)
    # The mean weight over the kept n estimates the mean over all m candidates.
    assert np.mean(totals) / n == pytest.approx(np.exp(log_w).sum() / m, rel=0.03)


def test_few_positive_candidates_are_all_kept_with_the_same_mean():
    log_w = np.array([0.0, -math.inf, math.log(3.0), -math.inf])
    kept, new = resample_without_replacement(log_w, 3, np.random.default_rng(0))
    assert sorted(kept.tolist()) == [0, 2]
    assert np.exp(new).mean() == pytest.approx(np.exp(log_w).sum() / 4)


@pytest.mark.parametrize(
    ("log_w", "n"),
    [
        ([0.0, 0.0, -1e300, -1e300], 3),
        ([0.0, -800.0, -800.0, -800.0, -800.0], 2),
        ([0.0, -800.0, -800.0, -800.0, -800.0], 3),
        ([-5.0, -805.0, -805.0, -1600.0], 2),
    ],
)
def test_weights_whose_ratios_underflow_keep_n_with_exact_weights(log_w, n):
    # Candidates hundreds of nats below the best have normalised weight 0.0 in
    # float64, yet c * w is still defined; the scheme must keep n of them.
    log_w = np.array(log_w)
    desc = np.sort(log_w)[::-1]
    k = int(np.sum(desc - desc[0] > -700))  # the ones that do not underflow, kept surely here
    rest = desc[k:]
    # Exact 1/c for the rest: sum(min(1, c w)) = n - k over them, all < 1.
    inv_c = np.log(np.exp(rest - rest[0]).sum()) + rest[0] - math.log(n - k)
    for seed in range(20):
        kept, new = resample_without_replacement(log_w, n, np.random.default_rng(seed))
        assert len(set(kept.tolist())) == len(kept) == n
        assert np.all(np.isfinite(new))
        scale = math.log(n / log_w.size)
        for i, w in zip(kept, new, strict=True):
            expected = log_w[i] + scale if log_w[i] - desc[0] > -700 else inv_c + scale
            assert w == pytest.approx(expected, rel=1e-12)


class _Path(Model):
    """Picks one of 30 labels per step; its text is the whole path ("4.17.2"), "$" once finished.

    Dies on labels divisible by 7 (but 0), ends on labels divisible by 4 or after five steps.
    """

    logits = np.random.default_rng(5).normal(size=(5, 30))

    def __init__(self) -> None:
        super().__init__()
        self.path: list[int] = []

    async def step(self) -> None:
        label = int(await self.sample(LogCategorical(self.logits[len(self.path)])))
        self.path.append(label)
        self.score(-0.1 * label)
        self.condition(label % 7 != 0 or label == 0)
        if label % 4 == 0 or len(self.path) == 5:
            self.finish()

    def string_for_serialization(self) -> str:
        return ".".join(map(str, self.path)) + ("$" if self.finished else "")


@pytest.mark.parametrize(("n_beam", "seed"), [(1, 0), (2, 1), (3, 2), (4, 3)])
async def test_record_parents_are_the_particles_each_candidate_was_cloned_from(n_beam, seed):
    result = await smc_steer(_Path(), 3, n_beam, seed=seed)
    record = SMCRecord.from_json(result.record.to_json())
    steps, parents = record.steps, record.parents()
    assert parents[0] is None and len(steps) >= 2
    last = steps[-1]
    assert [last["contents"][a] for a in last["ancestors"]] == [
        p.string_for_serialization() for p in result
    ]
    for t in range(1, len(steps)):
        prev, cur = steps[t - 1], steps[t]
        assert sorted(set(parents[t])) == sorted(prev["ancestors"])  # only kept ones have children
        for i, p in enumerate(parents[t]):
            parent, child = prev["contents"][p], cur["contents"][i]
            if prev["finished"][p]:
                assert child == parent
            else:  # one more choice than the parent: the child continues the parent's path
                assert child.rstrip("$").split(".")[:-1] == parent.rstrip("$").split(".")
                assert len(child.rstrip("$").split(".")) == t + 1


async def test_steer_progress_bar_counts_rounds_and_is_silent_when_off(capsys, monkeypatch):
    import tqdm.auto

    made = []

    class Counting(tqdm.auto.tqdm):
        def __init__(self, *args, **kwargs):
            made.append(self)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(tqdm.auto, "tqdm", Counting)
    result = await smc_steer(Coins(), 3, 2, seed=1, progress=False)
    assert made == [] and capsys.readouterr().err == ""
    result = await smc_steer(Coins(), 3, 2, seed=1, progress=True)
    (bar,) = made
    assert bar.n == result.record.final["n_steps"] == len(result.record.steps)
    err = capsys.readouterr().err
    assert "smc_steer" in err and "alive=" in err and "status=finished" in err
