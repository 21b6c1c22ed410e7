"""Slow, obviously correct references for the constraint masks, and helpers to walk contexts."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence

import numpy as np
import regex


def regex_viable(pattern: bytes) -> Callable[[bytes], bool]:
    """`text -> bool`: some continuation of `text` fully matches `pattern` (regex partial match)."""
    compiled = regex.compile(pattern)
    return lambda text: compiled.fullmatch(text, partial=True) is not None


def regex_complete(pattern: bytes) -> Callable[[bytes], bool]:
    compiled = regex.compile(pattern)
    return lambda text: compiled.fullmatch(text) is not None


def reference_mask(
    tokens: Sequence[bytes],
    text: bytes,
    viable: Callable[[bytes], bool],
    complete: Callable[[bytes], bool],
    special: Sequence[int] = (),
) -> np.ndarray:
    """Bool mask over tokens + EOS: a token is allowed iff text + its bytes stays viable."""
    skip = set(special)
    out = np.zeros(len(tokens) + 1, dtype=bool)
    for i, token in enumerate(tokens):
        out[i] = i not in skip and viable(text + bytes(token))
    out[-1] = complete(text)
    return out


def random_walk(
    tokens: Sequence[bytes],
    viable: Callable[[bytes], bool],
    steps: int,
    rng: random.Random,
    pool: Sequence[int] | None = None,
) -> list[list[int]]:
    """Contexts (token index lists) visited by a walk that mostly keeps to viable tokens.

    Each step picks a random token from `pool` (default all) that keeps the text
    viable; one time in five it tries any token, so dead contexts are visited too.
    """
    pool = list(range(len(tokens))) if pool is None else list(pool)
    context: list[int] = []
    text = b""
    visited = [[]]
    for _ in range(steps):
        if rng.random() < 0.2:
            choice = rng.choice(pool)
        else:
            alive = [i for i in pool if viable(text + tokens[i])]
            if not alive:
                break
            choice = rng.choice(alive)
        if not viable(text + tokens[choice]):
            visited.append([*context, choice])  # a dead context, then carry on from the live one
            continue
        context.append(choice)
        text += tokens[choice]
        visited.append(list(context))
    return visited


def as_mask(weights: np.ndarray) -> np.ndarray:
    """Log-weights 0 / -inf as a bool mask (and a check that nothing else occurs)."""
    weights = np.asarray(weights)
    assert np.all((weights == 0) | (weights == -math.inf)), (
        "a boolean potential gave another weight"
    )
    return weights == 0
