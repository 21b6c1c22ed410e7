"""Where an evaluation's tasks run: here (`LocalPool`) or on Ray replicas (`ReplicaPool`).

`run_evaluation` talks to both through one interface (`Pool`), so it has one
track whether or not a cluster is used: the pool names the method, the model
and the instances as the runs are keyed, says how many tasks may run at once,
runs each task, adds its counts to the progress bar, and is closed at the end.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, Protocol

from genlm_lab.eval.cluster import open_pool
from genlm_lab.eval.core import Evaluator
from genlm_lab.eval.identity import adaptor_model_identity, instance_identity, method_identity
from genlm_lab.eval.task import run_task

__all__ = ["LocalPool", "Pool", "pool_for"]


class Pool(Protocol):
    """What the runner asks of the place its tasks run (`ReplicaPool` and `LocalPool` answer)."""

    method_name: str
    method_config: dict
    model_identity: dict

    @property
    def instance_identities(self) -> list:
        """Each instance's identity, as the runs are keyed."""
        ...

    def capacity(self, per_actor: int) -> int:
        """How many tasks run at once, `per_actor` on each replica."""
        ...

    async def run(
        self, instance: Any, replicate: int, seed: int, out_dir: str | None
    ) -> tuple[Any, dict | None, dict]:
        """One task's (output, result, row), as `run_task` gives them."""
        ...

    def postfix(self) -> dict[str, Any]:
        """The pool's extras on the progress bar (a new dict each time)."""
        ...

    def close(self) -> None:
        """Let go of what the evaluation held."""
        ...


@dataclass
class LocalPool:
    """The tasks run in this process, on its event loop (`run_task`), no pool around them.

    Built by `pool_for`; the instances' identities are read from the adaptor on
    first use, as the runner keys them.
    """

    model: Any
    evaluator: Evaluator
    instances: list
    method_name: str
    method_config: dict
    model_identity: dict

    @cached_property
    def instance_identities(self) -> list:
        """Each instance as the adaptor builds it (`instance_identity`)."""
        return [instance_identity(self.model, i) for i in self.instances]

    def capacity(self, per_actor: int) -> int:
        """`per_actor` tasks at once: this process is the one replica."""
        return per_actor

    async def run(
        self, instance: Any, replicate: int, seed: int, out_dir: str | None
    ) -> tuple[Any, dict | None, dict]:
        """Run the task here (`run_task`)."""
        return await run_task(self.model, self.evaluator, instance, replicate, seed, out_dir)

    def postfix(self) -> dict[str, Any]:
        """Nothing to add to the progress bar."""
        return {}

    def close(self) -> None:
        """Nothing to let go of."""


async def pool_for(
    cluster: Any,
    model: Any,
    evaluator: Evaluator,
    instances: list,
    method: Any = None,
    model_id: Any = None,
    model_name: str | None = None,
) -> Pool:
    """A `LocalPool` when `cluster` is None, else the cluster's replicas (`open_pool`).

    The method and the model are named as `run_evaluation` says: here by the
    adaptor; on a cluster the replicas build the model, so they say who it is.
    """
    if cluster is not None:
        return await open_pool(cluster, model, evaluator, instances, method, model_id, model_name)
    name, config = method_identity(model, method)
    identity = adaptor_model_identity(model, model_id, model_name)
    return LocalPool(model, evaluator, instances, name, config, identity)
