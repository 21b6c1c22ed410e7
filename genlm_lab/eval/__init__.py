"""Evaluation: methods x domains, run concurrently, stored in SQLite, viewed live.

genlm-eval's API (`Instance`, `Dataset`, `Evaluator`, `EvaluationResult`,
`ModelOutput`, `ModelResponse`, `run_evaluation`) with three additions:
`run_evaluation` runs instances and replicates concurrently on one backend
(results independent of the schedule) and stores them in a `ResultsStore`
(one SQLite file: resume after a crash, several writers, `to_pandas()`);
`Method` configs (base, lcd, sample_rerank, smc, twisted_smc, awrs_smc) turn a `Domain`
(dataset + checker + constraint) into model adaptors; `summarize` gives
weighted accuracy with Wilson score intervals per model, method and domain;
`compare` tests two methods or models paired by instance (exact sign-flip
test, an interval for the difference, the minimum detectable effect; the
methods are `genlm_lab.eval.stats`'s). A stored run is
reused only when its model, method, instance (as the domain builds it),
evaluator, replicate and seed are all the same (`genlm_lab.eval.identity`).
`genlm_lab.eval.presets` names a paper's grid of methods (`awrs-colm-2025`), and
`genlm_lab.eval.paper` runs it on the five domains into one store and its table.

Names load on first use (PEP 562), so `genlm-lab` starts without importing
torch for commands that do not need it.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what the lazy names below resolve to, for type checkers and the API docs
    from genlm_lab.eval.cluster import ModelSpec, RayCluster
    from genlm_lab.eval.core import (
        Dataset,
        EvaluationResult,
        Evaluator,
        Instance,
        ModelAdaptor,
        ModelOutput,
        ModelResponse,
    )
    from genlm_lab.eval.domain import Domain
    from genlm_lab.eval.domains import DOMAINS, load_domain
    from genlm_lab.eval.identity import model_identity, run_keys
    from genlm_lab.eval.methods import KINDS, Method, MethodAdaptor
    from genlm_lab.eval.paired import Comparison, compare, pairwise
    from genlm_lab.eval.plot import plot_accuracy_cost
    from genlm_lab.eval.report import store_report_html
    from genlm_lab.eval.runner import parse_shard, run_evaluation
    from genlm_lab.eval.stats import accuracy_interval, bootstrap_ci
    from genlm_lab.eval.store import TABLES, ResultsStore, config_hash
    from genlm_lab.eval.summary import summarize, summary_markdown, summary_table
    from genlm_lab.eval.task import task_seed
    from genlm_lab.eval.view import ResultsView, results_data

_HOME = {
    "Dataset": "core",
    "EvaluationResult": "core",
    "Evaluator": "core",
    "Instance": "core",
    "ModelAdaptor": "core",
    "ModelOutput": "core",
    "ModelResponse": "core",
    "Comparison": "paired",
    "compare": "paired",
    "pairwise": "paired",
    "model_identity": "identity",
    "ModelSpec": "cluster",
    "RayCluster": "cluster",
    "plot_accuracy_cost": "plot",
    "run_keys": "identity",
    "summary_markdown": "summary",
    "summary_table": "summary",
    "Domain": "domain",
    "DOMAINS": "domains",
    "load_domain": "domains",
    "KINDS": "methods",
    "Method": "methods",
    "MethodAdaptor": "methods",
    "parse_shard": "runner",
    "run_evaluation": "runner",
    "task_seed": "task",
    "accuracy_interval": "stats",
    "bootstrap_ci": "stats",
    "TABLES": "store",
    "ResultsStore": "store",
    "config_hash": "store",
    "summarize": "summary",
    "ResultsView": "view",
    "store_report_html": "report",
    "results_data": "view",
}

__all__ = [
    "DOMAINS",
    "KINDS",
    "TABLES",
    "Comparison",
    "Dataset",
    "Domain",
    "EvaluationResult",
    "Evaluator",
    "Instance",
    "Method",
    "MethodAdaptor",
    "ModelAdaptor",
    "ModelOutput",
    "ModelResponse",
    "ModelSpec",
    "RayCluster",
    "ResultsStore",
    "ResultsView",
    "accuracy_interval",
    "bootstrap_ci",
    "compare",
    "config_hash",
    "load_domain",
    "model_identity",
    "pairwise",
    "parse_shard",
    "plot_accuracy_cost",
    "results_data",
    "run_evaluation",
    "run_keys",
    "store_report_html",
    "summarize",
    "summary_markdown",
    "summary_table",
    "task_seed",
]


def __getattr__(name: str) -> Any:
    if name in _HOME:
        value = getattr(import_module(f"genlm_lab.eval.{_HOME[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'genlm_lab.eval' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
