"""run_evaluation: concurrent == sequential, failures stay local, resume and re-scoring, shards."""

import asyncio

import pytest
from _eval_toys import EndsWithB, ToyDataset, toy_domain, toy_lm

from genlm_lab.eval import (
    EvaluationResult,
    Method,
    ModelOutput,
    ModelResponse,
    ResultsStore,
    parse_shard,
    run_evaluation,
)

PATTERNS = ["a+b", "(ab)+", "c?a+", "[ab]{2}", "(a|c)b?"]


def _outputs(results):
    return [
        [None if o is None else [(r.response, r.weight) for r in o.responses] for o in outs]
        for outs in results["all_instance_outputs"]
    ]


@pytest.mark.parametrize("kind", ["smc", "awrs_smc", "sample_rerank"])
async def test_concurrent_runs_equal_sequential_runs(kind):
    # Sample-rerank needs patterns that plain samples hit, or every output is empty.
    domain = toy_domain(["[abc]*", "a.*", "[ab]+"] if kind == "sample_rerank" else PATTERNS)
    lm = toy_lm()
    method = Method(kind=kind, n_particles=8, max_tokens=5)
    common = dict(dataset=domain.dataset, evaluator=domain.evaluator, n_replicates=2)
    seq = await run_evaluation(model=method.adaptor(domain, lm), max_concurrency=1, **common)
    conc = await run_evaluation(model=method.adaptor(domain, lm), max_concurrency=10, **common)
    assert _outputs(seq) == _outputs(conc)
    assert seq["average_weighted_accuracy"] == conc["average_weighted_accuracy"]
    # Replicates differ (their seeds do), so the comparison above is not vacuous.
    assert any(o[0] != o[1] for o in _outputs(seq))


async def test_concurrency_really_overlaps_instances():
    running, peak = 0, 0

    async def model(instance, output_dir, replicate):
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.01)
        running -= 1
        return ModelOutput(responses=[ModelResponse(response="b", weight=1.0)])

    await run_evaluation(ToyDataset(["x"] * 12), model, EndsWithB(), max_concurrency=4)
    assert peak == 4


async def test_a_broken_instance_and_a_broken_checker_fail_alone(tmp_path):
    class Picky(EndsWithB):
        def evaluate_sample(self, instance, response):
            if instance.pattern == "bad-checker":
                raise RuntimeError("checker exploded")
            return super().evaluate_sample(instance, response)

    async def model(instance, output_dir, replicate):
        if instance.pattern == "bad-model":
            raise ValueError("no answer for this one")
        return ModelOutput(responses=[ModelResponse(response="ab", weight=1.0)])

    dataset = ToyDataset(["ok", "bad-model", "ok", "bad-checker"])
    db = tmp_path / "r.sqlite"
    results = await run_evaluation(
        dataset, model, Picky(), store=db, max_concurrency=4, model_id="fixed answers"
    )
    assert results["n_errors"] == 2
    assert results["average_weighted_accuracy"] == 1.0  # the two good instances
    with ResultsStore(db) as store:
        runs = store.runs_frame().set_index("instance_id")
    assert runs.loc["1", "status"] == "error"
    assert "model: ValueError: no answer for this one" in runs.loc["1", "error"]
    assert "evaluator: RuntimeError: checker exploded" in runs.loc["3", "error"]
    assert (runs.loc[["0", "2"], "status"] == "finished").all()


async def test_stored_runs_are_reused_and_rescored(tmp_path):
    calls = []

    async def model(instance, output_dir, replicate):
        calls.append((instance.instance_id, replicate))
        return ModelOutput(
            responses=[
                ModelResponse(response="ab", weight=0.5),
                ModelResponse(response="a", weight=0.5),
            ]
        )

    db = tmp_path / "r.sqlite"
    dataset = ToyDataset(["x", "y", "z"])
    named = {"store": db, "method": "m", "model_id": "fixed answers v1"}
    first = await run_evaluation(dataset, model, EndsWithB(), max_instances=2, **named)
    assert len(calls) == 2 and first["average_weighted_accuracy"] == 0.5
    again = await run_evaluation(dataset, model, EndsWithB(), **named)
    assert len(calls) == 3  # only the new instance ran
    assert again["all_instance_results"][0] == first["all_instance_results"][0]

    class EndsWithA(EndsWithB):
        def evaluate_sample(self, instance, response):
            ok = response.endswith("a")
            return EvaluationResult(score=int(ok), desc="a")

    # Another evaluator is part of a run's identity: its outputs are re-scored, as new runs.
    rescored = await run_evaluation(dataset, model, EndsWithA(), overwrite_results=True, **named)
    assert len(calls) == 3 and rescored["average_weighted_accuracy"] == 0.5
    with ResultsStore(db) as store:
        runs = store.to_pandas("runs")
        scores = store.to_pandas("responses").groupby("run_id")["score"].apply(list)
    assert len(runs) == 6  # the runs scored by EndsWithB stay
    assert scores.tolist() == [[1.0, 0.0]] * 3 + [[0.0, 1.0]] * 3
    await run_evaluation(
        dataset, model, EndsWithB(), overwrite_results=True, overwrite_outputs=True, **named
    )
    assert len(calls) == 6
    with ResultsStore(db) as store:
        assert len(store.to_pandas("runs")) == 6


async def test_output_dir_holds_one_sqlite_file(tmp_path):
    async def model(instance, output_dir, replicate):
        assert output_dir == str(tmp_path)
        return ModelOutput(responses=[ModelResponse(response="b", weight=1.0)])

    await run_evaluation(
        ToyDataset(["x", "y"]), model, EndsWithB(), output_dir=tmp_path, model_id="b"
    )
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(("-wal", "-shm"))) == [
        "results.sqlite"
    ]


def test_parse_shard():
    assert parse_shard("1/4") == (1, 4)
    for bad in ("4/4", "x", "1/0", "-1/3"):
        with pytest.raises(ValueError):
            parse_shard(bad)


async def test_on_result_sees_every_run():
    rows = []

    async def model(instance, output_dir, replicate):
        return ModelOutput(responses=[ModelResponse(response="b", weight=1.0)])

    await run_evaluation(
        ToyDataset(["x", "y"]), model, EndsWithB(), n_replicates=3, on_result=rows.append
    )
    assert sorted((r["instance_id"], r["replicate"]) for r in rows) == [
        (i, r) for i in "01" for r in range(3)
    ]
    assert all(r["weighted_accuracy"] == 1.0 for r in rows)
