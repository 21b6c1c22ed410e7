"""Timing a run's potentials: what a profiled SMC run (`SMC(..., profile=True)`) measures.

Each factor's methods (and the critic's) are replaced on the instances by
timed ones for the run, under the factor's name, and put back after it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["time_factors"]

#: The potential methods a profiled run times, by factor name.
_TIMED = (
    "prefix",
    "complete",
    "logw_next",
    "score",
    "batch_prefix",
    "batch_complete",
    "batch_logw_next",
    "batch_score",
)


def time_factors(
    names: Sequence[str], factors: Sequence[Any], critic: Any, profiler: Any
) -> Callable[[], None]:
    """Time each factor's methods under its name (and the critic's) for a profiled run.

    The methods of the target's factors (and of the critic) are replaced
    on the instances by timed ones for the run; the returned function
    puts them back. LM factors are not listed as factors for the
    "slow_factor" alarm: their forwards are what a run is meant to cost.
    """
    undo: list[tuple[Any, str]] = []

    def wrap(obj: Any, name: str, critic: bool) -> None:
        lm = any(
            hasattr(getattr(obj, attr, None), "next_token_logprobs") for attr in ("model", "llm")
        )
        for method in _TIMED:
            original = getattr(obj, method, None)
            if original is None or method in vars(obj):
                continue
            short = method.removeprefix("batch_")
            if short == "logw_next" and getattr(obj, "is_boolean", False):
                short = "mask"
            label = "critic" if critic else f"{name}.{short}"
            try:
                setattr(obj, method, profiler.timed_method(original, label))
            except AttributeError:  # no instance dict (slots): left untimed
                continue
            undo.append((obj, method))
            if not (lm or critic):
                profiler.factors[label] = name

    lms = {}
    for name, factor in zip(names, factors, strict=True):
        wrap(factor, name, critic=False)
        for attr in ("model", "llm"):  # an LM factor's backend, for its forward counters
            backend = getattr(factor, attr, None)
            if isinstance(getattr(backend, "stats", None), dict):
                lms[id(backend)] = backend
    profiler.lms = list(lms.values())
    if critic is not None:
        wrap(critic, "critic", critic=True)
        inner = getattr(critic, "potential", None)  # an autobatched critic's own
        if inner is not None:
            wrap(inner, "critic", critic=True)

    def restore() -> None:
        for obj, method in undo:
            vars(obj).pop(method, None)

    return restore
