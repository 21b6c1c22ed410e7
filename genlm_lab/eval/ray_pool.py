"""The driver's side of a Ray evaluation: one evaluation's replicas as slots, and lost ones replaced.

`open_pool` starts (or reuses) the replicas of a model, sends the job once
and learns from them the identities the runs are keyed by. `ReplicaPool.run`
waits for a free slot (`max_concurrency` per replica: back-pressure), runs
the task there, and where the replica is lost, replaces it and runs the task
again elsewhere, up to `max_attempts` times.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import Any

from genlm_lab.eval.identity import provenance
from genlm_lab.eval.model_spec import EvaluationJob, ModelSpec
from genlm_lab.eval.ray_cluster import RayCluster, cluster_for

__all__ = ["ReplicaPool", "open_pool"]


@dataclass
class ReplicaPool:
    """One evaluation's replicas: free slots (back-pressure), lost-actor recovery, counts."""

    ray: Any
    cluster: RayCluster
    spec: ModelSpec
    actors: list
    job: Any
    method_name: str
    method_config: dict
    model_identity: dict
    instance_identities: list
    _free: asyncio.Queue | None = None
    _per_actor: int = 1
    _done: list = field(default_factory=list)
    _started: float = field(default_factory=time.perf_counter)
    failed: int = 0
    lost: int = 0

    def capacity(self, per_actor: int) -> int:
        """Tasks in flight at once: `per_actor` slots on each replica."""
        self._per_actor = per_actor
        self._free = asyncio.Queue()
        for _ in range(per_actor):
            for i in range(len(self.actors)):
                self._free.put_nowait(i)
        self._done = [0] * len(self.actors)
        self._started = time.perf_counter()
        return per_actor * len(self.actors)

    async def run(
        self, instance: Any, replicate: int, seed: int, out_dir: str | None
    ) -> tuple[Any, dict | None, dict]:
        """Run one task on a free slot; re-run it elsewhere if its actor is lost."""
        errors = self.ray.exceptions
        attempts = 0
        while True:
            i = await self._free.get()
            actor = self.actors[i]
            try:
                output, result, row = await actor.run.remote(
                    [self.job], instance, replicate, seed, out_dir
                )
            except errors.RayActorError as exc:
                attempts += 1
                self.lost += 1
                if self.actors[i] is actor:
                    self.cluster.replace(self.spec, actor)
                self._free.put_nowait(i)
                if attempts >= self.cluster.max_attempts:
                    return self._failed(seed, f"actor lost {attempts} times on this task: {exc}")
                continue
            except errors.RayTaskError as exc:  # the actor failed around the task (e.g. building)
                self._free.put_nowait(i)
                return self._failed(seed, f"actor: {type(exc.cause).__name__}: {exc.cause}", exc)
            self._free.put_nowait(i)
            self._done[i] += 1
            if row.get("status") == "error":
                self.failed += 1
            return output, result, row

    def _failed(self, seed: int, error: str, exc: BaseException | None = None) -> tuple:
        self.failed += 1
        row: dict[str, Any] = {"seed": seed, "status": "error", "error": error}
        if exc is not None:
            row["provenance"] = json.dumps({**provenance(), "traceback": str(exc)}, default=str)
        return None, None, row

    def postfix(self) -> dict[str, Any]:
        """The progress bar's extras: failures, lost actors, runs per minute of each replica."""
        minutes = max(time.perf_counter() - self._started, 1e-9) / 60
        out: dict[str, Any] = {"failed": self.failed}
        if self.lost:
            out["lost"] = self.lost
        out["runs/min"] = " ".join(f"{n / minutes:.0f}" for n in self._done)
        return out

    def close(self) -> None:
        """Forget this evaluation (the replicas stay for the next one on the same model)."""
        self._free = None
        for actor in self.actors:
            actor.forget.options(max_task_retries=0).remote(self.job.hex())


async def open_pool(
    cluster: Any,
    model: Any,
    evaluator: Any,
    instances: list,
    method: Any = None,
    model_id: Any = None,
    model_name: str | None = None,
) -> ReplicaPool:
    """Start (or reuse) the replicas for `model` and learn the identities runs are keyed by.

    Args:
        cluster: a `RayCluster`, or an address for the one this process keeps.
        model: a `ModelSpec`, or an adaptor to send as it is (`ModelSpec.of`).
        evaluator: scores the responses (runs in the actors).
        instances: the instances to evaluate (their identities come from one replica).
        method: the adaptor's name or config in the store, as for `run_evaluation`.
        model_id: the model's identity where the adaptor cannot tell it, as for `run_evaluation`.
        model_name: the model's name in the store, as for `run_evaluation`.

    Raises:
        ImportError: without Ray.
        RuntimeError: if the replicas disagree on the model's identity.
    """
    cl = cluster_for(cluster)
    ray = cl.connect()
    spec = model if isinstance(model, ModelSpec) else ModelSpec.of(model)
    actors = cl.actors(spec)  # shared with the cluster: a replacement shows here too
    job = ray.put(EvaluationJob(spec.adapt, evaluator, method, model_id, model_name))
    infos = await asyncio.gather(
        *(a.prepare.remote([job], instances if k == 0 else None) for k, a in enumerate(actors))
    )
    first = infos[0]
    for info in infos[1:]:
        if info["model"] != first["model"]:
            raise RuntimeError(
                f"the replicas built different models: {first['model']} on "
                f"{first['where']['host']}, {info['model']} on {info['where']['host']}"
            )
    return ReplicaPool(
        ray=ray,
        cluster=cl,
        spec=spec,
        actors=actors,
        job=job,
        method_name=first["name"],
        method_config=first["config"],
        model_identity=first["model"],
        instance_identities=first["instances"],
    )
