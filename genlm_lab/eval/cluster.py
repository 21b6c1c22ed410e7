"""Evaluations on a Ray cluster: one actor per model replica, the driver the one writer.

`run_evaluation(..., cluster=...)` hands its (instance, replicate) tasks to
Ray actors instead of running them in this process. Each actor is one model
replica: it builds the model once from a picklable `ModelSpec` (a GPU each
where the cluster has GPUs, so vLLM when installed; CPU threads otherwise)
and runs many tasks at once on its own event loop, so its backend batches
them as the local runner's does. The driver keeps everything else: it
reads the store, skips stored runs, sends each task to a free slot of an
actor (`max_concurrency` slots per actor: back-pressure), and writes each
returned run itself. Tasks carry the local runner's seed (`task_seed`) and
keys (`run_keys`): Ray and local runs mix in one store and resume each
other.

Faults: an actor whose process dies is restarted by Ray (`max_restarts`) and
its in-flight tasks re-run there (`max_task_retries`); one killed for good
(`ray.kill`) is replaced by a new actor and its tasks go to a free slot.
No result came back from a task that died, so none is written twice; a
task that kills its actor `max_attempts` times is stored as an error. A
task that raises is stored as an error (the full traceback is in the run's
provenance, under "traceback"), as locally.

Ray is the optional extra `genlm-lab[ray]`; nothing here imports it until a
cluster is used.

This module is the door; each part lives in its own: `model_spec` (what an
actor builds), `ray_replica` (the actor), `ray_cluster` (Ray itself and the
replicas' placement) and `ray_pool` (the driver's slots and recovery).
"""

from __future__ import annotations

from genlm_lab.eval.model_spec import ModelSpec
from genlm_lab.eval.ray_cluster import RAY_MISSING, RayCluster, require_ray
from genlm_lab.eval.ray_pool import open_pool

__all__ = ["RAY_MISSING", "ModelSpec", "RayCluster", "open_pool", "require_ray"]
