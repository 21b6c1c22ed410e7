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
import json
import math
import os
import socket
import warnings
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any

import numpy as np

from genlm_lab.eval.core import Dataset, Evaluator, ModelOutput
from genlm_lab.eval.identity import evaluator_identity, provenance, run_keys
from genlm_lab.eval.pool import Pool, pool_for
from genlm_lab.eval.stats import accuracy_interval
from genlm_lab.eval.store import ResultsStore, config_hash
from genlm_lab.eval.task import copy_run, response_rows, reuse_run, task_seed
from genlm_lab.util import progress_bar

__all__ = ["parse_shard", "run_evaluation"]


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
        all_instance_outputs) plus ci (95% Wilson interval over instances, `stats.accuracy_interval`), n_errors and errors.

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
    pool = await pool_for(cluster, model, evaluator, instances, method, model_id, model_name)
    name, config, model_ident = pool.method_name, pool.method_config, pool.model_identity
    store_, owned = _open_store(store, None if output_dir is None else str(output_dir))
    identified = bool(model_ident.get("identified"))
    if store_ and not identified and not reuse_unidentified:
        warnings.warn(
            f"the model of {name!r} cannot be identified ({model_ident['name']}): its stored "
            "runs are not reused; pass model_id=... to name it, or reuse_unidentified=True",
            stacklevel=2,
        )
    try:
        method_hash = store_.put_method(name, config) if store_ else config_hash(config)
        model_hash = store_.put_model(model_ident) if store_ else config_hash(model_ident)
        identities = pool.instance_identities
        if store_:
            instance_hashes = store_.put_instances(domain, instances, identities)
        else:
            instance_hashes = [config_hash(i) for i in identities]
        tasks = _Tasks(
            evaluator=evaluator,
            store=store_,
            pool=pool,
            semaphore=asyncio.Semaphore(pool.capacity(max_concurrency)),
            bar=progress_bar(
                len(instances) * n_replicates, desc=f"{name} on {domain}", enabled=progress
            ),
            domain=domain,
            seed=seed,
            method=name,
            model_name=model_ident["name"],
            method_hash=method_hash,
            model_hash=model_hash,
            evaluator_identity=evaluator_identity(evaluator),
            worker=f"{socket.gethostname()}:{os.getpid()}",
            provenance=json.dumps({**provenance(), "model": model_ident}, default=str),
            out_dir=None if output_dir is None else str(output_dir),
            overwrite_results=overwrite_results,
            overwrite_outputs=overwrite_outputs,
            reusable=identified or reuse_unidentified,
            on_result=on_result,
        )
        futures = [
            [asyncio.ensure_future(tasks.run(inst, h, r)) for r in range(n_replicates)]
            for inst, h in zip(instances, instance_hashes, strict=True)
        ]
        try:
            per_instance = [await asyncio.gather(*fs) for fs in futures]
        finally:
            for fs in futures:
                for f in fs:
                    f.cancel()
            tasks.bar.close()
        return _summarise(instances, per_instance, verbosity)
    finally:
        pool.close()
        if owned:
            store_.close()


@dataclass
class _Tasks:
    """One evaluation's tasks: each reused from the store, or run in the pool and stored."""

    evaluator: Evaluator
    store: ResultsStore | None
    pool: Pool  # here (`LocalPool`) or on Ray replicas (`genlm_lab.eval.pool`)
    semaphore: asyncio.Semaphore
    bar: Any
    domain: str
    seed: int
    method: str
    model_name: str
    method_hash: str
    model_hash: str
    evaluator_identity: dict
    worker: str
    provenance: str
    out_dir: str | None
    overwrite_results: bool
    overwrite_outputs: bool
    reusable: bool
    on_result: Any
    done: int = 0
    accuracy_sum: float = 0.0

    async def run(
        self, instance: Any, instance_hash: str, replicate: int
    ) -> tuple[dict | None, ModelOutput | None, dict]:
        """One (instance, replicate): (result, output, row), and the progress bar moved on."""
        iid = str(instance.instance_id)
        run_key, output_key = run_keys(
            self.method_hash,
            self.model_hash,
            instance_hash,
            self.evaluator_identity,
            self.domain,
            replicate,
            self.seed,
        )
        store = self.store
        stored = store.get_run(run_key) if store else None
        if self.overwrite_results and stored is None and self.reusable and store:
            stored = store.get_output(output_key)  # scored by another evaluator: re-score
            if stored is not None:
                stored = copy_run(store, stored, run_key, self.evaluator_identity, self.worker)
        if stored is not None and self.reusable and not self.overwrite_outputs:
            row, output, result = reuse_run(
                store, self.evaluator, instance, stored, self.overwrite_results
            )
        else:
            s = task_seed(self.seed, self.domain, iid, replicate)
            async with self.semaphore:
                output, result, row = await self.pool.run(instance, replicate, s, self.out_dir)
            row.update(
                run_key=run_key,
                output_key=output_key,
                domain=self.domain,
                instance_id=iid,
                method_hash=self.method_hash,
                model_hash=self.model_hash,
                instance_hash=instance_hash,
                evaluator=self.evaluator_identity,
                replicate=replicate,
                worker=row.get("worker", self.worker),
                provenance=row.get("provenance", self.provenance),
            )
            if store:
                replace = self.overwrite_outputs or stored is not None
                row["run_id"] = store.write_run(row, response_rows(output, result), replace=replace)
        row.update(
            method=self.method,
            model=self.model_name,
            domain=self.domain,
            instance_id=iid,
            replicate=replicate,
        )
        self._progress(row)
        if self.on_result is not None:
            hidden = ("output", "record", "provenance", "evaluator")
            self.on_result({k: v for k, v in row.items() if k not in hidden})
        return result, output, row

    def _progress(self, row: dict) -> None:
        self.bar.update(1)
        postfix = self.pool.postfix()
        if row.get("weighted_accuracy") is not None:
            self.done += 1
            self.accuracy_sum += row["weighted_accuracy"]
            postfix["acc"] = f"{self.accuracy_sum / self.done:.3f}"
        if postfix:
            self.bar.set_postfix(postfix, refresh=False)


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
    ci = accuracy_interval(accs)[1:3] if accs else (math.nan, math.nan)
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
