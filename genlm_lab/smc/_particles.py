"""Particle helpers the inference algorithms share: argument checks, weights, liveness, copies.

Each function reads or changes a list of particles (`smc.Model` instances);
none knows about the loop that steps them (`_run.run_particles`).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np


def check_n(name: str, value: Any) -> int:
    """`value` as an int, or ValueError naming `name` unless it is a positive int."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return int(value)


def check_model(model: Any) -> None:
    """TypeError, with the fix, for a model class or a model whose base was not initialised."""
    if isinstance(model, type):
        raise TypeError(
            f"got the class {model.__name__}, not a model: pass an instance, e.g. "
            f"{model.__name__}(...)"
        )
    if not hasattr(model, "weight"):
        raise TypeError(
            f"{type(model).__name__} has no weight: its __init__ must call "
            "super().__init__() (Model.__init__ sets weight, finished and twist_amount)"
        )


def seed_param(seed: Any) -> int | None:
    """The seed as the record keeps it: an int seed (numpy ints too), else None."""
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        return int(seed)
    return None


def weights_of(particles: Sequence[Any]) -> np.ndarray:
    """The particles' log-weights as a float64 array."""
    return np.array([float(p.weight) for p in particles], dtype=np.float64)


def checked_weights(particles: Sequence[Any], step: int) -> np.ndarray:
    """`weights_of(particles)`, or ValueError naming the first particle with a NaN or +inf weight.

    Such a weight cannot be compared, resampled or averaged: left alone it
    reads as weight zero in some sums and poisons others (log_ml, ESS).
    """
    weights = weights_of(particles)
    bad = np.flatnonzero(np.isnan(weights) | (weights == math.inf))
    if bad.size:
        i = int(bad[0])
        try:
            contents = repr(serialized(particles[i]))
        except Exception:  # noqa: BLE001 - the message must not hide the weight
            contents = "?"
        when = "before the first step" if step == 0 else f"after step {step}"
        raise ValueError(
            f"particle {i} ({contents}) has log-weight {weights[i]} {when}; log-weights must "
            "be finite or -inf. Change weights through score / observe / condition, which "
            "check their argument, rather than by assigning `weight`."
        )
    return weights


def is_alive(particle: Any) -> bool:
    """A particle that still steps: not done and not of weight zero."""
    return not particle.done_stepping() and particle.weight > -math.inf


def untwist_finished(particles: Sequence[Any]) -> None:
    """Remove the twist of every particle that is done: it has no next step to remove it.

    `finish()` untwists, but a particle may also end through `done_stepping()`
    or `finished = True`, or twist after finishing; its twist must not stay
    in the final weights (and so in `log_ml`).
    """
    for p in particles:
        if p.done_stepping():
            p.untwist()


def clone_all(particles: Sequence[Any], indices: Iterable[int]) -> list[Any]:
    """`particles[i]` for each index: the first use of a particle reuses it, later ones copy."""
    used: set[int] = set()
    out = []
    for i in indices:
        i = int(i)
        out.append(particles[i] if i not in used else copy.deepcopy(particles[i]))
        used.add(i)
    return out


def serialized(particle: Any) -> Any:
    """`particle.string_for_serialization()`, or `str(particle)` for a model without one.

    `Model.string_for_serialization` returns `str(self)`; a duck-typed model
    (one with `step`, `done_stepping`, `untwist` and `weight` but no `Model`
    base, as genlm-control's tests use) gets the same default.
    """
    method = getattr(particle, "string_for_serialization", None)
    return str(particle) if method is None else method()


def contents_of(particles: Sequence[Any]) -> list[str]:
    """`string_for_serialization()` of each particle; TypeError naming one that is not text."""
    out = [serialized(p) for p in particles]
    for i, text in enumerate(out):
        if not isinstance(text, str):
            raise TypeError(
                f"particle {i}: {type(particles[i]).__name__}.string_for_serialization() "
                f"returned {type(text).__name__} ({text!r:.60}); it must return str"
            )
    return out


def step_extras(particles: Sequence[Any]) -> list[Any] | None:
    """Each particle's `step_extras` (JSON-able details of its last step), or None if none has any.

    A model that sets `self.step_extras` in `step` gets it into the step
    entry's "extras" list (one item per particle, None where unset). The
    attribute is consumed: reset to None once recorded, so a particle that
    did not step (it had finished) shows None in later steps.
    """
    out = [getattr(p, "step_extras", None) for p in particles]
    if all(x is None for x in out):
        return None
    for p in particles:
        if getattr(p, "step_extras", None) is not None:
            p.step_extras = None
    return out


def reachable(particles: Sequence[Any], match: Callable[[Any], bool], depth: int = 5) -> list[Any]:
    """Objects that `match`, found by walking the first particle's attributes and containers.

    The walk descends through `__dict__`s, dicts, lists, tuples and sets (at
    most 64 items each, `depth` levels deep) and stops at a match: the way a
    run finds the LM backends a model holds without the model naming them.
    Each object is listed once.
    """
    found: dict[int, Any] = {}

    def visit(value: Any, depth: int) -> None:
        if match(value):
            found[id(value)] = value
            return
        if depth == 0 or isinstance(value, (str, bytes, int, float, np.ndarray)):
            return
        if isinstance(value, dict):
            items = list(value.values())
        elif isinstance(value, (list, tuple, set, frozenset)):
            items = list(value)
        else:
            items = list(getattr(value, "__dict__", {}).values())
        for item in items[:64]:
            visit(item, depth - 1)

    for particle in particles[:1]:
        visit(particle, depth)
    return list(found.values())


def resettable_backends(particles: Sequence[Any]) -> list[Any]:
    """LM-like objects with a callable `reset_async_queries` (to drop queued requests)."""
    return reachable(
        particles, lambda v: callable(getattr(v, "reset_async_queries", None)), depth=2
    )


def counting_backends(particles: Sequence[Any]) -> list[Any]:
    """LM backends whose `stats` dict counts "batches" and "cache_hits" (for the profile)."""

    def counts(value: Any) -> bool:
        stats = getattr(value, "stats", None)
        return isinstance(stats, dict) and "batches" in stats and "cache_hits" in stats

    return reachable(particles, counts, depth=5)
