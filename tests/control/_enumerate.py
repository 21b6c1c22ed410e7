"""Exact enumeration of a sampler's random choices through its `draw=` hook."""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from typing import Any


async def enumerate_runs(
    run: Callable[[Callable[[dict], Any]], Awaitable[Any]],
) -> list[tuple[float, Any]]:
    """Every outcome of `run(draw)` over every sequence of choices, with its probability.

    `run` calls `draw(chart)` for each random choice; `chart` maps the keys on
    offer to their probabilities. A depth-first walk replays a script of
    choices (index into the chart's keys) and branches where the script ends,
    so the probabilities of the outcomes returned sum to one.
    """
    outcomes: list[tuple[float, Any]] = []
    scripts: list[list[int]] = [[]]
    while scripts:
        script = scripts.pop()
        made: list[int] = []
        widths: list[int] = []
        prob = 1.0

        def draw(chart: dict, script=script, made=made, widths=widths) -> Any:
            nonlocal prob
            keys = list(chart)
            assert abs(sum(chart.values()) - 1.0) < 1e-9, "a draw is offered probabilities"
            pick = script[len(made)] if len(made) < len(script) else 0
            made.append(pick)
            widths.append(len(keys))
            prob *= chart[keys[pick]]
            return keys[pick]

        outcome = await run(draw)
        outcomes.append((prob, outcome))
        for depth in range(len(script), len(made)):
            for other in range(1, widths[depth]):
                scripts.append(made[:depth] + [other])
    return outcomes


async def enumerate_smc(sampler: Any, max_tokens: int, critic: Any = None) -> dict[tuple, float]:
    """E[exp(w) 1{run returns s}] per flat sequence s, summed exactly over every one-particle run.

    One particle with `ess_threshold=0` never resamples, so `SMC` is then
    sequential importance sampling through its real step (units, EOS, forced
    EOS, critic): for a properly weighted sampler the mass of s is the
    target's `complete(s)` (times the critic's). The sampler's draws are
    scripted through `sample_with_info(context, draw)`.
    """
    from genlm_lab.control import SMC, flatten_units

    base = sampler.sample_with_info

    async def one_run(draw: Callable[[dict], Any]) -> tuple[tuple, float]:
        sampler.sample_with_info = lambda context, _=None: base(context, draw)
        try:
            sequences = await SMC(sampler, critic, record_factors=False)(
                1, 0.0, max_tokens, seed=0, budget=False
            )
        finally:
            del sampler.sample_with_info
        context, logw = sequences[0]
        return tuple(flatten_units(context)), logw

    mass: dict[tuple, float] = {}
    for prob, (sequence, logw) in await enumerate_runs(one_run):
        if logw > -math.inf:
            mass[sequence] = mass.get(sequence, 0.0) + prob * math.exp(logw)
    return mass
