"""A small results store for the browser tests of the eval views: ToyLM runs, no real model."""

from __future__ import annotations

from pathlib import Path

from genlm_lab.backend import ToyLM
from genlm_lab.control import PythonRegex
from genlm_lab.eval import Domain, Method, ResultsStore, run_evaluation, store_report_html
from genlm_lab.eval.domains.pattern_matching import PatternMatchingDataset, PatternMatchingEvaluator


class _Toy(Domain):
    name = "toy"
    eos = (b"<eos>",)

    def prompt(self, instance):
        return ""

    def constraint(self, instance):
        return PythonRegex(instance.pattern)


async def toy_store(path: Path) -> ResultsStore:
    """Two methods on three patterns (one no particle can satisfy) into a new store."""
    lm = ToyLM([b"a", b"b", b"ab", b"c", b"<eos>"], seed=3, eos=b"<eos>")
    domain = _Toy(PatternMatchingDataset(["a+b", "(ab)+", "z"]), PatternMatchingEvaluator())
    store = ResultsStore(path)
    for kind in ("smc", "awrs_smc"):
        method = Method(kind=kind, n_particles=3, max_tokens=4)
        await run_evaluation(
            domain.dataset, method.adaptor(domain, lm), domain.evaluator, store=store, domain="toy"
        )
    return store


async def toy_report(folder: Path) -> tuple[Path, int]:
    """`store_report_html` of `toy_store` written to folder/report.html, and its last run's id."""
    store = await toy_store(folder / "r.sqlite")
    with store:
        path = folder / "report.html"
        path.write_text(store_report_html(store), encoding="utf-8")
        return path, int(store.runs_frame()["run_id"].iloc[-1])
