"""genlm-eval's data model: instances, datasets, model outputs, evaluators.

The names and semantics follow genlm-eval so that its cookbook code ports
unchanged: a `Dataset` yields `Instance`s (pydantic models with an
`instance_id`); a model adaptor turns an instance into a `ModelOutput`, a list
of weighted `ModelResponse`s (the posterior over answers); an `Evaluator`
scores one response (`evaluate_sample`) and the whole ensemble
(`evaluate_ensemble`: the weighted accuracy, the sum of weight x score).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import Any, Generic, Protocol, TypeVar

from pydantic import BaseModel

__all__ = [
    "Dataset",
    "EvaluationResult",
    "Evaluator",
    "Instance",
    "ModelAdaptor",
    "ModelOutput",
    "ModelResponse",
]


class Instance(BaseModel):
    """One task of a dataset; subclasses add the fields the task needs."""

    instance_id: int | str


T = TypeVar("T", bound=Instance)


class Dataset(Generic[T], ABC):
    """An iterable of instances that share one schema (an `Instance` subclass)."""

    @abstractmethod
    def __iter__(self) -> Iterator[T]:
        """Yield the instances in a fixed order."""

    @property
    @abstractmethod
    def schema(self) -> type[T]:
        """The `Instance` subclass every instance is."""


class ModelResponse(BaseModel):
    """One answer with its posterior weight (and optional details)."""

    response: Any
    weight: float
    metadata: dict[str, Any] | None = None


class ModelOutput(BaseModel):
    """The weighted answers a method gave for one instance, and how long it took."""

    responses: list[ModelResponse]
    runtime_seconds: float | None = None
    metadata: dict[str, Any] | None = None


class ModelAdaptor(Protocol):
    """What `run_evaluation` calls: `await model(instance, output_dir, replicate)`."""

    async def __call__(
        self, instance: Instance, output_dir: str | None, replicate: int
    ) -> ModelOutput:
        """Answer one instance (replicate `replicate`) with weighted responses."""
        ...


class EvaluationResult(BaseModel):
    """The score of one response (1 right, 0 wrong, or anything between), with a description."""

    score: float
    desc: str
    metadata: dict[str, Any] = {}


class Evaluator(Generic[T], ABC):
    """Scores responses to a dataset's instances.

    Attributes:
        version: part of every stored run's identity: bump it when the checker
            changes, so that stored runs are scored afresh instead of reused.
    """

    version: str = "1"

    @abstractmethod
    def evaluate_sample(self, instance: T, response: Any) -> EvaluationResult:
        """Score one response (the `response` field of a `ModelResponse`)."""

    def evaluate_ensemble(self, instance: T, output: ModelOutput) -> dict[str, Any]:
        """Score every response and sum weight x score: the posterior-weighted accuracy.

        Returns:
            {"weighted_accuracy", "runtime_seconds", "results": one dict per response}.

        Raises:
            ValueError: if a weight or a score is NaN or negative infinity.
        """
        weighted_accuracy = 0.0
        results = []
        for i, response in enumerate(output.responses):
            result = self.evaluate_sample(instance, response.response)
            score, weight = float(result.score), float(response.weight)
            if not (math.isfinite(score) and math.isfinite(weight)):
                raise ValueError(
                    f"response {i}: weight {weight} and score {score} must be finite numbers"
                )
            weighted_accuracy += score * weight
            results.append({"score": score, "desc": result.desc, "metadata": result.metadata})
        return {
            "weighted_accuracy": weighted_accuracy,
            "runtime_seconds": output.runtime_seconds,
            "results": results,
        }
