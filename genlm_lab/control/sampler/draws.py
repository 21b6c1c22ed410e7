"""`draw_from`: one token drawn from a `LazyWeights` row, concurrent callers drawn as one batch.

genlm-control 0.4's utility for custom samplers. Callers that reach
`draw_from` in the same turns of one event loop are gathered: the first
holds the batch open until a loop pass adds nobody, then draws every row
of the same width with one call of the process-wide draw method (a
function from a `[V]` or `[N, V]` tensor of log-weights to indices over
the last dimension). The draw methods use torch's global generator, so
`torch.manual_seed` makes them reproducible; genlm_lab's own samplers draw
from their seeded numpy streams instead and do not go through here.

A failure while drawing a group (rows that cannot be stacked) fails every
caller of that group with one `RuntimeError`; other groups get their draws.
If the caller holding the batch is cancelled first, the others get
`BatchAbandoned` rather than a cancellation they never asked for.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from genlm_lab.control.core.util import BatchAbandoned
from genlm_lab.control.core.weights import LazyWeights

__all__ = [
    "DRAW_METHODS",
    "draw_from",
    "draw_indices",
    "gumbel_max",
    "inverse_cdf",
    "multinomial",
    "set_draw_method",
]


def gumbel_max(logps: torch.Tensor) -> torch.Tensor:
    """argmax of log-weights plus Gumbel noise: an exact categorical draw (the default)."""
    noise = -torch.log(-torch.log(torch.rand_like(logps).clamp_(min=1e-38)))
    return (logps + noise).argmax(dim=-1)


def multinomial(logps: torch.Tensor) -> torch.Tensor:
    """`torch.multinomial` on the normalised probabilities of each row."""
    probs = torch.softmax(logps, dim=-1)
    return torch.multinomial(probs.reshape(-1, probs.shape[-1]), 1).reshape(probs.shape[:-1])


def inverse_cdf(logps: torch.Tensor) -> torch.Tensor:
    """One uniform per row, looked up in the row's cumulative probabilities."""
    cdf = torch.softmax(logps, dim=-1).cumsum(dim=-1)
    u = torch.rand((*cdf.shape[:-1], 1), dtype=cdf.dtype) * cdf[..., -1:]
    index = torch.searchsorted(cdf, u, right=True).squeeze(-1)
    return index.clamp_(max=cdf.shape[-1] - 1)


#: The draw methods by name, for `set_draw_method`.
DRAW_METHODS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "gumbel_max": gumbel_max,
    "multinomial": multinomial,
    "inverse_cdf": inverse_cdf,
}

_draw_method: Callable[[torch.Tensor], torch.Tensor] = gumbel_max


def set_draw_method(method: str | Callable[[torch.Tensor], torch.Tensor]) -> None:
    """Choose the draw method `draw_from` and `draw_indices` use, process-wide.

    Raises:
        ValueError: for a name not in `DRAW_METHODS`.
    """
    global _draw_method
    if isinstance(method, str):
        if method not in DRAW_METHODS:
            raise ValueError(f"unknown draw method {method!r}; known: {sorted(DRAW_METHODS)}")
        method = DRAW_METHODS[method]
    _draw_method = method


def draw_indices(weights: Any) -> torch.Tensor:
    """Indices drawn over the last dimension of log-weights: a scalar for `[V]`, `[N]` for `[N, V]`."""
    return _draw_method(torch.as_tensor(np.asarray(weights)))


def _solo(row: LazyWeights, draw: Callable, target: LazyWeights | None) -> tuple:
    log_z = row.sum()
    logps = row.spawn(row.weights - log_z)
    token = draw(logps.exp().materialize())
    logp = logps[token]
    return token, (log_z if target is None else target[token] - logp), logp


_BATCHES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


async def draw_from(
    lazyweights: LazyWeights, draw: Callable | None = None, target: LazyWeights | None = None
) -> tuple[Any, float, float]:
    """Draw a token from a row of log-weights: `(token, logw, logp)`.

    Args:
        lazyweights: the row (log-weights) to draw from.
        draw: a custom draw, given the normalised probabilities as a `Chart`
            and returning a token; it skips the batch.
        target: a row over the same tokens: the draw becomes an importance
            draw, weighted `target[token] - logp`. Without it the weight is
            the row's log normaliser.
    """
    if draw is not None:
        return _solo(lazyweights, draw, target)
    if not lazyweights.is_log:
        raise ValueError("draw_from takes log-weights (LazyWeights with is_log)")
    loop = asyncio.get_running_loop()
    future = loop.create_future()
    queue = _BATCHES.get(loop)
    if queue is not None:  # someone holds the batch open: join it
        queue.append((lazyweights, target, future))
        return await future
    queue = _BATCHES[loop] = [(lazyweights, target, future)]
    try:
        seen = 0
        while seen != len(queue):  # hold the batch until a loop pass adds nobody
            seen = len(queue)
            await asyncio.sleep(0)
    except BaseException as error:
        del _BATCHES[loop]
        for *_, other in queue[1:]:
            if not other.done():
                abandoned = BatchAbandoned(f"the caller holding this draw batch died: {error!r}")
                abandoned.__cause__ = error
                other.set_exception(abandoned)
        raise
    del _BATCHES[loop]
    _flush(queue)
    return await future


def _flush(queue: list[tuple]) -> None:
    """Draw every queued row, one draw-method call per group of rows of the same width."""
    groups: dict[int, list[tuple]] = {}
    for entry in queue:
        groups.setdefault(entry[0].weights.shape[-1], []).append(entry)
    for entries in groups.values():
        try:
            logps = torch.as_tensor(np.stack([e[0].weights for e in entries]))
            index = _draw_method(logps).tolist()
            log_z = torch.logsumexp(logps, dim=-1).tolist()
        except Exception as error:  # noqa: BLE001 - handed to every caller of the group
            failure = RuntimeError(f"drawing a batch of {len(entries)} rows failed: {error}")
            failure.__cause__ = error
            for *_, future in entries:
                if not future.done():
                    future.set_exception(failure)
            continue
        for (row, target, future), i, z in zip(entries, index, log_z, strict=True):
            token = row.decode[i]
            logp = float(row.weights[i]) - z
            if not future.done():  # its caller may have been cancelled meanwhile
                future.set_result((token, z if target is None else target[token] - logp, logp))
