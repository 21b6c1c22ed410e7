"""One evaluation task, an (instance, replicate): its seed, its run, its score, or its stored run.

The local runner (`genlm_lab.eval.runner`) and each Ray replica
(`genlm_lab.eval.cluster`) run a task the same way (`run_task`): under its
own random generator seeded by `task_seed`, so results do not depend on the
schedule, and any exception (in the model or the evaluator) becomes a row
with status "error" and a one-line message instead of stopping the others.
A stored task is reused instead (`reuse_run`), re-scored when asked, or
copied under a new evaluator's key first (`copy_run`).
"""

from __future__ import annotations

import hashlib
import json
import math
import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np

from genlm_lab.eval.core import Evaluator, ModelOutput
from genlm_lab.eval.store import ResultsStore
from genlm_lab.smc import using_rng

__all__ = ["copy_run", "response_rows", "reuse_run", "run_task", "task_seed"]


def task_seed(seed: int, domain: str, instance_id: Any, replicate: int) -> int:
    """The seed of one (instance, replicate): a hash, so it does not depend on order or schedule."""
    text = f"{seed}\x00{domain}\x00{instance_id}\x00{replicate}"
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little") >> 1


def _error_text(stage: str, exc: BaseException) -> str:
    where = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
    at = f" (at {Path(where[0].filename).name}:{where[0].lineno})" if where else ""
    return f"{stage}: {type(exc).__name__}: {exc}{at}"


def _score(
    evaluator: Evaluator, instance: Any, output: ModelOutput
) -> tuple[dict | None, str | None]:
    try:
        result = evaluator.evaluate_ensemble(instance, output)
        if not math.isfinite(float(result["weighted_accuracy"])):
            raise ValueError(f"weighted accuracy {result['weighted_accuracy']} is not finite")
        return result, None
    except Exception as exc:
        return None, _error_text("evaluator", exc)


def response_rows(output: ModelOutput | None, result: dict | None) -> list[dict]:
    """The store's response rows: each response with its weight, score and metadata."""
    if output is None:
        return []
    scored = (result or {}).get("results") or [{} for _ in output.responses]
    return [
        {
            "response": r.response,
            "weight": r.weight,
            "score": s.get("score"),
            "desc": s.get("desc"),
            "metadata": {**(r.metadata or {}), **(s.get("metadata") or {})},
        }
        for r, s in zip(output.responses, scored, strict=True)
    ]


def _record_json(record: Any) -> str | None:
    if record is None:
        return None
    if isinstance(record, str):
        return record
    if isinstance(record, dict):
        return json.dumps(record)
    return record.to_json()


def copy_run(store: ResultsStore, source: dict, run_key: str, evaluator: dict, worker: str) -> dict:
    """A stored output copied under a new evaluator's key (scored next); the source run stays."""
    row = {k: v for k, v in source.items() if k != "run_id"}
    row.update(run_key=run_key, evaluator=evaluator, worker=worker, finished_at=None)
    store.write_run(row, store.responses(source["run_id"]))
    return store.get_run(run_key)


async def run_task(
    model: Any, evaluator: Evaluator, instance: Any, replicate: int, seed: int, out_dir: str | None
) -> tuple[ModelOutput | None, dict | None, dict]:
    """Run the model on one (instance, replicate) under its own generator, and score it.

    Returns:
        (output, result, row): the output (None if the model raised), the evaluator's
        result (None on any error) and the run's row for the store (seed, status,
        error, runtime, record and output as JSON).
    """
    row: dict[str, Any] = {"seed": seed}
    started = time.perf_counter()
    try:
        with using_rng(np.random.default_rng(seed)):
            output = await model(instance, out_dir, replicate=replicate)
        if not isinstance(output, ModelOutput):
            output = ModelOutput.model_validate(output)
    except Exception as exc:
        row.update(status="error", error=_error_text("model", exc))
        row["runtime_seconds"] = time.perf_counter() - started
        return None, None, row
    elapsed = time.perf_counter() - started
    meta = dict(output.metadata or {})
    record = meta.pop("smc_record", None)
    row["lm_requests"] = meta.get("lm_requests")
    output = output.model_copy(update={"metadata": meta or None})
    if output.runtime_seconds is None:
        output.runtime_seconds = elapsed
    row["runtime_seconds"] = output.runtime_seconds
    row["record"] = _record_json(record)
    row["output"] = output.model_dump_json()
    result, error = _score(evaluator, instance, output)
    if error is None:
        status = str(meta.get("status") or "finished")
        row.update(status=status, weighted_accuracy=float(result["weighted_accuracy"]))
    else:
        row.update(status="error", error=error)
    return output, result, row


def reuse_run(
    store: ResultsStore, evaluator: Evaluator, instance: Any, stored: dict, rescore: bool
) -> tuple[dict, ModelOutput | None, dict | None]:
    """A stored run: its output and results, re-scored with `evaluator` when asked."""
    output = None if stored["output"] is None else ModelOutput.model_validate_json(stored["output"])
    row = {k: v for k, v in stored.items() if k not in ("output", "record")}
    if output is None:
        return row, None, None
    if rescore:
        result, error = _score(evaluator, instance, output)
        acc = None if error else float(result["weighted_accuracy"])
        own = str((output.metadata or {}).get("status") or "finished")
        status = "error" if error else own
        store.rescore(stored["run_id"], acc, response_rows(output, result), status, error)
        row.update(weighted_accuracy=acc, status=status, error=error)
        return row, output, result
    responses = store.responses(stored["run_id"])
    result = {
        "weighted_accuracy": stored["weighted_accuracy"],
        "runtime_seconds": stored["runtime_seconds"],
        "results": [
            {"score": r["score"], "desc": r["desc"], "metadata": r["metadata"]} for r in responses
        ],
    }
    return row, output, (result if stored["status"] != "error" else None)
