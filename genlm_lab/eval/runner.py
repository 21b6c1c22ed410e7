"""`run_evaluation`: genlm-eval's runner, run concurrently and stored in a `ResultsStore`.

genlm-eval awaits one instance after another, so an auto-batching backend
sees one instance's particles at a time. Here every (instance, replicate)
pair is a task, at most `max_concurrency` running at once: their forwards
meet in the backend's batches. Results do not depend on the schedule: each
task gets its own random generator, seeded from (seed, domain, instance_id,
replicate) and bound for that task alone (`genlm_lab.smc`'s per-run
generator is a context variable), so a concurrent run gives the same
outputs as a sequential one wherever the model's log-probs do not depend
on what they were batched with (exactly so for `ToyLM`; float32 batched
matmuls may differ in the last bits).

A task that raises (in the model or in the evaluator) is stored with status
"error" and its message; the other tasks go on; any other run keeps the
status its method gave (an SMC run whose particles all died is "all_dead").
With a store, a run whose key is already stored is not run again (resume
after a crash), unless `overwrite_outputs`; `overwrite_results` re-scores
stored outputs with the given evaluator. The key holds everything that
decides a run's output (see `genlm_lab.eval.store`): another model, an edited
prompt or constraint, another evaluator version make new runs. A model that
cannot be identified (a plain async function as adaptor) is run again each
time unless `reuse_unidentified=True` or `model_id=` names it.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import os
import socket
import time
import traceback
import warnings
from itertools import islice
from pathlib import Path
from typing import Any

import numpy as np

from genlm_lab.eval.core import Dataset, Evaluator, ModelOutput
from genlm_lab.eval.identity import UNKNOWN_MODEL, evaluator_identity, identity_hash, provenance
from genlm_lab.eval.stats import bootstrap_ci
from genlm_lab.eval.store import ResultsStore, config_hash
from genlm_lab.smc import using_rng
from genlm_lab.util import progress_bar

__all__ = ["parse_shard", "run_evaluation", "run_keys", "task_seed"]


def task_seed(seed: int, domain: str, instance_id: Any, replicate: int) -> int:
    """The seed of one (instance, replicate): a hash, so it does not depend on order or schedule."""
    text = f"{seed}\x00{domain}\x00{instance_id}\x00{replicate}"
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little") >> 1


def parse_shard(shard: str | tuple[int, int] | None) -> tuple[int, int] | None:
    """Read "i/n" (or (i, n)) into (i, n) with 0 <= i < n.

    Raises:
        ValueError: if the shard is malformed or out of range.
    """
    if shard is None:
        return None
    if isinstance(shard, str):
        try:
            i_text, n_text = shard.split("/")
            i, n = int(i_text), int(n_text)
        except ValueError:
            raise ValueError(f"shard must look like 'i/n' (e.g. '0/4'), got {shard!r}") from None
    else:
        i, n = (int(v) for v in shard)
    if n < 1 or not 0 <= i < n:
        raise ValueError(f"shard {i}/{n}: need n >= 1 and 0 <= i < n")
    return i, n


def _open_store(store: Any, output_dir: str | None) -> tuple[ResultsStore | None, bool]:
    """The store to use and whether this call opened it (and must close it)."""
    if isinstance(store, ResultsStore):
        return store, False
    if store is not None:
        return ResultsStore(store), True
    if output_dir is None:
        return None, False
    path = Path(output_dir)
    if path.suffix not in (".sqlite", ".db"):
        path = path / "results.sqlite"
    return ResultsStore(path), True


def _method_identity(model: Any, method: Any) -> tuple[str, dict]:
    """(name, config) that identify the model adaptor in the store."""
    if method is None:
        method = getattr(model, "config", None)
    if method is None:
        name = getattr(model, "__qualname__", type(model).__name__)
        return name, {"adaptor": name}
    if isinstance(method, str):
        return method, {"name": method}
    if hasattr(method, "model_dump"):
        config = method.model_dump(mode="json")
        return str(config.get("name") or config.get("kind") or type(method).__name__), config
    config = dict(method)
    return str(config.get("name", "method")), config


def _model_identity(model: Any, model_id: Any, model_name: str | None) -> dict[str, Any]:
    """The model's identity: `model_id` if given, else the adaptor's own, else "unknown"."""
    if isinstance(model_id, str):
        return {"identified": True, "name": model_name or model_id, "id": model_id}
    if isinstance(model_id, dict):
        return {"identified": True, **model_id, "name": model_name or model_id.get("name", "model")}
    own = getattr(model, "model_identity", None)
    if callable(own):
        identity = dict(own())
        if model_name:
            identity["name"] = model_name
        return identity
    adaptor = getattr(model, "__qualname__", type(model).__qualname__)
    return {
        "identified": False,
        "name": model_name or f"{UNKNOWN_MODEL} ({adaptor})",
        "adaptor": adaptor,
    }


def _instance_identity(model: Any, instance: Any) -> dict[str, Any]:
    own = getattr(model, "instance_identity", None)
    if callable(own):
        return own(instance)
    return {"instance": instance.model_dump(mode="json")}


def run_keys(
    method_hash: str,
    model_hash: str,
    instance_hash: str,
    evaluator: dict,
    domain: str,
    replicate: int,
    seed: int,
) -> tuple[str, str]:
    """(run_key, output_key): a run's identity, and the same without the evaluator."""
    output_key = identity_hash(
        {
            "method": method_hash,
            "model": model_hash,
            "instance": instance_hash,
            "domain": domain,
            "replicate": int(replicate),
            "seed": int(seed),
        }
    )
    return identity_hash({"output": output_key, "evaluator": evaluator}), output_key


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


def _response_rows(output: ModelOutput | None, result: dict | None) -> list[dict]:
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


async def run_evaluation(
    dataset: Dataset,
    model: Any,
    evaluator: Evaluator,
    output_dir: str | os.PathLike | None = None,
    n_replicates: int = 1,
    overwrite_results: bool = False,
    overwrite_outputs: bool = False,
    max_instances: float = float("inf"),
    verbosity: int = 0,
    *,
    max_concurrency: int = 8,
    store: ResultsStore | str | os.PathLike | None = None,
    domain: str | None = None,
    method: Any = None,
    seed: int = 0,
    shard: str | tuple[int, int] | None = None,
    on_result: Any = None,
    progress: bool | None = None,
    model_name: str | None = None,
    model_id: str | dict | None = None,
    reuse_unidentified: bool = False,
    cluster: Any = None,
) -> dict[str, Any]:
    """Run `model` on every instance (and replicate) of `dataset` and score it with `evaluator`.

    Args:
        dataset: the instances (genlm-eval `Dataset`, or any iterable of `Instance`s).
        model: an async adaptor, `await model(instance, output_dir, replicate) -> ModelOutput`
            (e.g. `Method.adaptor(domain, llm)`).
        evaluator: scores the responses.
        output_dir: a folder (the store is `output_dir/results.sqlite`) or a
            `.sqlite` file; also passed to the adaptor. None: no store unless `store`.
        n_replicates: runs per instance, each with its own seed.
        overwrite_results: re-score stored outputs.
        overwrite_outputs: run the model again even where an output is stored
            (needs overwrite_results, as in genlm-eval).
        max_instances: evaluate only the first this many instances.
        verbosity: 1 prints one line per finished instance.
        max_concurrency: (instance, replicate) tasks running at once; 1 is sequential.
        store: a `ResultsStore` or a path (wins over output_dir).
        domain: the dataset's name in the store (default: its class name).
        method: the adaptor's name or config in the store (default: `model.config`).
        seed: the experiment's seed; each task's seed is `task_seed(seed, domain, id, replicate)`.
        shard: "i/n": only instances at positions i, i+n, i+2n, ... (after max_instances).
        on_result: called with each finished run's row (a dict), e.g. `ResultsView.add`.
        progress: a tqdm bar (None: in notebooks only).
        model_name: the model's name in the store (default: the adaptor's, e.g. the
            model directory's name).
        model_id: the model's identity where the adaptor cannot tell it (a plain
            async function): a name or a dict that changes whenever the model does.
        reuse_unidentified: reuse stored runs of a model that could not be
            identified (otherwise they are run again and replaced).
        cluster: None runs here; a `RayCluster` or a Ray address ("local", "auto",
            "ray://...") runs on Ray actors, `max_concurrency` tasks in flight per
            actor, with the same keys and seeds (`genlm_lab.eval.cluster`).

    Returns:
        genlm-eval's dict (average_weighted_accuracy, n_instances, all_instance_results,
        all_instance_outputs) plus ci (95% bootstrap over instances), n_errors and errors.

    Raises:
        ValueError: for overwrite_outputs without overwrite_results, n_replicates < 1
            or max_concurrency < 1.
    """
    if overwrite_outputs and not overwrite_results:
        raise ValueError(
            "cannot overwrite outputs without overwriting results (set overwrite_results=True)"
        )
    if n_replicates < 1 or max_concurrency < 1:
        raise ValueError(
            f"n_replicates and max_concurrency must be >= 1, got {n_replicates}, {max_concurrency}"
        )
    shard_ = parse_shard(shard)
    limit = None if max_instances == float("inf") else int(max_instances)
    instances = list(islice(iter(dataset), limit))
    if shard_ is not None:
        instances = instances[shard_[0] :: shard_[1]]
    domain = domain or type(dataset).__name__
    pool = None
    if cluster is not None:  # the actors build the model: they say who it is
        from genlm_lab.eval.cluster import open_pool

        pool = await open_pool(cluster, model, evaluator, instances, method, model_id, model_name)
        name, config, model_ident = pool.method_name, pool.method_config, pool.model_identity
    else:
        name, config = _method_identity(model, method)
        model_ident = _model_identity(model, model_id, model_name)
    store_, owned = _open_store(store, None if output_dir is None else str(output_dir))
    identified = bool(model_ident.get("identified"))
    evaluator_ident = evaluator_identity(evaluator)
    out_dir = None if output_dir is None else str(output_dir)
    worker = f"{socket.gethostname()}:{os.getpid()}"
    prov = json.dumps({**provenance(), "model": model_ident}, default=str)
    if store_ and not identified and not reuse_unidentified:
        warnings.warn(
            f"the model of {name!r} cannot be identified ({model_ident['name']}): its stored "
            "runs are not reused; pass model_id=... to name it, or reuse_unidentified=True",
            stacklevel=2,
        )
    try:
        method_hash = store_.put_method(name, config) if store_ else config_hash(config)
        model_hash = store_.put_model(model_ident) if store_ else config_hash(model_ident)
        if pool is not None:
            identities = pool.instance_identities
        else:
            identities = [_instance_identity(model, i) for i in instances]
        if store_:
            instance_hashes = store_.put_instances(domain, instances, identities)
        else:
            instance_hashes = [config_hash(i) for i in identities]
        semaphore = asyncio.Semaphore(pool.capacity(max_concurrency) if pool else max_concurrency)
        bar = progress_bar(
            len(instances) * n_replicates, desc=f"{name} on {domain}", enabled=progress
        )
        stats = {"done": 0, "acc": 0.0}
        reusable = identified or reuse_unidentified

        async def one(
            instance: Any, instance_hash: str, replicate: int
        ) -> tuple[dict | None, ModelOutput | None, dict]:
            iid = str(instance.instance_id)
            s = task_seed(seed, domain, iid, replicate)
            run_key, output_key = run_keys(
                method_hash, model_hash, instance_hash, evaluator_ident, domain, replicate, seed
            )
            stored = store_.get_run(run_key) if store_ else None
            if overwrite_results and stored is None and reusable and store_:
                stored = store_.get_output(output_key)  # scored by another evaluator: re-score
                if stored is not None:
                    stored = _copy_run(store_, stored, run_key, evaluator_ident, worker)
            if stored is not None and reusable and not overwrite_outputs:
                row, output, result = _reuse(store_, evaluator, instance, stored, overwrite_results)
            else:
                async with semaphore:
                    if pool is not None:
                        output, result, row = await pool.run(instance, replicate, s, out_dir)
                    else:
                        output, result, row = await _run_one(
                            model, evaluator, instance, replicate, s, out_dir
                        )
                row.update(
                    run_key=run_key,
                    output_key=output_key,
                    domain=domain,
                    instance_id=iid,
                    method_hash=method_hash,
                    model_hash=model_hash,
                    instance_hash=instance_hash,
                    evaluator=evaluator_ident,
                    replicate=replicate,
                    worker=row.get("worker", worker),
                    provenance=row.get("provenance", prov),
                )
                if store_:
                    responses = _response_rows(output, result)
                    replace = overwrite_outputs or stored is not None
                    row["run_id"] = store_.write_run(row, responses, replace=replace)
            row.update(
                method=name,
                model=model_ident["name"],
                domain=domain,
                instance_id=iid,
                replicate=replicate,
            )
            bar.update(1)
            postfix = pool.postfix() if pool is not None else {}
            if row.get("weighted_accuracy") is not None:
                stats["done"] += 1
                stats["acc"] += row["weighted_accuracy"]
                postfix["acc"] = f"{stats['acc'] / stats['done']:.3f}"
            if postfix:
                bar.set_postfix(postfix, refresh=False)
            if on_result is not None:
                hidden = ("output", "record", "provenance", "evaluator")
                on_result({k: v for k, v in row.items() if k not in hidden})
            return result, output, row

        tasks = [
            [asyncio.ensure_future(one(inst, h, r)) for r in range(n_replicates)]
            for inst, h in zip(instances, instance_hashes, strict=True)
        ]
        try:
            per_instance = [await asyncio.gather(*ts) for ts in tasks]
        finally:
            for ts in tasks:
                for t in ts:
                    t.cancel()
            bar.close()
        return _summarise(instances, per_instance, verbosity)
    finally:
        if pool is not None:
            pool.close()
        if owned:
            store_.close()


def _copy_run(
    store: ResultsStore, source: dict, run_key: str, evaluator: dict, worker: str
) -> dict:
    """A stored output copied under a new evaluator's key (scored next); the source run stays."""
    row = {k: v for k, v in source.items() if k != "run_id"}
    row.update(run_key=run_key, evaluator=evaluator, worker=worker, finished_at=None)
    store.write_run(row, store.responses(source["run_id"]))
    return store.get_run(run_key)


async def _run_one(
    model: Any, evaluator: Evaluator, instance: Any, replicate: int, seed: int, out_dir: str | None
) -> tuple[ModelOutput | None, dict | None, dict]:
    """Run the model on one (instance, replicate) under its own generator, and score it."""
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


def _reuse(
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
        store.rescore(stored["run_id"], acc, _response_rows(output, result), status, error)
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


def _summarise(instances: list, per_instance: list, verbosity: int) -> dict[str, Any]:
    all_results, all_outputs, errors, accs = [], [], [], []
    for instance, runs in zip(instances, per_instance, strict=True):
        results = []
        for result, _output, row in runs:
            if result is None:
                errors.append(
                    {
                        "instance_id": instance.instance_id,
                        "replicate": row["replicate"],
                        "error": row.get("error"),
                    }
                )
                results.append({"weighted_accuracy": None, "error": row.get("error")})
            else:
                results.append(result)
        all_results.append(results)
        all_outputs.append([o for _r, o, _row in runs])
        ok = [r["weighted_accuracy"] for r in results if r.get("weighted_accuracy") is not None]
        if ok:
            accs.append(sum(ok) / len(ok))
        if verbosity > 0:
            mean = f"{accs[-1]:.4f}" if ok else "error"
            print(f"{instance!r}: weighted accuracy {mean}")
    average = float(np.mean(accs)) if accs else math.nan
    ci = bootstrap_ci(accs)[1:] if accs else (math.nan, math.nan)
    if verbosity > 0:
        print(
            f"mean weighted accuracy {average:.4f} (95% CI {ci[0]:.4f}-{ci[1]:.4f}), {len(errors)} errors"
        )
    return {
        "average_weighted_accuracy": average,
        "n_instances": len(instances),
        "all_instance_results": all_results,
        "all_instance_outputs": all_outputs,
        "ci": ci,
        "n_errors": len(errors),
        "errors": errors,
    }
