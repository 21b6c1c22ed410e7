"""Potentials built from others: `Product` (`p * q`), `Power` (`p ** a`), `AutoBatched`."""

from __future__ import annotations

import asyncio
import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from genlm_lab.control.core.weights import LazyWeights, WeightsBatch, split_rows
from genlm_lab.control.potential.base import Potential

__all__ = ["AutoBatched", "AutoBatchedPotential", "Power", "Product", "autobatched"]


def _token_types(p: Potential, q: Potential) -> None:
    """ValueError if `p` and `q` have tokens of different types (bytes and ints, say)."""
    try:
        tp, tq = p.token_type, q.token_type
    except ValueError:  # a mixed vocabulary has no single type: compare tokens instead
        return
    if tp != tq:
        raise ValueError(
            f"Potentials in product must have the same token type: {p.name} has {tp!r}, "
            f"{q.name} has {tq!r}. Coerce one onto the other first, e.g. "
            "`regex.coerce(llm, f=b''.join)`"
        )


def _common_vocabulary(p: Potential, q: Potential) -> list | None:
    """The tokens of `p` that `q` also has, in `p`'s order; None when the vocabularies are equal.

    Raises:
        ValueError: if the token types or EOS markers differ, or no token is shared.
    """
    if p.eos != q.eos:
        raise ValueError(f"{p.name} ends with {p.eos!r} but {q.name} with {q.eos!r}")
    if p.vocab is q.vocab or p.vocab == q.vocab:
        return None
    _token_types(p, q)
    n_q = len(q.vocab)
    common = [t for t in p.vocab if q.lookup.get(t, n_q) < n_q]
    if not common:
        raise ValueError(
            f"Potentials in product must share a common vocabulary: {p.name} "
            f"({len(p.vocab)} tokens) and {q.name} ({len(q.vocab)} tokens) have no token in common"
        )
    for r in (p, q):
        if len(common) < 0.1 * len(r.vocab):
            warnings.warn(
                f"the product keeps {len(common)} of {r.name}'s {len(r.vocab)} tokens "
                "(those both potentials have): check that this is intended",
                RuntimeWarning,
                stacklevel=4,
            )
    return common


class Product(Potential):
    """The product of two potentials: log-weights add.

    Over the tokens both potentials have (in `p1`'s order; genlm-control's
    semantics); usually the vocabularies are equal and nothing is re-indexed.
    The factors' calls run concurrently, so an LM forward and a grammar mask
    of one step overlap.

    Attributes:
        v1_idxs: index of each of the product's `vocab_eos` in `p1.vocab_eos`
            (a list), or `...` where the vocabularies are equal.
        v2_idxs: the same for `p2`.

    Raises:
        ValueError: if the factors' token types or EOS markers differ or they
            share no token.
    """

    def __init__(self, p1: Potential, p2: Potential) -> None:
        common = _common_vocabulary(p1, p2)
        self.p1 = p1
        self.p2 = p2
        if common is None:
            self._share_vocabulary(p1)
            self.v1_idxs = self.v2_idxs = ...
            self._i1 = self._i2 = ...
        else:
            super().__init__(common, eos=p1.eos)
            self.v1_idxs = [p1.lookup[t] for t in self.vocab_eos]
            self.v2_idxs = [p2.lookup[t] for t in self.vocab_eos]
            self._i1, self._i2 = np.array(self.v1_idxs), np.array(self.v2_idxs)
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
        return self.make_lazy_weights(a.weights[self._i1] + b.weights[self._i2])

    async def batch_logw_next(self, contexts: Sequence[Sequence[Any]]) -> list[LazyWeights]:
        a, b = await asyncio.gather(
            self.p1.batch_logw_next(contexts), self.p2.batch_logw_next(contexts)
        )
        return WeightsBatch(
            self.make_lazy_weights(x.weights[self._i1] + y.weights[self._i2])
            for x, y in zip(split_rows(a), split_rows(b), strict=True)
        )

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
    """A potential with every finite log-weight multiplied by `exponent`; zero stays zero.

    `exponent` > 1 sharpens, < 1 flattens (tempering); `p ** 0` is the
    indicator of `p`'s support and `p ** -1` its inverse there.

    Raises:
        ValueError: unless `exponent` is a finite number.
    """

    def __init__(self, potential: Potential, exponent: float) -> None:
        if isinstance(exponent, bool) or not isinstance(exponent, (int, float, np.number)):
            raise ValueError(f"the exponent must be a finite number, got {exponent!r}")
        exponent = float(exponent)
        if not math.isfinite(exponent):
            raise ValueError(f"the exponent must be a finite number, got {exponent}")
        self.potential = potential
        self.exponent = exponent
        self._share_vocabulary(potential)
        self.is_boolean = potential.is_boolean

    def _default_name(self) -> str:
        return f"{self.potential.name}**{self.exponent:g}"

    def _scale(self, w: np.ndarray) -> np.ndarray:
        """`exponent * w` with -inf (weight zero) left as it is (0 * -inf would be NaN)."""
        out = np.array(w, dtype=float)
        live = out != -math.inf
        out[live] *= self.exponent
        return out

    def _scale_one(self, w: float) -> float:
        return -math.inf if w == -math.inf else self.exponent * w

    def is_terminal_only(self) -> bool:
        return self.potential.is_terminal_only()

    async def prefix(self, context: Sequence[Any]) -> float:
        return self._scale_one(await self.potential.prefix(context))

    async def complete(self, context: Sequence[Any]) -> float:
        return self._scale_one(await self.potential.complete(context))

    async def batch_prefix(self, contexts: Sequence[Sequence[Any]]) -> np.ndarray:
        return self._scale(await self.potential.batch_prefix(contexts))

    async def batch_complete(self, contexts: Sequence[Sequence[Any]]) -> np.ndarray:
        return self._scale(await self.potential.batch_complete(contexts))

    async def logw_next(self, context: Sequence[Any]) -> LazyWeights:
        inner = await self.potential.logw_next(context)
        return self.make_lazy_weights(self._scale(inner.weights))

    async def batch_logw_next(self, contexts: Sequence[Sequence[Any]]) -> WeightsBatch:
        inner = await self.potential.batch_logw_next(contexts)
        return WeightsBatch(
            self.make_lazy_weights(self._scale(w.weights)) for w in split_rows(inner)
        )

    def spawn(self) -> Power:
        return Power(self.potential.spawn(), self.exponent)

    async def cleanup(self) -> None:
        await self.potential.cleanup()

    def __repr__(self) -> str:
        return f"({self.potential!r} ** {self.exponent:g})"


class AutoBatched(Potential):
    """Sends concurrent `prefix` / `complete` / `logw_next` calls to the `batch_*` methods.

    Calls that arrive in the same turns of the event loop (e.g. one per SMC
    particle) go out as one batch, so a potential with a fast batched path
    (a single model forward, one parallel mask call) is used at its best.
    When a batch of several calls fails, each is retried alone, so only the
    bad contexts fail; a batch of one fails with the batch method's error.
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
            if method == "logw_next":
                results = split_rows(results)
        except Exception as error:
            if len(batch) == 1:  # the batch's error is its one context's
                if not batch[0][1].done():
                    batch[0][1].set_exception(error)
                return
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

    async def batch_logw_next(self, contexts: Sequence[Sequence[Any]]) -> WeightsBatch:
        return WeightsBatch(split_rows(await self.potential.batch_logw_next(contexts)))

    def is_terminal_only(self) -> bool:
        return self.potential.is_terminal_only()

    # The wrapped potential answers these, so a subclass's override is not lost
    # behind the wrapper's inherited defaults.
    def encode(self, context: Sequence[Any]) -> list[int]:
        return self.potential.encode(context)

    def ends(self, context: Sequence[Any]) -> bool:
        return self.potential.ends(context)

    async def logw_eos(self, context: Sequence[Any]) -> float:
        return await self.potential.logw_eos(context)

    def normalize(self) -> Potential:
        return self.potential.normalize()

    def coerce(self, other: Any, f: Any = None, prune: bool = True) -> Potential:
        return self.potential.coerce(other, f=f, prune=prune)

    def to_multiprocess(self, num_workers: int = 2, spawn_args: tuple | None = None) -> Potential:
        return self.potential.to_multiprocess(num_workers, spawn_args)

    def spawn(self) -> AutoBatched:
        return AutoBatched(self.potential.spawn())

    async def cleanup(self) -> None:
        """Drop calls still queued (their callers get `BatchAbandoned`), then clean the potential."""
        from genlm_lab.control.core.util import BatchAbandoned

        queued = [future for batch in self._queues.values() for _, future in batch]
        self._queues.clear()
        for future in queued:
            if not future.done():
                future.set_exception(
                    BatchAbandoned(f"{self.name} was cleaned up before this call's batch ran")
                )
        await self.potential.cleanup()

    def to_autobatched(self) -> AutoBatched:
        return self

    def __repr__(self) -> str:
        return f"AutoBatchedPotential({self.potential!r})"


#: genlm-control's name for `AutoBatched`.
AutoBatchedPotential = AutoBatched


def autobatched(potential: Potential | None) -> Potential | None:
    """`potential.to_autobatched()` (one wrapper per potential), passing None and wrappers through."""
    if potential is None or isinstance(potential, AutoBatched):
        return potential
    return potential.to_autobatched()
