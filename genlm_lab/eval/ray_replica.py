"""`Replica`: a Ray actor holding one model replica, running many tasks at once on its event loop.

It builds the model once from a `ModelSpec`'s `load` (torch limited to its
CPUs), then runs each task as the local runner does (`genlm_lab.eval.task`)
so its backend batches concurrent tasks, and adds where it ran (node,
actor, host, pid, device) and the full traceback of a failure to the run's
provenance. Ray is imported only inside the actor.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import traceback
from collections.abc import Callable
from typing import Any

from genlm_lab.eval.identity import (
    adaptor_model_identity,
    instance_identity,
    method_identity,
    provenance,
)
from genlm_lab.eval.model_spec import EvaluationJob
from genlm_lab.eval.task import run_task

__all__ = ["Replica"]


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

    async def _job(self, ref: list) -> tuple[EvaluationJob, Any, dict]:
        job_ref = ref[0]
        key = job_ref.hex()
        if key not in self._jobs:
            self._jobs[key] = asyncio.ensure_future(self._build(job_ref))
        return await self._jobs[key]

    async def _build(self, job_ref: Any) -> tuple[EvaluationJob, Any, dict]:
        job: EvaluationJob = await job_ref
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
