"""Potentials built from others: `Product` (`p * q`), `Power` (`p ** a`), `AutoBatched`."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from genlm_lab.control.potential import Potential
from genlm_lab.control.weights import LazyWeights

__all__ = ["AutoBatched", "Power", "Product"]


def _same_vocabulary(p: Potential, q: Potential) -> None:
    """ValueError unless `p` and `q` have the same tokens in the same order and the same EOS."""
    if p.vocab is q.vocab or (len(p.vocab) == len(q.vocab) and p.vocab == q.vocab):
        if p.eos != q.eos:
            raise ValueError(f"{p.name} ends with {p.eos!r} but {q.name} with {q.eos!r}")
        return
    diff = next(
        (i for i, (a, b) in enumerate(zip(p.vocab, q.vocab, strict=False)) if a != b),
        min(len(p.vocab), len(q.vocab)),
    )
    raise ValueError(
        f"cannot multiply {p.name} ({len(p.vocab)} tokens) and {q.name} ({len(q.vocab)} "
        f"tokens): their vocabularies differ (first at index {diff}). Coerce one onto the "
        "other first, e.g. `regex.coerce(llm, f=b''.join)`"
    )


class Product(Potential):
    """The product of two potentials over the same vocabulary: log-weights add.

    The factors' calls run concurrently, so an LM forward and a grammar mask
    of one step overlap.
    """

    def __init__(self, p1: Potential, p2: Potential) -> None:
        _same_vocabulary(p1, p2)
        self.p1 = p1
        self.p2 = p2
        self._share_vocabulary(p1)
        self.is_boolean = p1.is_boolean and p2.is_boolean

    def _default_name(self) -> str:
        return " * ".join(f.name for f in self.factors())

    def factors(self) -> list[Potential]:
        return [*self.p1.factors(), *self.p2.factors()]

    async def prefix(self, context: Sequence[Any]) -> float:
        a, b = await asyncio.gather(self.p1.prefix(context), self.p2.prefix(context))
        return a + b

    async def complete(self, context: Sequence[Any]) -> float:
        a, b = await asyncio.gather(self.p1.complete(context), self.p2.complete(context))
        return a + b

    async def logw_next(self, context: Sequence[Any]) -> LazyWeights:
        a, b = await asyncio.gather(self.p1.logw_next(context), self.p2.logw_next(context))
        return self.make_lazy_weights(a.weights + b.weights)

    async def batch_logw_next(self, contexts: Sequence[Sequence[Any]]) -> list[LazyWeights]:
        a, b = await asyncio.gather(
            self.p1.batch_logw_next(contexts), self.p2.batch_logw_next(contexts)
        )
        return [self.make_lazy_weights(x.weights + y.weights) for x, y in zip(a, b, strict=True)]

    async def batch_prefix(self, contexts: Sequence[Sequence[Any]]) -> np.ndarray:
        a, b = await asyncio.gather(self.p1.batch_prefix(contexts), self.p2.batch_prefix(contexts))
        return a + b

    async def batch_complete(self, contexts: Sequence[Sequence[Any]]) -> np.ndarray:
        a, b = await asyncio.gather(
            self.p1.batch_complete(contexts), self.p2.batch_complete(contexts)
        )
        return a + b

    def spawn(self) -> Product:
        return Product(self.p1.spawn(), self.p2.spawn())

    async def cleanup(self) -> None:
        await asyncio.gather(self.p1.cleanup(), self.p2.cleanup())

    def __repr__(self) -> str:
        return f"Product({self.p1!r}, {self.p2!r})"


class Power(Potential):
    """A potential with every log-weight multiplied by `exponent` (tempering; 0 stays 0).

    Raises:
        ValueError: unless `exponent` is a finite number > 0.
    """

    def __init__(self, potential: Potential, exponent: float) -> None:
        if isinstance(exponent, bool) or not isinstance(exponent, (int, float, np.floating)):
            raise ValueError(f"the exponent must be a number > 0, got {exponent!r}")
        exponent = float(exponent)
        if not math.isfinite(exponent) or exponent <= 0:
            raise ValueError(f"the exponent must be a finite number > 0, got {exponent}")
        self.potential = potential
        self.exponent = exponent
        self._share_vocabulary(potential)
        self.is_boolean = potential.is_boolean

    def _default_name(self) -> str:
        return f"{self.potential.name}**{self.exponent:g}"

    async def prefix(self, context: Sequence[Any]) -> float:
        return self.exponent * await self.potential.prefix(context)

    async def complete(self, context: Sequence[Any]) -> float:
        return self.exponent * await self.potential.complete(context)

    async def logw_next(self, context: Sequence[Any]) -> LazyWeights:
        inner = await self.potential.logw_next(context)
        return self.make_lazy_weights(self.exponent * inner.weights)

    def spawn(self) -> Power:
        return Power(self.potential.spawn(), self.exponent)

    async def cleanup(self) -> None:
        await self.potential.cleanup()


class AutoBatched(Potential):
    """Sends concurrent `prefix` / `complete` / `logw_next` calls to the `batch_*` methods.

    Calls that arrive in the same turns of the event loop (e.g. one per SMC
    particle) go out as one batch, so a potential with a fast batched path
    (a single model forward, one parallel mask call) is used at its best.
    """

    def __init__(self, potential: Potential) -> None:
        self.potential = potential
        self._share_vocabulary(potential)
        self.is_boolean = potential.is_boolean
        self._queues: dict[str, list[tuple[Any, asyncio.Future]]] = {}
        self._running: set[asyncio.Task] = set()  # strong references until they finish

    def _default_name(self) -> str:
        return self.potential.name

    def factors(self) -> list[Potential]:
        return self.potential.factors()

    async def _enqueue(self, method: str, context: Sequence[Any]) -> Any:
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        queue = self._queues.setdefault(method, [])
        queue.append((list(context), future))
        if len(queue) == 1:
            # Two turns: let every particle task that is ready reach this point first.
            loop.call_soon(lambda: loop.call_soon(self._flush, method))
        return await future

    def _flush(self, method: str) -> None:
        batch = self._queues.pop(method, [])
        if batch:
            task = asyncio.ensure_future(self._run(method, batch))
            self._running.add(task)
            task.add_done_callback(self._running.discard)

    async def _run(self, method: str, batch: list[tuple[Any, asyncio.Future]]) -> None:
        contexts = [c for c, _ in batch]
        try:
            results = await getattr(self.potential, f"batch_{method}")(contexts)
        except Exception:
            # One bad context must not fail the others: retry each on its own.
            for context, future in batch:
                if future.done():
                    continue
                try:
                    result = await getattr(self.potential, method)(context)
                except Exception as error:  # noqa: BLE001 - handed to its caller
                    future.set_exception(error)
                else:
                    future.set_result(result)
            return
        for (_, future), result in zip(batch, results, strict=True):
            if not future.done():
                future.set_result(result)

    async def prefix(self, context: Sequence[Any]) -> float:
        return float(await self._enqueue("prefix", context))

    async def complete(self, context: Sequence[Any]) -> float:
        return float(await self._enqueue("complete", context))

    async def logw_next(self, context: Sequence[Any]) -> LazyWeights:
        return await self._enqueue("logw_next", context)

    async def score(self, context: Sequence[Any]) -> float:
        # The wrapped potential may score a last token faster than prefix (grammars do).
        return float(await self._enqueue("score", context))

    async def batch_score(self, contexts: Sequence[Sequence[Any]]) -> np.ndarray:
        return await self.potential.batch_score(contexts)

    async def batch_prefix(self, contexts: Sequence[Sequence[Any]]) -> np.ndarray:
        return await self.potential.batch_prefix(contexts)

    async def batch_complete(self, contexts: Sequence[Sequence[Any]]) -> np.ndarray:
        return await self.potential.batch_complete(contexts)

    async def batch_logw_next(self, contexts: Sequence[Sequence[Any]]) -> list[LazyWeights]:
        return await self.potential.batch_logw_next(contexts)

    def spawn(self) -> AutoBatched:
        return AutoBatched(self.potential.spawn())

    async def cleanup(self) -> None:
        await self.potential.cleanup()

    def to_autobatched(self) -> AutoBatched:
        return self
