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
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import socket
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from genlm_lab.eval.identity import (
    adaptor_model_identity,
    instance_identity,
    method_identity,
    provenance,
)
from genlm_lab.eval.task import run_task

__all__ = ["RAY_MISSING", "ModelSpec", "RayCluster", "open_pool", "require_ray"]

RAY_MISSING = "running an evaluation on Ray needs the optional extra: pip install 'genlm-lab[ray]'"


def require_ray() -> Any:
    """The `ray` module.

    Raises:
        ImportError: naming the extra to install, where Ray is not installed.
    """
    try:
        import ray
    except ImportError as exc:
        raise ImportError(RAY_MISSING) from exc
    return ray


# ------------------------------------------------------------------ what an actor builds
def _load_named(name: str, backend: str | None, llm_opts: dict | None) -> Any:
    from genlm_lab.backend import load_model_by_name

    return load_model_by_name(name, backend=backend, llm_opts=llm_opts)


def _method_adaptor(
    method: Any, domain: Any, domain_kwargs: dict, model_name: str | None, llm: Any
) -> Any:
    if isinstance(domain, str):
        from genlm_lab.eval.domains import load_domain

        domain = load_domain(domain, **domain_kwargs)
    return method.adaptor(domain, llm, model_name=model_name)


def _given(value: Any) -> Any:
    return value


@dataclass(frozen=True)
class ModelSpec:
    """How an actor builds its model adaptor: picklable, so it travels instead of the weights.

    Attributes:
        load: builds the model (or the whole adaptor when `adapt` is None), once per actor.
        adapt: turns the loaded model into the adaptor of one evaluation (a method on a domain).
        key: actors built from specs with the same key are reused between evaluations
            (the same model); None: the hash of what `load` pickles to.
    """

    load: Callable[[], Any]
    adapt: Callable[[Any], Any] | None = None
    key: str | None = None

    @classmethod
    def method(
        cls,
        method: Any,
        domain: Any,
        model: str | Callable[[], Any] = "default",
        *,
        model_name: str | None = None,
        backend: str | None = None,
        llm_opts: dict | None = None,
        **domain_kwargs: Any,
    ) -> ModelSpec:
        """A `Method` on a domain with a model, built in each actor (what `eval run --ray` sends).

        Args:
            method: the `Method`.
            domain: a domain name (`load_domain`, with `domain_kwargs`) or a `Domain`.
            model: a model name for `load_model_by_name` (loaded in the actor), or a
                picklable function that returns the LM.
            model_name: the model's name in the store (default: `model` where it is a name).
            backend: `load_model_by_name`'s backend (None: vLLM where CUDA is, else "hf").
            llm_opts: `load_model_by_name`'s options.
            **domain_kwargs: passed to `load_domain`.
        """
        if isinstance(model, str):
            load = partial(_load_named, model, backend, llm_opts)
            key = json.dumps(["model", model, backend, llm_opts], sort_keys=True, default=str)
            model_name = model_name or model
        else:
            load, key = model, None
        adapt = partial(_method_adaptor, method, domain, domain_kwargs, model_name)
        return cls(load=load, adapt=adapt, key=key)

    @classmethod
    def of(cls, adaptor: Any) -> ModelSpec:
        """An adaptor built here, sent to each actor as it is (pickled: fine for small models)."""
        return cls(load=partial(_given, adaptor))


@dataclass(frozen=True)
class _Job:
    """One evaluation's part that every task shares (sent once to the object store)."""

    adapt: Callable[[Any], Any] | None
    evaluator: Any
    method: Any
    model_id: Any
    model_name: str | None


# ------------------------------------------------------------------ the actor
class _Traced:
    """An adaptor that keeps the full traceback of what it raised (the store keeps one line)."""

    def __init__(self, adaptor: Any) -> None:
        self.adaptor = adaptor
        self.traceback: str | None = None

    async def __call__(self, instance: Any, output_dir: str | None, replicate: int) -> Any:
        try:
            return await self.adaptor(instance, output_dir, replicate=replicate)
        except Exception:
            self.traceback = traceback.format_exc()
            raise


class Replica:
    """A Ray actor holding one model replica; runs many tasks at once on its event loop."""

    def __init__(self, load: Callable[[], Any], threads: int | None = None) -> None:
        import ray

        if threads:
            try:
                import torch

                torch.set_num_threads(threads)
            except ImportError:  # pragma: no cover - torch is a dependency
                pass
        self._built = load()
        self._jobs: dict[str, Any] = {}
        context = ray.get_runtime_context()
        gpus = ray.get_gpu_ids()
        self._where = {
            "node": context.get_node_id(),
            "actor": context.get_actor_id(),
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "device": f"cuda:{','.join(map(str, gpus))}" if gpus else "cpu",
        }
        self._provenance = provenance()

    def where(self) -> dict[str, Any]:
        """Node, actor id, host, pid and device of this replica."""
        return self._where

    async def _job(self, ref: list) -> tuple[_Job, Any, dict]:
        job_ref = ref[0]
        key = job_ref.hex()
        if key not in self._jobs:
            self._jobs[key] = asyncio.ensure_future(self._build(job_ref))
        return await self._jobs[key]

    async def _build(self, job_ref: Any) -> tuple[_Job, Any, dict]:
        job: _Job = await job_ref
        adaptor = self._built if job.adapt is None else job.adapt(self._built)
        return job, adaptor, adaptor_model_identity(adaptor, job.model_id, job.model_name)

    def forget(self, key: str) -> None:
        """Drop an evaluation's adaptor (it has ended)."""
        self._jobs.pop(key, None)

    async def prepare(self, ref: list, instances: list | None) -> dict[str, Any]:
        """The identities the driver keys runs by: method, model, and each instance's."""
        job, adaptor, model_ident = await self._job(ref)
        name, config = method_identity(adaptor, job.method)
        identities = None
        if instances is not None:
            identities = [instance_identity(adaptor, i) for i in instances]
        return {
            "name": name,
            "config": config,
            "model": model_ident,
            "instances": identities,
            "where": self._where,
        }

    async def run(
        self, ref: list, instance: Any, replicate: int, seed: int, out_dir: str | None
    ) -> tuple[Any, dict | None, dict]:
        """One (instance, replicate) as the local runner runs it, with this replica's provenance."""
        job, adaptor, model_ident = await self._job(ref)
        traced = _Traced(adaptor)
        output, result, row = await run_task(
            traced, job.evaluator, instance, replicate, seed, out_dir
        )
        prov = {**self._provenance, "model": model_ident, "ray": self._where}
        if traced.traceback is not None:
            prov["traceback"] = traced.traceback
        row["worker"] = f"{self._where['host']}:{self._where['pid']}"
        row["provenance"] = json.dumps(prov, default=str)
        return output, result, row


# ------------------------------------------------------------------ the cluster
_LOCAL = (None, "", "local")


class RayCluster:
    """A Ray cluster to evaluate on, and the actors (model replicas) started on it.

    Args:
        address: None or "local" starts a Ray on this machine (`num_cpus`, no
            dashboard) unless one runs in this process already; "auto" or
            "ray://host:port" joins one.
        num_actors: model replicas (default: one per GPU where the cluster has
            GPUs, else one per `cpus_per_actor` CPUs).
        num_cpus: CPUs of a local Ray started here (None: Ray's default, all).
        cpus_per_actor: CPUs each replica takes (and its torch threads).
        gpus_per_actor: GPUs each replica takes (default: 1 where the cluster has
            GPUs, else 0); more than 1 for a tensor-parallel engine (`llm_opts`).
        max_restarts: times Ray restarts a replica whose process died.
        max_attempts: times a task may lose its actor before it is stored as an error.
        actor_options: more `ray.remote` options for the replicas (e.g. `resources`).
        init_options: more `ray.init` options (e.g. `runtime_env`).
    """

    def __init__(
        self,
        address: str | None = "local",
        *,
        num_actors: int | None = None,
        num_cpus: int | None = 2,
        cpus_per_actor: float = 1.0,
        gpus_per_actor: float | None = None,
        max_restarts: int = 2,
        max_attempts: int = 3,
        actor_options: dict | None = None,
        init_options: dict | None = None,
    ) -> None:
        self.address = address
        self.num_actors = num_actors
        self.num_cpus = num_cpus
        self.cpus_per_actor = cpus_per_actor
        self.gpus_per_actor = gpus_per_actor
        self.max_restarts = max_restarts
        self.max_attempts = max_attempts
        self.actor_options = dict(actor_options or {})
        self.init_options = dict(init_options or {})
        self._pools: dict[str, list] = {}
        self._started_ray = False

    def connect(self) -> Any:
        """Start or join Ray (once) and return the `ray` module."""
        ray = require_ray()
        if not ray.is_initialized():
            # Quiet: a notebook cell or a test shows the evaluation's bar, not Ray's start-up log.
            options = {"logging_level": logging.ERROR, "log_to_driver": False}
            options.update(self.init_options)
            if self.address in _LOCAL:
                ray.init(num_cpus=self.num_cpus, include_dashboard=False, **options)
                self._started_ray = True
            else:
                ray.init(address=self.address, **options)
        return ray

    def _placement(self, ray: Any) -> tuple[int, float, float]:
        resources = ray.cluster_resources()
        gpus = self.gpus_per_actor
        if gpus is None:
            gpus = 1.0 if resources.get("GPU", 0) >= 1 else 0.0
        n = self.num_actors
        if n is None:
            if gpus > 0:
                n = int(resources.get("GPU", 0) // gpus)
            else:
                n = int(resources.get("CPU", 1) // max(self.cpus_per_actor, 1e-9))
        return max(1, n), self.cpus_per_actor, gpus

    def start_actor(self, spec: ModelSpec) -> Any:
        """One new replica built from `spec` (Ray schedules it where resources allow)."""
        ray = self.connect()
        _, cpus, gpus = self._placement(ray)
        options = {
            "num_cpus": cpus,
            "num_gpus": gpus,
            "max_restarts": self.max_restarts,
            "max_task_retries": self.max_restarts,
            **self.actor_options,
        }
        actor_class = ray.remote(Replica).options(**options)
        return actor_class.remote(spec.load, max(1, int(cpus)) if cpus else None)

    def actors(self, spec: ModelSpec) -> list:
        """The replicas for `spec`'s model, started if needed; other models' replicas stop first."""
        ray = self.connect()
        key = _key(spec)
        if key not in self._pools:
            for other in list(self._pools):
                self._kill(ray, self._pools.pop(other))
            n, _, _ = self._placement(ray)
            self._pools[key] = [self.start_actor(spec) for _ in range(n)]
        return self._pools[key]

    def replace(self, spec: ModelSpec, old: Any) -> Any:
        """A new replica in the place of `old` (lost), or the one that already took it."""
        key = _key(spec)
        actors = self._pools.get(key, [])
        if old not in actors:
            return None
        ray = self.connect()
        self._kill(ray, [old])
        new = self.start_actor(spec)
        actors[actors.index(old)] = new
        return new

    @staticmethod
    def _kill(ray: Any, actors: list) -> None:
        for actor in actors:
            try:
                ray.kill(actor)
            except Exception:  # already gone
                pass

    def release(self) -> None:
        """Stop the replicas (their CPUs and GPUs go back to the cluster); Ray keeps running."""
        if self._pools:
            ray = require_ray()
            if ray.is_initialized():
                for actors in self._pools.values():
                    self._kill(ray, actors)
        self._pools.clear()

    def shutdown(self) -> None:
        """Stop the replicas, and Ray itself where this object started it."""
        self.release()
        if self._started_ray:
            require_ray().shutdown()
        self._started_ray = False

    def __repr__(self) -> str:
        models = {k: len(v) for k, v in self._pools.items()}
        return f"RayCluster({self.address!r}, replicas={models})"


def _key(spec: ModelSpec) -> str:
    """Which replicas serve `spec`: its key, else the hash of what its `load` pickles to."""
    if spec.key is not None:
        return spec.key
    from ray import cloudpickle

    return "load:" + hashlib.sha256(cloudpickle.dumps(spec.load)).hexdigest()


_CLUSTERS: dict[Any, RayCluster] = {}


def _cluster(cluster: Any) -> RayCluster:
    """A `RayCluster`, or the one this process keeps per address (its replicas stay warm)."""
    if isinstance(cluster, RayCluster):
        return cluster
    if cluster is True:
        cluster = "local"
    if cluster is not None and not isinstance(cluster, str):
        raise TypeError(f"cluster must be a RayCluster or a Ray address, got {cluster!r}")
    key = "local" if cluster in _LOCAL else cluster
    if key not in _CLUSTERS:
        _CLUSTERS[key] = RayCluster(key)
    return _CLUSTERS[key]


# ------------------------------------------------------------------ the driver's side
@dataclass
class _Pool:
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
) -> _Pool:
    """Start (or reuse) the replicas for `model` and learn the identities runs are keyed by.

    Args:
        cluster: a `RayCluster`, or an address for the one this process keeps.
        model: a `ModelSpec`, or an adaptor to send as it is (`ModelSpec.of`).
        evaluator: scores the responses (runs in the actors).
        instances: the instances to evaluate (their identities come from one replica).
        method, model_id, model_name: as for `run_evaluation`.

    Raises:
        ImportError: without Ray.
        RuntimeError: if the replicas disagree on the model's identity.
    """
    cl = _cluster(cluster)
    ray = cl.connect()
    spec = model if isinstance(model, ModelSpec) else ModelSpec.of(model)
    actors = cl.actors(spec)  # shared with the cluster: a replacement shows here too
    job = ray.put(_Job(spec.adapt, evaluator, method, model_id, model_name))
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
    return _Pool(
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
