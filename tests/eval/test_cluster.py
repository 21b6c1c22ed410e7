"""run_evaluation on a local Ray: same runs as locally, lost actors, failures, resume, no Ray."""

import asyncio
import json
import os
import signal
from functools import partial
from pathlib import Path

import pytest
from _eval_toys import EndsWithB, ToyDataset, toy_domain, toy_lm

from genlm_lab.cli import main
from genlm_lab.eval import Method, ModelOutput, ModelResponse, ResultsStore, run_evaluation
from genlm_lab.eval.cluster import ModelSpec, RayCluster, require_ray

# A local Ray: make test runs this file beside the main lane; make test-quick leaves it out.
pytestmark = pytest.mark.integration

PATTERNS = ["a+b", "(ab)+", "c?a+", "[ab]{2}", "(a|c)b?", "a|b", "b+", "ab?c?"]
METHOD = Method(kind="smc", n_particles=4, max_tokens=4)


@pytest.fixture(scope="module")
def cluster():
    """A local Ray (2 CPUs, no dashboard) whose workers import these tests' helpers."""
    pytest.importorskip("ray")
    here = Path(__file__).parent
    path = os.pathsep.join([str(here), str(here.parent.parent)])
    c = RayCluster(
        "local",
        num_cpus=2,
        init_options={"runtime_env": {"env_vars": {"PYTHONPATH": path}}},
    )
    yield c
    c.shutdown()


def _spec(patterns=PATTERNS):
    """The toy domain's SMC, built in each actor from the same seeded ToyLM."""
    return ModelSpec.method(METHOD, toy_domain(patterns), partial(toy_lm, 3), model_name="toy")


def _local(patterns=PATTERNS):
    return METHOD.adaptor(toy_domain(patterns), toy_lm(3), model_name="toy")


def _rows(db):
    with ResultsStore(db) as store:
        runs = store.to_pandas("runs")
    return runs.sort_values("run_key").reset_index(drop=True)


def _same(a, b):
    """Same runs: keys, seeds, statuses, accuracies and outputs (runtimes aside)."""
    cols = ["run_key", "output_key", "seed", "status", "weighted_accuracy", "output"]
    rows = []
    for frame in (a, b):
        records = frame[cols].to_dict("records")
        for r in records:
            r["output"] = json.loads(r["output"])
            r["output"].pop("runtime_seconds")
        rows.append(records)
    assert rows[0] == rows[1]


async def test_ray_runs_equal_local_runs_and_share_their_keys(cluster, tmp_path):
    domain = toy_domain(PATTERNS)
    common = dict(n_replicates=2, domain="toy", seed=7)
    seen = []
    ray_res = await run_evaluation(
        domain.dataset,
        _spec(),
        domain.evaluator,
        store=tmp_path / "ray.sqlite",
        cluster=cluster,
        max_concurrency=3,
        on_result=seen.append,
        **common,
    )
    local = await run_evaluation(
        domain.dataset, _local(), domain.evaluator, store=tmp_path / "local.sqlite", **common
    )
    assert ray_res["average_weighted_accuracy"] == local["average_weighted_accuracy"]
    ray_rows, local_rows = _rows(tmp_path / "ray.sqlite"), _rows(tmp_path / "local.sqlite")
    assert len(ray_rows) == len(PATTERNS) * 2
    _same(ray_rows, local_rows)
    assert len(seen) == len(PATTERNS) * 2
    # Provenance names the actor that ran each run; both replicas took work.
    with ResultsStore(tmp_path / "ray.sqlite") as store:
        where = [store.run(i)["provenance"]["ray"] for i in ray_rows["run_id"]]
    assert {w["device"] for w in where} == {"cpu"}
    assert len({w["actor"] for w in where}) == 2
    assert all(w != str(os.getpid()) for w in ray_rows["worker"])


# A SIGKILLed actor comes back through Ray's own restart: a new process, ~15 s here.
@pytest.mark.parametrize("how", ["ray.kill", pytest.param("SIGKILL", marks=pytest.mark.slow)])
async def test_a_lost_actor_loses_no_run_and_writes_none_twice(cluster, tmp_path, how):
    domain = toy_domain(PATTERNS)
    killed = []

    ray = require_ray()

    before = set()

    def kill_one(row):
        if killed:
            return
        actors = cluster.actors(_spec())
        before.update(ray.get(a.where.remote())["pid"] for a in actors)
        if how == "ray.kill":
            ray.kill(actors[0])
        else:
            os.kill(ray.get(actors[0].where.remote())["pid"], signal.SIGKILL)
        killed.append(actors[0])

    db = tmp_path / "r.sqlite"
    await run_evaluation(
        domain.dataset,
        _spec(),
        domain.evaluator,
        store=db,
        cluster=cluster,
        n_replicates=3,
        max_concurrency=4,
        domain="toy",
        on_result=kill_one,
    )
    assert killed
    rows = _rows(db)
    assert len(rows) == len(PATTERNS) * 3 == rows["run_key"].nunique()
    assert (rows["status"] != "error").all()
    # The lost replica is a new process now (a replacement, or Ray's restart of it).
    now = cluster.actors(_spec())[0]
    assert len(before) == 2 and ray.get(now.where.remote())["pid"] not in before
    local = tmp_path / "local.sqlite"
    await run_evaluation(
        domain.dataset, _local(), domain.evaluator, store=local, n_replicates=3, domain="toy"
    )
    _same(rows, _rows(local))


async def test_an_instance_that_raises_is_stored_with_its_traceback(cluster, tmp_path):
    domain = toy_domain(["a+b", "(unclosed", "b+"])
    db = tmp_path / "r.sqlite"
    results = await run_evaluation(
        domain.dataset,
        _spec(),  # the same replicas: each instance brings its own pattern
        # (another spec would start new replicas: ~20 s of imports on these 2 cores)
        domain.evaluator,
        store=db,
        cluster=cluster,
        domain="toy",
    )
    assert results["n_errors"] == 1
    rows = _rows(db).set_index("instance_id")
    assert rows.loc["1", "status"] == "error" and "model:" in rows.loc["1", "error"]
    assert (rows.drop(index="1")["status"] == "finished").all()
    with ResultsStore(db) as store:
        prov = store.run(int(rows.loc["1", "run_id"]))["provenance"]
    assert prov["traceback"].startswith("Traceback (most recent call last)")


async def test_runs_resume_across_ray_and_local(cluster, tmp_path):
    domain = toy_domain(PATTERNS)
    db = tmp_path / "r.sqlite"
    common = dict(store=db, domain="toy", n_replicates=2)

    # A local driver "killed" after 5 runs: its store holds those five.
    class Stop(Exception):
        pass

    seen = []

    def stop_after_five(row):
        seen.append(row)
        if len(seen) == 5:
            raise Stop

    with pytest.raises(Stop):
        await run_evaluation(
            domain.dataset,
            _local(),
            domain.evaluator,
            max_concurrency=1,
            on_result=stop_after_five,
            **common,
        )
    first = _rows(db)
    assert len(first) == 5
    # Ray finishes the rest and keeps the five.
    await run_evaluation(domain.dataset, _spec(), domain.evaluator, cluster=cluster, **common)
    after_ray = _rows(db)
    assert len(after_ray) == len(PATTERNS) * 2
    kept = after_ray[after_ray["run_key"].isin(first["run_key"])]
    assert kept["run_id"].tolist() == first["run_id"].tolist()
    assert after_ray["worker"].str.endswith(f":{os.getpid()}").sum() == 5
    # And a local run afterwards reuses every Ray run.
    calls = []

    class Counting:
        def __init__(self, adaptor):
            self.inner = adaptor

        def __getattr__(self, name):
            return getattr(self.inner, name)

        async def __call__(self, *args, **kwargs):
            calls.append(args)
            return await self.inner(*args, **kwargs)

    await run_evaluation(domain.dataset, Counting(_local()), domain.evaluator, **common)
    assert calls == []
    assert _rows(db)["run_id"].tolist() == after_ray["run_id"].tolist()


@pytest.mark.slow  # new replicas for another model: ~20 s on these 2 cores
async def test_a_plain_adaptor_is_sent_as_it_is(cluster):
    async def model(instance, output_dir, replicate):
        return ModelOutput(responses=[ModelResponse(response=instance.pattern, weight=1.0)])

    results = await run_evaluation(
        ToyDataset(["ab", "ba"]), model, EndsWithB(), cluster=cluster, model_id="echo"
    )
    assert [r[0]["weighted_accuracy"] for r in results["all_instance_results"]] == [1.0, 0.0]


def test_eval_status_counts_runs_per_method_and_status(tmp_path, capsys):
    domain = toy_domain(["a+b", "(unclosed", "b+"])
    db = tmp_path / "r.sqlite"
    for kind in ("smc", "base"):
        method = Method(kind=kind, n_particles=3, max_tokens=4)
        adaptor = method.adaptor(domain, toy_lm(3), model_name="toy")
        asyncio.run(
            run_evaluation(domain.dataset, adaptor, domain.evaluator, store=db, n_replicates=2)
        )
    assert main(["eval", "status", str(db)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"{db}: 12 runs")
    assert lines[1].split() == [
        "domain",
        "method",
        "model",
        "finished",
        "all_dead",
        "error",
        "runs",
        "accuracy",
    ]
    table = {line.split()[1]: line.split()[3:7] for line in lines[2:]}
    # base never builds the broken constraint; smc fails on it in both replicates.
    assert table["smc"] == ["4", "0", "2", "6"]
    assert table["base"][2:] == ["0", "6"]


@pytest.mark.slow  # replicas of tiny-random through a whole `eval run --ray` (~30 s)
def test_eval_run_ray_stores_the_runs_a_local_run_reuses(cluster, tmp_path, capsys):
    cluster.release()  # the CPUs of the toy replicas go to the command's
    db = tmp_path / "r.sqlite"
    args = ["eval", "run", "pattern_matching", "--method", "awrs_smc:n_particles=2", "--limit"]
    args += ["2", "--max-tokens", "4", "--db", str(db), "--model", "tiny-random"]
    assert main([*args, "--ray"]) == 0
    assert "awrs_smc on pattern_matching with tiny-random" in capsys.readouterr().out
    with ResultsStore(db) as store:
        first = store.runs_frame()
    assert len(first) == 2 and (first["status"] != "error").all()
    assert main(args) == 0  # locally: the same keys, nothing runs again
    with ResultsStore(db) as store:
        assert store.runs_frame()["run_id"].tolist() == first["run_id"].tolist()


@pytest.mark.vllm  # in make test's vLLM lane: replicas each start a real vLLM engine (CPU build)
def test_eval_run_ray_on_vllm_replicas_gives_the_transformers_replicas_results(
    cluster, tmp_path, capsys
):
    cluster.release()  # the CPUs of the toy replicas go to the command's
    args = ["eval", "run", "pattern_matching", "--method", "awrs_smc:n_particles=2", "--limit"]
    args += ["2", "--max-tokens", "4", "--model", "tiny-random", "--ray"]
    outputs = {}
    for backend in ("hf", "vllm"):
        db = tmp_path / f"{backend}.sqlite"
        assert main([*args, "--db", str(db), "--backend", backend]) == 0
        with ResultsStore(db) as store:
            runs = store.to_pandas("runs").sort_values("instance_id").reset_index(drop=True)
        assert len(runs) == 2 and (runs["status"] != "error").all(), runs["error"].tolist()
        outputs[backend] = runs
    assert "awrs_smc on pattern_matching with tiny-random" in capsys.readouterr().out
    hf, vllm = outputs["hf"], outputs["vllm"]
    assert set(hf["run_key"]).isdisjoint(vllm["run_key"])  # the engine is part of a run's identity
    assert hf["status"].tolist() == vllm["status"].tolist()
    for a, b in zip(hf["output"], vllm["output"], strict=True):
        a, b = json.loads(a), json.loads(b)
        texts = [[r["response"] for r in o["responses"]] for o in (a, b)]
        assert texts[0] == texts[1]
        for ra, rb in zip(a["responses"], b["responses"], strict=True):
            assert rb["weight"] == pytest.approx(ra["weight"], abs=1e-3)
    assert hf["weighted_accuracy"].tolist() == pytest.approx(vllm["weighted_accuracy"].tolist())
