"""ReplicaPool without Ray: slots per replica (back-pressure), a lost replica replaced, errors."""

import asyncio
from types import SimpleNamespace

from genlm_lab.eval.model_spec import ModelSpec
from genlm_lab.eval.ray_pool import ReplicaPool


class ActorLost(Exception):
    pass


class TaskFailed(Exception):
    def __init__(self, cause):
        super().__init__(str(cause))
        self.cause = cause


RAY = SimpleNamespace(exceptions=SimpleNamespace(RayActorError=ActorLost, RayTaskError=TaskFailed))


class Actor:
    """A replica whose `run.remote(...)` awaits `behave` and tracks how many tasks it holds."""

    def __init__(self, behave):
        self.behave, self.running, self.peak, self.calls = behave, 0, 0, 0
        self.run = SimpleNamespace(remote=self._run)

    async def _run(self, job, instance, replicate, seed, out_dir):
        self.calls += 1
        self.running += 1
        self.peak = max(self.peak, self.running)
        try:
            return await self.behave(instance, seed)
        finally:
            self.running -= 1


async def _answer(instance, seed):
    await asyncio.sleep(0.001)
    return "out", {"weighted_accuracy": 1.0}, {"seed": seed, "status": "finished"}


async def _lost(instance, seed):
    raise ActorLost("gone")


class Cluster:
    """Replaces a lost actor in the shared list by one built from `make`."""

    def __init__(self, actors, make, max_attempts=3):
        self.actors, self.make, self.max_attempts, self.replaced = actors, make, max_attempts, 0

    def replace(self, spec, old):
        self.replaced += 1
        new = self.make()
        self.actors[self.actors.index(old)] = new
        return new


def _pool(actors, make=lambda: Actor(_answer), max_attempts=3):
    cluster = Cluster(actors, make, max_attempts)
    spec = ModelSpec(load=lambda: None)
    pool = ReplicaPool(RAY, cluster, spec, actors, "job", "m", {}, {}, [])
    return pool, cluster


async def test_each_replica_holds_at_most_its_slots():
    actors = [Actor(_answer), Actor(_answer)]
    pool, _ = _pool(actors)
    assert pool.capacity(3) == 6
    rows = await asyncio.gather(*(pool.run(i, 0, i, None) for i in range(20)))
    assert [row["seed"] for _o, _r, row in rows] == list(range(20))
    assert [a.peak for a in actors] == [3, 3]
    assert sum(a.calls for a in actors) == 20
    assert pool.postfix()["failed"] == 0 and len(pool.postfix()["runs/min"].split()) == 2


async def test_a_lost_replica_is_replaced_and_its_task_runs_again():
    actors = [Actor(_lost)]
    pool, cluster = _pool(actors)
    pool.capacity(1)
    output, result, row = await pool.run("x", 0, 5, None)
    assert (output, row["status"], row["seed"]) == ("out", "finished", 5)
    assert pool.lost == 1 and cluster.replaced == 1 and pool.failed == 0
    assert actors[0].calls == 1  # the replacement ran it


async def test_a_task_that_keeps_losing_its_replica_is_an_error():
    pool, cluster = _pool([Actor(_lost)], make=lambda: Actor(_lost), max_attempts=3)
    pool.capacity(1)
    output, result, row = await pool.run("x", 0, 5, None)
    assert (output, result, row["status"]) == (None, None, "error")
    assert row["error"].startswith("actor lost 3 times on this task")
    assert pool.lost == 3 and pool.failed == 1 and cluster.replaced == 3


async def test_a_replica_that_fails_around_the_task_gives_an_error_row():
    async def broken(instance, seed):
        raise TaskFailed(RuntimeError("cannot build the model"))

    pool, cluster = _pool([Actor(broken)])
    pool.capacity(1)
    _o, _r, row = await pool.run("x", 0, 5, None)
    assert row["error"] == "actor: RuntimeError: cannot build the model"
    assert "traceback" in row["provenance"] and cluster.replaced == 0
    _o, _r, row = await pool.run("y", 0, 6, None)  # its slot came back
    assert row["seed"] == 6
