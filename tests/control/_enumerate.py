"""Exact enumeration of a sampler's random choices through its `draw=` hook."""

from __future__ import annotations

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
