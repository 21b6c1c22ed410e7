"""`ModelSpec`: how a Ray replica builds its model, picklable so it travels instead of the weights.

A spec's `load` runs once per replica (`genlm_lab.eval.ray_replica`); its
`adapt` turns the loaded model into one evaluation's adaptor, so replicas
stay warm between evaluations of the same model (`key`). `EvaluationJob`
is what every task of one evaluation shares (sent once to Ray's object store).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

__all__ = ["EvaluationJob", "ModelSpec", "method_model"]


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
class EvaluationJob:
    """One evaluation's part that every task shares (sent once to the object store)."""

    adapt: Callable[[Any], Any] | None
    evaluator: Any
    method: Any
    model_id: Any
    model_name: str | None


def method_model(
    method: Any,
    domain: Any,
    domain_name: str,
    llm: Any,
    model_name: str,
    *,
    cluster: Any = None,
    backend: str | None = None,
    domain_options: dict | None = None,
) -> Any:
    """What runs `method` on `domain`: its adaptor on `llm` here, or, with a Ray `cluster`,
    the `ModelSpec` each actor builds its own replica from (the domain by `domain_name`
    with `domain_options`, the model by `model_name`), so no weights travel."""
    if cluster is None:
        return method.adaptor(domain, llm, model_name=model_name)
    options = domain_options or {}
    return ModelSpec.method(method, domain_name, model_name, backend=backend, **options)
