"""`MultiProcPotential`: a potential whose calls run in worker processes (CPU-bound checks).

Each worker builds its own copy of the potential once, from a picklable
factory and its arguments; every call is sent to a free worker and run
there with `asyncio.run`. Batches are split over the workers. Worth it for
costly pure-Python potentials (a parser, a checker); an LM on a GPU has
its own batching and should not be copied into several processes.

Workers are forked (the Linux default), so the factory may be a class
defined in a notebook or test module.
"""

from __future__ import annotations

import asyncio
import multiprocessing
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import numpy as np

from genlm_lab.control.core.weights import LazyWeights, WeightsBatch
from genlm_lab.control.potential.base import Potential

__all__ = ["MultiProcPotential"]

_WORKER_POTENTIAL: Potential | None = None


def _build(factory: Callable[..., Potential], args: tuple) -> None:
    global _WORKER_POTENTIAL
    _WORKER_POTENTIAL = factory(*args)


def _describe() -> tuple[list[Any], Any, Any]:
    p = _WORKER_POTENTIAL
    assert p is not None, "the worker's potential was not built"
    return list(p.vocab), p._token_type, p.eos


def _call(method: str, context: list[Any]) -> Any:
    """Run one method of the worker's potential; `logw_next` comes back as its weights only."""
    p = _WORKER_POTENTIAL
    assert p is not None, "the worker's potential was not built"
    result = asyncio.run(getattr(p, method)(context))
    if isinstance(result, LazyWeights):
        return np.asarray(result.weights)
    return float(result)


class MultiProcPotential(Potential):
    """`potential_factory(*factory_args)` built in each of `num_workers` processes; calls run there.

    Args:
        potential_factory: a picklable callable returning the potential (e.g. its class).
        factory_args: the arguments for `factory`.
        num_workers: worker processes (>= 1).

    Raises:
        ValueError: if num_workers < 1 or the factory does not build a Potential.
    """

    def __init__(
        self,
        potential_factory: Callable[..., Potential],
        factory_args: tuple = (),
        num_workers: int = 2,
    ) -> None:
        factory = potential_factory
        if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 1:
            raise ValueError(f"num_workers must be a positive int, got {num_workers!r}")
        self.factory, self.factory_args, self.num_workers = (
            factory,
            tuple(factory_args),
            num_workers,
        )
        self._pool = ProcessPoolExecutor(
            num_workers,
            mp_context=multiprocessing.get_context("fork"),
            initializer=_build,
            initargs=(factory, self.factory_args),
        )
        try:
            vocab, token_type, eos = self._pool.submit(_describe).result()
        except Exception as error:
            self._pool.shutdown(cancel_futures=True)
            raise ValueError(
                f"MultiProcPotential: {getattr(factory, '__name__', factory)!r} did not build a "
                f"Potential in a worker: {error}"
            ) from error
        super().__init__(vocab, token_type=token_type, eos=eos)

    async def _run(self, method: str, context: Sequence[Any]) -> Any:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, _call, method, list(context))

    async def prefix(self, context: Sequence[Any]) -> float:
        return await self._run("prefix", context)

    async def complete(self, context: Sequence[Any]) -> float:
        return await self._run("complete", context)

    async def score(self, context: Sequence[Any]) -> float:
        return await self._run("score", context)

    async def logw_next(self, context: Sequence[Any]) -> LazyWeights:
        return self.make_lazy_weights(await self._run("logw_next", context))

    async def _batch(self, method: str, contexts: Sequence[Sequence[Any]]) -> list[Any]:
        return list(await asyncio.gather(*(self._run(method, c) for c in contexts)))

    async def batch_prefix(self, contexts: Sequence[Sequence[Any]]) -> np.ndarray:
        return np.array(await self._batch("prefix", contexts), dtype=float)

    async def batch_complete(self, contexts: Sequence[Sequence[Any]]) -> np.ndarray:
        return np.array(await self._batch("complete", contexts), dtype=float)

    async def batch_score(self, contexts: Sequence[Sequence[Any]]) -> np.ndarray:
        return np.array(await self._batch("score", contexts), dtype=float)

    async def batch_logw_next(self, contexts: Sequence[Sequence[Any]]) -> WeightsBatch:
        rows = await self._batch("logw_next", contexts)
        return WeightsBatch(self.make_lazy_weights(r) for r in rows)

    def spawn(self) -> Potential:
        """Refused: a copy would start another pool of processes; build a new one explicitly."""
        raise ValueError(
            "MultiProcPotential cannot be spawned (it would start another pool of workers); "
            "construct a new MultiProcPotential instead"
        )

    async def cleanup(self) -> None:
        """Stop the worker processes."""
        self._pool.shutdown(wait=False, cancel_futures=True)

    def __del__(self) -> None:
        pool = getattr(self, "_pool", None)
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    def __repr__(self) -> str:
        name = getattr(self.factory, "__name__", repr(self.factory))
        return f"MultiProcPotential({name}, {self.num_workers} workers)"
