"""`Ensemble`: two potentials combined sequence by sequence with a weighted mean.

An ensemble of two language models `p1` and `p2` weighs a sequence `x` by
`op(p1(x), p2(x))`: the weighted arithmetic mean `a p1 + (1-a) p2` (a mixture),
the geometric mean `p1^a p2^(1-a)` (a product of experts), the harmonic mean,
any power mean, or a weighted min / max (`convert_to_weighted_logop`).

The combination is over whole sequences, not token by token: `prefix` and
`complete` combine the two potentials' own `prefix` and `complete`, and
`logw_next(x)[y] = prefix(x + [y]) - prefix(x)`. A sampler drawing token by
token from the ensemble therefore targets `op(p1(x), p2(x))` itself, which
mixing the two next-token distributions step by step would not (except for the
geometric mean). Each next-token row needs both potentials' prefix weights of
the context; the ensemble keeps the rows of recent contexts (`cache_size`), so
the prefix weight of a context's extension is one addition, not a new call.
"""

from __future__ import annotations

import asyncio
import math
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from genlm_lab.control.core.constant import EndOfSequence
from genlm_lab.control.core.weights import LazyWeights, WeightsBatch, split_rows
from genlm_lab.control.potential.atomic_tokens import split_with_atomic_tokens
from genlm_lab.control.potential.base import Potential
from genlm_lab.control.potential.logops import WeightedLogOp, convert_to_weighted_logop

__all__ = ["Ensemble", "convert_to_weighted_logop", "split_with_atomic_tokens"]


class _Rows(NamedTuple):
    """What the ensemble keeps of one context: each potential's prefix weight and next row."""

    w1: float
    w2: float
    row1: np.ndarray  # p1's logw_next, in the ensemble's vocab_eos order
    row2: np.ndarray


def _matrix(batch: Any) -> np.ndarray:
    """A `batch_logw_next` result (a `WeightsBatch` or a 2-d `LazyWeights`) as an (n, V+1) array."""
    data = getattr(batch, "weights", None)
    if isinstance(data, np.ndarray) and data.ndim == 2:
        return np.asarray(data, dtype=float)
    return np.stack([np.asarray(w.weights, dtype=float) for w in split_rows(batch)])


def _check_contexts(contexts: Sequence[Sequence[Any]], method: str) -> list[list[Any]]:
    if len(contexts) == 0:
        raise ValueError(f"Ensemble.{method} got no contexts: Contexts must be non-empty")
    return [list(c) for c in contexts]


class Ensemble(Potential):
    """Two potentials' weights combined by a weighted log-space operation, per sequence.

    `prefix(x) = op(p1.prefix(x), p2.prefix(x))`, `complete` likewise, and
    `logw_next` is consistent with `prefix`, so token-by-token samplers (e.g.
    `direct_token_sampler(ensemble)`, SMC) target `op(p1(x), p2(x))` over
    whole sequences. The two vocabularies must hold the same tokens; their
    order may differ (tokens are matched by value; the ensemble uses `p1`'s
    order). To ensemble models with different tokenizers, ensemble their
    `ByteLLM`s.

    Args:
        p1: the first potential (usually a language model).
        p2: the second potential.
        op: "sum", "prod", "harmonic", "min", "max", or a power-mean exponent
            (see `convert_to_weighted_logop`).
        a: the weight in (0, 1) of `p1` (0.5 weighs both alike).
        cache_size: how many contexts' next-token rows are kept; set it to at
            least the number of particles so each step reuses the last one's.
            Each kept context holds two float64 rows of `len(vocab) + 1`
            entries (0.8 MB for a 49k-token vocabulary); 0 keeps none.

    Attributes:
        p1: the first potential.
        p2: the second potential.
        op: the weighted log-space operation, `op(logw1, logw2)`.
        p1_vocab_idxs: index in `p1.vocab_eos` of each of the ensemble's `vocab_eos`.
        p2_vocab_idxs: the same for `p2`.

    Raises:
        ValueError: if the potentials' tokens or EOS markers differ, `op` or `a`
            is invalid, or `cache_size` is negative.
    """

    def __init__(
        self,
        p1: Potential,
        p2: Potential,
        op: str | float,
        a: float = 0.5,
        cache_size: int = 256,
    ) -> None:
        self.op: WeightedLogOp = convert_to_weighted_logop(op, a)
        if isinstance(cache_size, bool) or not isinstance(cache_size, (int, np.integer)):
            raise ValueError(f"cache_size must be a non-negative int, got {cache_size!r}")
        if cache_size < 0:
            raise ValueError(f"cache_size must be a non-negative int, got {cache_size}")
        if p1.eos != p2.eos:
            raise ValueError(f"{p1.name} ends with {p1.eos!r} but {p2.name} with {p2.eos!r}")
        if len(p1.vocab) != len(p2.vocab) or set(p1.vocab) != set(p2.vocab):
            only1 = next((t for t in p1.vocab if t not in p2.lookup), None)
            only2 = next((t for t in p2.vocab if t not in p1.lookup), None)
            raise ValueError(
                "Ensemble requires potentials with the same vocabulary: "
                f"{p1.name} has {len(p1.vocab)} tokens, {p2.name} {len(p2.vocab)} "
                f"(e.g. {only1!r:.30} only in the first, {only2!r:.30} only in the second). "
                "To ensemble models with different tokenizers, ensemble their ByteLLMs."
            )
        self.p1 = p1
        self.p2 = p2
        self.a = float(a)
        self.cache_size = int(cache_size)
        self._op_spec = op
        if p1.vocab is p2.vocab or p1.vocab == p2.vocab:
            self._share_vocabulary(p1)
            self._order2: np.ndarray | None = None  # rows need no reordering
        else:
            super().__init__(p1.vocab, eos=p1.eos)
            self._order2 = np.array([p2.lookup[t] for t in self.vocab_eos])
        self.p1_vocab_idxs = list(range(len(self.vocab_eos)))
        self.p2_vocab_idxs = (
            self.p1_vocab_idxs if self._order2 is None else [int(i) for i in self._order2]
        )
        self._rows: OrderedDict[tuple, _Rows] = OrderedDict()

    def _default_name(self) -> str:
        return f"Ensemble({self.p1.name}, {self.p2.name}, {self.op.label})"

    # ------------------------------------------------------------ the row cache
    def _cached(self, context: Sequence[Any]) -> _Rows | None:
        """The kept rows of `context` (a use: it moves to the end of the LRU order)."""
        if self.cache_size == 0:
            return None
        try:
            key = tuple(context)
            entry = self._rows.get(key)
        except TypeError:  # an unhashable token: never cached
            return None
        if entry is not None:
            self._rows.move_to_end(key)
        return entry

    def _keep(self, context: Sequence[Any], entry: _Rows) -> None:
        if self.cache_size == 0:
            return
        key = tuple(context)
        self._rows[key] = entry
        self._rows.move_to_end(key)
        while len(self._rows) > self.cache_size:
            self._rows.popitem(last=False)

    def _extension(self, context: Sequence[Any], eos: bool) -> tuple[float, float] | None:
        """Both potentials' weights of `context` read off kept rows (None when not kept).

        `eos=False`: the prefix weights of `context`, from its parent's rows;
        `eos=True`: the complete weights of `context`, from its own rows. Rows
        where a potential's prefix weight was zero are not trusted (nothing
        defines what follows a zero prefix), so those cases ask the potentials.
        """
        if eos:
            entry, index = self._cached(context), len(self.vocab)
        else:
            if not context:
                return None
            try:
                index = self.lookup.get(context[-1])
            except TypeError:
                return None
            if index is None or index == len(self.vocab):
                return None
            entry = self._cached(context[:-1])
        if entry is None or entry.w1 == -math.inf or entry.w2 == -math.inf:
            return None
        return entry.w1 + float(entry.row1[index]), entry.w2 + float(entry.row2[index])

    # ------------------------------------------------------------ component weights
    async def _components(self, contexts: list[list[Any]], complete: bool) -> np.ndarray:
        """Shape (n, 2): `p1`'s and `p2`'s prefix (or complete) weight of each context."""
        out = np.empty((len(contexts), 2))
        missing = []
        for n, context in enumerate(contexts):
            hit = self._extension(context, eos=complete)
            if hit is None:
                missing.append(n)
            else:
                out[n] = hit
        if missing:
            todo = [contexts[n] for n in missing]
            method = "batch_complete" if complete else "batch_prefix"
            w1, w2 = await asyncio.gather(
                getattr(self.p1, method)(todo), getattr(self.p2, method)(todo)
            )
            out[missing, 0] = np.asarray(w1, dtype=float)
            out[missing, 1] = np.asarray(w2, dtype=float)
        return out

    async def _next_rows(
        self, p: Potential, order: np.ndarray | None, contexts: list[list[Any]], w: np.ndarray
    ) -> np.ndarray:
        """`p`'s next-token rows in the ensemble's order; all -inf where `p`'s prefix is zero.

        A potential need not define `logw_next` after a context it gives weight
        zero, so it is not asked there: every extension has weight zero too.
        """
        out = np.full((len(contexts), len(self.vocab_eos)), -math.inf)
        live = np.flatnonzero(w > -math.inf)
        if live.size:
            rows = _matrix(await p.batch_logw_next([contexts[i] for i in live]))
            out[live] = rows if order is None else rows[:, order]
        return out

    async def component_logws(self, context: Sequence[Any]) -> tuple[float, float]:
        """`p1`'s and `p2`'s log-weight of `context`, e.g. to record each model's score of a sample.

        Their `complete` weights of the sequence before a final EOS, otherwise
        their `prefix` weights.
        """
        context = list(context)
        if context and isinstance(context[-1], EndOfSequence):
            ((w1, w2),) = await self._components([context[:-1]], complete=True)
        else:
            ((w1, w2),) = await self._components([context], complete=False)
        return float(w1), float(w2)

    # ------------------------------------------------------------ the potential
    async def prefix(self, context: Sequence[Any]) -> float:
        """`op(p1.prefix(context), p2.prefix(context))`."""
        ((w1, w2),) = await self._components([list(context)], complete=False)
        return self.op(w1, w2)

    async def complete(self, context: Sequence[Any]) -> float:
        """`op(p1.complete(context), p2.complete(context))`."""
        ((w1, w2),) = await self._components([list(context)], complete=True)
        return self.op(w1, w2)

    async def batch_prefix(self, contexts: Sequence[Sequence[Any]]) -> np.ndarray:
        """`prefix` of several contexts; one batched call per potential for those not kept."""
        W = await self._components(_check_contexts(contexts, "batch_prefix"), complete=False)
        return self.op(W[:, 0], W[:, 1])

    async def batch_complete(self, contexts: Sequence[Sequence[Any]]) -> np.ndarray:
        """`complete` of several contexts; one batched call per potential for those not kept."""
        W = await self._components(_check_contexts(contexts, "batch_complete"), complete=True)
        return self.op(W[:, 0], W[:, 1])

    async def logw_next(self, context: Sequence[Any]) -> LazyWeights:
        """`prefix(context + [y]) - prefix(context)` for every token `y`, EOS from `complete`.

        Raises:
            ValueError: if `context` has weight zero under `prefix`.
        """
        return (await self.batch_logw_next([context]))[0]

    async def batch_logw_next(self, contexts: Sequence[Sequence[Any]]) -> WeightsBatch:
        """`logw_next` of several contexts, keeping their rows for the next step.

        Raises:
            ValueError: for no contexts, or one with weight zero under `prefix`.
        """
        contexts = _check_contexts(contexts, "batch_logw_next")
        W = await self._components(contexts, complete=False)
        base = self.op(W[:, 0], W[:, 1])
        dead = np.flatnonzero(base == -math.inf)
        if dead.size:
            raise ValueError(
                f"Context {contexts[dead[0]]!r:.80} has weight zero under `prefix` of "
                f"{self.name}: nothing can follow it"
            )
        rows1, rows2 = await asyncio.gather(
            self._next_rows(self.p1, None, contexts, W[:, 0]),
            self._next_rows(self.p2, self._order2, contexts, W[:, 1]),
        )
        for n, context in enumerate(contexts):
            self._keep(context, _Rows(float(W[n, 0]), float(W[n, 1]), rows1[n], rows2[n]))
        combined = self.op(W[:, :1] + rows1, W[:, 1:] + rows2) - base[:, None]
        return WeightsBatch(self.make_lazy_weights(row) for row in combined)

    # ------------------------------------------------------------ life cycle
    def spawn(self) -> Ensemble:
        """An ensemble of the two potentials' spawns, with the same operation and an empty cache."""
        return Ensemble(
            self.p1.spawn(), self.p2.spawn(), self._op_spec, a=self.a, cache_size=self.cache_size
        )

    async def cleanup(self) -> None:
        """Drop the kept rows and clean up both potentials."""
        self._rows.clear()
        await asyncio.gather(self.p1.cleanup(), self.p2.cleanup())

    def __repr__(self) -> str:
        return f"Ensemble({self.p1!r}, {self.p2!r}, {self.op.label})"
