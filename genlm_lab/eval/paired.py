"""`compare(store, a, b)`: two methods (or two models) on the instances both ran, paired.

Two methods run on the same instances should be compared instance by
instance: the instances' difficulty varies far more than the methods do, and
pairing removes it. For each instance both sides ran (replicates averaged
first) d = accuracy(a) - accuracy(b); `compare` reports

- the mean of d with an interval that holds at any n (`stats.paired_interval`:
  the range of the mean difference over exact Clopper-Pearson intervals for
  the share of pairs that differ and for the share of those a wins; it lies
  in [-1, 1] and excludes 0 exactly when McNemar's exact test rejects);
- the exact two-sided sign-flip permutation test of "a and b are
  exchangeable" (`stats.sign_flip_test`); with 0/1 scores it is McNemar's
  exact test on the discordant pairs;
- the minimum detectable effect at this n (`stats.detectable_difference`):
  the smallest difference the exact test at `alpha` detects with probability
  `power` when each pair differs by +1 or -1. It depends on n alone, so the
  same number of pairs reads the same everywhere, and it is NaN,
  "unsizeable", when not even a difference of 1 (the largest possible) is
  detectable: at alpha 0.05, five pairs or fewer. A non-significant result
  says little about effects smaller than it.

Accuracies are sums of weights, so two methods that are equally right can
differ in the last bits (ten responses of weight 0.1 against one of weight
1.0: 0.9999999999999999 against 1.0). A difference within `tie_tolerance`
(1e-9 by default) is a tie: it counts for neither side, in the test and in
the interval.

Several comparisons made at once inflate the chance of one false positive:
`pairwise` compares many pairs and adds Holm-adjusted p-values.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from itertools import combinations
from typing import Any

import numpy as np

from genlm_lab.eval.identity import UNKNOWN_MODEL
from genlm_lab.eval.stats import (
    TIE_TOLERANCE,
    detectable_difference,
    paired_interval,
    sign_flip_test,
    sign_test,
)
from genlm_lab.eval.wording import mde_text, plural

__all__ = ["TIE_TOLERANCE", "Comparison", "compare", "holm", "pairwise", "sign_test"]

_DIMENSIONS = ("model", "method", "domain")


@dataclass(frozen=True)
class Comparison:
    """The result of `compare`: a minus b, paired by instance.

    Attributes:
        a, b: labels of the two sides ("method @ model").
        n: instances both ran (the pairs).
        mean_a, mean_b: mean weighted accuracy of each side on those instances.
        diff: mean of a - b; ci_low, ci_high: its interval (`interval` names the method).
        n_a_better, n_b_better, n_ties: instances where a scored higher, lower, the same
            (the same: within `tie_tolerance`).
        p_value: two-sided sign-flip permutation test (McNemar's exact test for 0/1 scores).
        test: which test p_value is from.
        mde: the minimum detectable effect at this n (alpha, power below); NaN: unsizeable.
        ci, alpha, power: the levels used.
        tie_tolerance: differences at most this large counted as ties.
        interval: the method of the interval (a key of `stats.PAIRED_METHODS`).
    """

    a: str
    b: str
    n: int
    mean_a: float
    mean_b: float
    diff: float
    ci_low: float
    ci_high: float
    n_a_better: int
    n_b_better: int
    n_ties: int
    p_value: float
    test: str
    mde: float
    ci: float = 0.95
    alpha: float = 0.05
    power: float = 0.8
    tie_tolerance: float = TIE_TOLERANCE
    interval: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The fields as a dict (JSON-able)."""
        return asdict(self)

    def summary(self) -> str:
        """One sentence a reader can act on."""
        if self.n == 0:
            return f"{self.a} vs {self.b}: no instance ran by both"
        verdict = (
            f"significant at {self.alpha:g}"
            if self.p_value <= self.alpha
            else f"not significant at {self.alpha:g}"
        )
        return (
            f"{self.a} - {self.b}: {self.diff:+.3f} "
            f"({self.ci:.0%} CI [{self.ci_low:+.3f}, {self.ci_high:+.3f}]) on "
            f"{plural(self.n, 'instance')}; "
            f"a better on {self.n_a_better}, b on {self.n_b_better}, "
            f"{plural(self.n_ties, 'tie')}; "
            f"{self.test} p = {self.p_value:.3g} ({verdict}); "
            f"smallest effect detectable at this n: {mde_text(self.mde, self.n)}"
        )

    def __str__(self) -> str:
        return self.summary()


def _select(runs: Any, side: Any, common: dict) -> tuple[Any, str]:
    """The runs one side names (a method or model name, or a dict of model/method/domain)."""
    if isinstance(side, str):
        hits = [d for d in ("method", "model") if (runs[d] == side).any()]
        if not hits:
            raise ValueError(
                f"{side!r} is neither a method ({', '.join(sorted(runs['method'].unique()))}) "
                f"nor a model ({', '.join(sorted(runs['model'].unique()))}) of this store"
            )
        if len(hits) == 2:
            raise ValueError(f"{side!r} names both a method and a model: pass a dict")
        side = {hits[0]: side}
    where = {**common, **dict(side)}
    unknown = set(where) - set(_DIMENSIONS)
    if unknown:
        raise ValueError(f"select runs by {', '.join(_DIMENSIONS)}; got {sorted(unknown)}")
    mask = np.ones(len(runs), dtype=bool)
    for key, value in where.items():
        mask &= (runs[key] == value).to_numpy()
    chosen = runs[mask]
    for dim in ("model", "method"):
        values = sorted(chosen[dim].unique())
        if len(values) > 1:
            raise ValueError(
                f"{where} matches runs of {len(values)} {dim}s ({', '.join(values)}): "
                f"say which, e.g. {{**{where!r}, {dim!r}: {values[0]!r}}}"
            )
    if chosen.empty:
        raise ValueError(f"no runs match {where}")
    label = f"{chosen['method'].iloc[0]} @ {chosen['model'].iloc[0]}"
    return chosen, label


def _per_instance(runs: Any) -> Any:
    ok = runs[runs["status"] != "error"]
    return ok.groupby(["domain", "instance_id"])["weighted_accuracy"].mean()


def compare(
    store: Any,
    a: str | dict,
    b: str | dict,
    *,
    ci: float = 0.95,
    alpha: float = 0.05,
    power: float = 0.8,
    n_flips: int = 20000,
    seed: int | None = 0,
    tie_tolerance: float = TIE_TOLERANCE,
    **common: Any,
) -> Comparison:
    """Compare two methods or two models on the instances both ran, paired by instance.

    Args:
        store: a `ResultsStore`, or a runs DataFrame (`runs_frame()`).
        a: a method or model name, or a dict with some of model, method, domain.
        b: the other side, in the same form as `a`.
        ci: coverage of the interval of the difference.
        alpha: the test level of the verdict and of the minimum detectable effect.
        power: the power of the minimum detectable effect.
        n_flips: sign vectors sampled when the test's distribution is too large to
            enumerate (many distinct fractional differences); 0/1 scores never need it.
        seed: seeds that sampling.
        tie_tolerance: per-instance differences at most this large are ties (float
            noise of sums of weights); 0 compares exactly.
        **common: filters applied to both sides, e.g. `model="tiny-random"` or `domain="json_schema"`.

    Returns:
        A `Comparison` (a - b); `print` it for a one-line summary.

    Raises:
        ValueError: if a side matches no runs, or runs of several models or methods.
    """
    runs = store.runs_frame() if hasattr(store, "runs_frame") else store
    if "model" not in runs:
        runs = runs.assign(model=UNKNOWN_MODEL)
    rows_a, label_a = _select(runs, a, common)
    rows_b, label_b = _select(runs, b, common)
    pa, pb = _per_instance(rows_a), _per_instance(rows_b)
    both = pa.index.intersection(pb.index)
    xa, xb = pa.loc[both].to_numpy(float), pb.loc[both].to_numpy(float)
    d = xa - xb
    d[np.abs(d) <= tie_tolerance] = 0.0  # float noise is a tie, not a win
    n = len(d)
    if n:
        diff, lo, hi, interval = paired_interval(d, ci=ci, tolerance=tie_tolerance)
        p_value, exact = sign_flip_test(d, n_flips=n_flips, seed=seed)
    else:
        diff = lo = hi = math.nan
        interval, p_value, exact = "", 1.0, True
    both_sides = np.concatenate([xa, xb])
    near = np.minimum(np.abs(both_sides), np.abs(both_sides - 1.0))
    binary = bool(n) and bool((near <= tie_tolerance).all())
    plus, minus = int((d > 0).sum()), int((d < 0).sum())
    return Comparison(
        a=label_a,
        b=label_b,
        n=n,
        mean_a=float(xa.mean()) if n else math.nan,
        mean_b=float(xb.mean()) if n else math.nan,
        diff=float(diff),
        ci_low=float(lo),
        ci_high=float(hi),
        n_a_better=plus,
        n_b_better=minus,
        n_ties=n - plus - minus,
        p_value=p_value,
        test=_test_name(binary, exact, n_flips),
        mde=detectable_difference(n, alpha, power),
        ci=ci,
        alpha=alpha,
        power=power,
        tie_tolerance=tie_tolerance,
        interval=interval,
    )


def _test_name(binary: bool, exact: bool, n_flips: int) -> str:
    if binary:
        return "McNemar exact"
    return "sign-flip (exact)" if exact else f"sign-flip (Monte Carlo, {n_flips} flips)"


def holm(p_values: list[float]) -> list[float]:
    """Holm-adjusted p-values (step-down, family-wise error control), in the input order."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def pairwise(store: Any, **kwargs: Any) -> Any:
    """Every pair of (model, method) rows on a domain that differ in the method or in the model.

    Returns:
        A DataFrame: domain, a, b, n, diff, ci_low, ci_high, p_value, p_holm
        (Holm-adjusted over all the pairs in the table), mde, test, interval.
        `kwargs` go to `compare`.
    """
    import pandas as pd

    runs = store.runs_frame() if hasattr(store, "runs_frame") else store
    if "model" not in runs:
        runs = runs.assign(model=UNKNOWN_MODEL)
    rows = []
    for domain, group in runs.groupby("domain", sort=True):
        cells = sorted({(m, k) for m, k in zip(group["model"], group["method"], strict=True)})
        for (ma, ka), (mb, kb) in combinations(cells, 2):
            if ma != mb and ka != kb:
                continue
            c = compare(
                group,
                {"model": ma, "method": ka},
                {"model": mb, "method": kb},
                **kwargs,
            )
            rows.append({"domain": domain, **c.to_dict()})
    columns = [
        "domain",
        "a",
        "b",
        "n",
        "diff",
        "ci_low",
        "ci_high",
        "p_value",
        "mde",
        "test",
        "interval",
    ]
    frame = pd.DataFrame(rows)
    if frame.empty:
        return pd.DataFrame(columns=[*columns, "p_holm"])
    frame = frame[columns]
    frame.insert(8, "p_holm", holm(frame["p_value"].tolist()))
    return frame
