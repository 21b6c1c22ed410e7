"""Playground runs in a `ResultsStore`: saved beside evaluation runs, reopened with their choices.

A saved run is one row of the store's `runs` table in the domain
"playground": its method is the Playground's choices (so two runs with the
same choices and model share a key, and a changed prompt makes a new one),
its model the loaded model's identity, its output the finished sequences
with their weights, and its record the whole `SMCRecord`, so the reopened
Playground draws the same particles, alarms and profile.
"""

from __future__ import annotations

import contextlib
import json
import math
import time
from collections.abc import Iterator
from typing import Any

from genlm_lab.control import Sequences
from genlm_lab.eval.core import ModelOutput, ModelResponse
from genlm_lab.eval.identity import identity_hash, model_identity
from genlm_lab.eval.store import ResultsStore
from genlm_lab.playground.config import PlaygroundConfig

__all__ = ["DOMAIN", "load_run", "open_store", "save_run"]

#: The store domain Playground runs are filed under.
DOMAIN = "playground"


@contextlib.contextmanager
def open_store(store: ResultsStore | Any) -> Iterator[ResultsStore]:
    """A `ResultsStore` as given, or one opened from a path (and closed after)."""
    if isinstance(store, ResultsStore):
        yield store
        return
    opened = ResultsStore(store)
    try:
        yield opened
    finally:
        opened.close()


def save_run(
    store: ResultsStore,
    config: PlaygroundConfig,
    sequences: Sequences,
    lm: Any,
    runtime_seconds: float | None = None,
) -> int:
    """File one finished run; returns its run_id (a run with the same key is replaced).

    Args:
        store: the results store.
        config: the choices the run was made with.
        sequences: what `SMC` returned (its `.record` is stored whole).
        lm: the loaded model (its identity decides, with the choices, the run's key).
        runtime_seconds: the run's wall time, if known.
    """
    settings = config.to_dict()
    method_hash = store.put_method(f"playground:{config.method}", settings)
    identity = model_identity(lm, name=config.model)
    model_hash = store.put_model(identity)
    output = ModelOutput(
        responses=[
            ModelResponse(response=text, weight=float(weight))
            for text, weight in sequences.decoded_posterior.items()
        ]
    )
    record = sequences.record
    status = (record.final or {}).get("status", "finished")
    run_key = identity_hash({"playground": settings, "model": model_hash})
    run_id = store.write_run(
        {
            "run_key": run_key,
            "domain": DOMAIN,
            "instance_id": run_key,
            "method_hash": method_hash,
            "model_hash": model_hash,
            "seed": config.seed,
            "replicate": 0,
            "status": status,
            "runtime_seconds": runtime_seconds,
            "output": output.model_dump_json(),
            "record": record.to_json(),
            "finished_at": time.time(),
        },
        [
            {"response": r.response, "weight": r.weight, "score": None}
            for r in output.responses
            if math.isfinite(r.weight)
        ],
        replace=True,
    )
    if run_id is None:  # pragma: no cover - replace=True always writes
        raise RuntimeError("the store kept another run under this key")
    return run_id


def load_run(store: ResultsStore, run_id: int) -> tuple[PlaygroundConfig, Any]:
    """The choices and the `SMCRecord` of a saved Playground run.

    Raises:
        KeyError: no run with that id.
        ValueError: the run is not a Playground run.
    """
    run = store.run(run_id)
    if run.get("domain") != DOMAIN:
        raise ValueError(
            f"run {run_id} is a {run.get('domain')!r} run, not a Playground run; "
            "open it with ResultsView"
        )
    methods = store.to_pandas("methods")
    config = methods.loc[methods["method_hash"] == run["method_hash"], "config"].iloc[0]
    settings = json.loads(config) if isinstance(config, str) else dict(config)
    return PlaygroundConfig.from_dict(settings), store.record(run_id)
