"""One task: seeds that depend on the task only, its own generator, errors as rows, stored reuse."""

import json

import numpy as np
from _eval_toys import EndsWithB, ToyInstance

from genlm_lab.eval import ModelOutput, ModelResponse, ResultsStore, task_seed
from genlm_lab.eval.task import response_rows, reuse_run, run_task
from genlm_lab.smc import get_rng


def test_task_seeds_depend_on_the_task_only():
    assert task_seed(0, "d", "1", 0) == task_seed(0, "d", "1", 0)
    seeds = {task_seed(0, "d", str(i), r) for i in range(50) for r in range(3)}
    assert len(seeds) == 150


async def _draw(instance, output_dir, replicate):
    """An adaptor whose answer is a draw from the task's generator."""
    x = get_rng().random()
    text = f"{x:.12f}" + ("b" if x < 0.5 else "")
    return ModelOutput(responses=[ModelResponse(response=text, weight=1.0)], metadata={"x": 1})


async def test_a_task_runs_under_its_own_seeded_generator_and_is_scored():
    instance = ToyInstance(instance_id=0, pattern="a+b")
    x = np.random.default_rng(11).random()
    want = f"{x:.12f}" + ("b" if x < 0.5 else "")
    output, result, row = await run_task(_draw, EndsWithB(), instance, 0, 11, None)
    assert output.responses[0].response == want
    assert row["seed"] == 11 and row["status"] == "finished"
    assert row["weighted_accuracy"] == float(want.endswith("b")) == result["weighted_accuracy"]
    assert json.loads(row["output"])["responses"][0]["response"] == want
    assert response_rows(output, result)[0]["score"] == int(want.endswith("b"))


async def test_a_model_or_evaluator_that_raises_becomes_an_error_row():
    async def broken(instance, output_dir, replicate):
        raise ValueError("no answer")

    instance = ToyInstance(instance_id=0, pattern="a")
    output, result, row = await run_task(broken, EndsWithB(), instance, 0, 1, None)
    assert (output, result, row["status"]) == (None, None, "error")
    assert row["error"].startswith("model: ValueError: no answer (at test_task.py:")

    class Nan(EndsWithB):
        def evaluate_ensemble(self, instance, output):
            return {"weighted_accuracy": float("nan"), "results": []}

    output, result, row = await run_task(_draw, Nan(), instance, 0, 1, None)
    assert output is not None and result is None
    assert row["status"] == "error" and "is not finite" in row["error"]


async def test_a_stored_run_is_reused_or_rescored(tmp_path):
    instance = ToyInstance(instance_id=0, pattern="a")
    output, result, row = await run_task(_draw, EndsWithB(), instance, 0, 11, None)
    row.update(
        run_key="k",
        output_key="o",
        domain="toy",
        instance_id="0",
        method_hash="m",
        model_hash="h",
        instance_hash="i",
        evaluator={"class": "EndsWithB", "version": ""},
        replicate=0,
    )

    class Never(EndsWithB):
        def evaluate_sample(self, instance, response):
            return super().evaluate_sample(instance, "a")  # never ends with b

    with ResultsStore(tmp_path / "r.sqlite") as store:
        store.write_run(row, response_rows(output, result))
        stored = store.get_run("k")
        kept_row, kept_output, kept = reuse_run(store, Never(), instance, stored, rescore=False)
        assert kept["weighted_accuracy"] == row["weighted_accuracy"]
        assert kept_output.responses == output.responses
        _, _, rescored = reuse_run(store, Never(), instance, stored, rescore=True)
        assert rescored["weighted_accuracy"] == 0.0
        assert store.get_run("k")["weighted_accuracy"] == 0.0
