"""Evaluation: methods x domains, run concurrently, stored in SQLite, viewed live.

genlm-eval's API (`Instance`, `Dataset`, `Evaluator`, `EvaluationResult`,
`ModelOutput`, `ModelResponse`, `run_evaluation`) with three additions:
`run_evaluation` runs instances and replicates concurrently on one backend
(results independent of the schedule) and stores them in a `ResultsStore`
(one SQLite file: resume after a crash, several writers, `to_pandas()`);
`Method` configs (base, lcd, sample_rerank, smc, awrs_smc) turn a `Domain`
(dataset + checker + constraint) into model adaptors; `summarize` gives
weighted accuracy with bootstrap CIs per method and domain.
"""

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
from genlm_lab.eval.methods import KINDS, Method, MethodAdaptor
from genlm_lab.eval.runner import parse_shard, run_evaluation, task_seed
from genlm_lab.eval.stats import bootstrap_ci
from genlm_lab.eval.store import TABLES, ResultsStore, config_hash
from genlm_lab.eval.summary import summarize

__all__ = [
    "DOMAINS",
    "KINDS",
    "TABLES",
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
    "ResultsStore",
    "bootstrap_ci",
    "config_hash",
    "load_domain",
    "parse_shard",
    "run_evaluation",
    "summarize",
    "task_seed",
]
