"""genlm-eval's data model: ensemble scoring, JSON round trips, and cookbook code that ports."""

import math

import pytest
from _eval_toys import EndsWithB, ToyDataset, ToyInstance

from genlm_lab.eval import EvaluationResult, ModelOutput, ModelResponse, run_evaluation


def test_evaluate_ensemble_is_the_weighted_sum_of_scores():
    output = ModelOutput(
        responses=[
            ModelResponse(response="ab", weight=0.25),
            ModelResponse(response="a", weight=0.5),
            ModelResponse(response="bb", weight=0.25),
        ],
        runtime_seconds=1.5,
    )
    result = EndsWithB().evaluate_ensemble(ToyInstance(instance_id=0, pattern="x"), output)
    assert result["weighted_accuracy"] == pytest.approx(0.5)
    assert [r["score"] for r in result["results"]] == [1, 0, 1]
    assert result["runtime_seconds"] == 1.5


def test_evaluate_ensemble_refuses_nan_weights():
    output = ModelOutput(responses=[ModelResponse(response="b", weight=math.nan)])
    with pytest.raises(ValueError, match="weight nan"):
        EndsWithB().evaluate_ensemble(ToyInstance(instance_id=0, pattern="x"), output)


def test_model_output_round_trips_through_json():
    output = ModelOutput(
        responses=[ModelResponse(response={"a": [1, 2]}, weight=1.0, metadata={"k": "v"})],
        runtime_seconds=0.1,
    )
    assert ModelOutput.model_validate_json(output.model_dump_json()) == output


async def test_cookbook_adaptor_runs_without_a_store():
    """The shape of genlm-eval's custom-domain cookbook: a plain async adaptor, no store."""

    async def model(instance, output_dir, replicate):
        return ModelOutput(
            responses=[
                ModelResponse(response="ab", weight=0.75),
                ModelResponse(response="ba", weight=0.25),
            ]
        )

    results = await run_evaluation(
        dataset=ToyDataset(["a", "b", "c"]), model=model, evaluator=EndsWithB(), n_replicates=2
    )
    assert results["n_instances"] == 3
    assert results["average_weighted_accuracy"] == pytest.approx(0.75)
    assert len(results["all_instance_results"][0]) == 2
    assert isinstance(results["all_instance_outputs"][0][0], ModelOutput)


async def test_overwrite_outputs_needs_overwrite_results():
    async def model(instance, output_dir, replicate):
        return ModelOutput(responses=[])

    with pytest.raises(ValueError, match="overwrite_results"):
        await run_evaluation(ToyDataset(["a"]), model, EndsWithB(), overwrite_outputs=True)


def test_evaluation_result_defaults():
    assert EvaluationResult(score=1, desc="ok").metadata == {}
