"""`StatefulPotential`: a potential that keeps a state per context and advances it token by token.

Some checks cannot score a context from scratch cheaply (a parser, a running
program) but can consume it incrementally. A `StatefulPotential` keeps such
states (`ParticleState`s) in a small cache keyed by their contexts: scoring a
context takes the state of its longest cached prefix, feeds it the missing
tokens and puts it back under the longer context. `complete` finishes a
state for good. States not used for a while are evicted (and finished, so
that whatever they hold, a background task say, is released); `PriorityMap`
keeps them ordered by last use.
"""

from __future__ import annotations

import asyncio
import bisect
import copy
import heapq
import itertools
import math
from abc import ABC, abstractmethod
from collections.abc import Hashable, Iterator, Sequence
from typing import Any

import numpy as np

from genlm_lab.control.core.constant import EndOfSequence
from genlm_lab.control.core.token_types import TokenType
from genlm_lab.control.core.weights import LazyWeights
from genlm_lab.control.potential.base import Potential

__all__ = ["ParticleState", "PriorityMap", "StatefulPotential", "make_immutable"]


def make_immutable(context: Sequence[Any]) -> str | bytes | tuple:
    """A hashable copy of `context`, to key caches by.

    Strings, bytes and tuples come back as they are; a sequence of byte
    values (ints in 0..255) becomes `bytes`; anything else a tuple.
    """
    if isinstance(context, (str, bytes, tuple)):
        return context
    try:
        return bytes(context)
    except (TypeError, ValueError):
        return tuple(context)


class PriorityMap:
    """A dict from keys to priorities that finds (and pops) a key of lowest priority fast.

    Setting a key again changes its priority. `peek` and `pop` cost
    O(log n) amortised: a heap holds one entry per assignment, and entries
    made stale by a later assignment or a deletion are skipped (and purged
    when they outnumber the live ones).
    """

    def __init__(self) -> None:
        self._priorities: dict[Hashable, Any] = {}
        self._live: dict[Hashable, int] = {}  # key -> serial of its current heap entry
        self._heap: list[tuple[Any, int, Hashable]] = []
        self._serial = itertools.count()

    def __repr__(self) -> str:
        return f"PriorityMap({self._priorities!r})"

    def __len__(self) -> int:
        return len(self._priorities)

    def __contains__(self, key: object) -> bool:
        return key in self._priorities

    def __iter__(self) -> Iterator[Hashable]:
        return iter(self._priorities)

    def __getitem__(self, key: Hashable) -> Any:
        return self._priorities[key]

    def __setitem__(self, key: Hashable, priority: Any) -> None:
        if key in self._priorities and self._priorities[key] == priority:
            return
        serial = next(self._serial)
        self._priorities[key] = priority
        self._live[key] = serial
        # the serial breaks ties, so keys (which may not be comparable) are never compared
        heapq.heappush(self._heap, (priority, serial, key))
        if len(self._heap) > 2 * len(self._priorities) + 16:
            self._compact()

    def __delitem__(self, key: Hashable) -> None:
        del self._priorities[key]
        del self._live[key]

    def _compact(self) -> None:
        self._heap = [entry for entry in self._heap if self._live.get(entry[2]) == entry[1]]
        heapq.heapify(self._heap)

    def _top(self, what: str) -> tuple[Any, int, Hashable]:
        heap = self._heap
        while heap and self._live.get(heap[0][2]) != heap[0][1]:
            heapq.heappop(heap)  # stale: the key was deleted or given another priority
        if not heap:
            raise ValueError(f"{what} on an empty PriorityMap")
        return heap[0]

    def peek(self) -> tuple[Hashable, Any]:
        """`(key, priority)` of a key of lowest priority, left in the map.

        Raises:
            ValueError: if the map is empty.
        """
        priority, _, key = self._top("peek")
        return key, priority

    def pop(self) -> tuple[Hashable, Any]:
        """Remove and return `(key, priority)` of a key of lowest priority.

        Raises:
            ValueError: if the map is empty.
        """
        priority, _, key = self._top("pop")
        heapq.heappop(self._heap)
        del self[key]
        return key, priority

    def clear(self) -> None:
        """Remove every key."""
        self._priorities.clear()
        self._live.clear()
        self._heap.clear()


class ParticleState(ABC):
    """The state of one `StatefulPotential` after reading a context.

    Subclasses say how tokens advance it (`impl_update_context`), what
    finishing means (`impl_finish`) and what it scores (`current_score`):
    the prefix weight of `context` while open, its complete weight once
    finished. A finished state ignores further tokens.

    Attributes:
        owner: the potential the state belongs to.
        context: the tokens read so far.
        finished: whether `finish` ran.
    """

    def __init__(self, owner: StatefulPotential) -> None:
        self.owner = owner
        self.finished = False
        self.context: list[Any] = []

    async def start(self) -> None:
        """Asynchronous set-up, run once by `owner.new_state()` (nothing by default)."""

    async def update_context(self, incremental_context: Sequence[Any]) -> None:
        """Read more tokens (ignored once finished)."""
        if self.finished:
            return
        self.context.extend(incremental_context)
        await self.impl_update_context(incremental_context)

    async def finish(self) -> None:
        """Close the state: `current_score` becomes the complete weight; idempotent."""
        if self.finished:
            return
        self.finished = True
        await self.impl_finish()

    @property
    @abstractmethod
    def current_score(self) -> float:
        """Log-weight of `context`: as a prefix while open, as a whole once finished."""

    @abstractmethod
    async def impl_update_context(self, incremental_context: Sequence[Any]) -> None:
        """Advance the state over tokens already appended to `context`."""

    @abstractmethod
    async def impl_finish(self) -> None:
        """Settle the complete weight and release what the state holds."""

    async def clone(self) -> ParticleState:
        """An independent open state over the same context (a finished state is its own clone).

        The default builds a fresh state and replays the context; subclasses
        that can copy themselves cheaply should override it.
        """
        if self.finished:
            return self
        copy = await self.owner.new_state()
        if self.context:
            await copy.update_context(list(self.context))
        return copy


class StatefulPotential(Potential):
    """A potential scored by `ParticleState`s, cached and advanced incrementally.

    Args:
        vocabulary: the tokens.
        token_type: what one token is (inferred unless given).
        eos: the end-of-sequence marker, by default `EOS`.
        state_class: the `ParticleState` subclass `new_state` builds (or
            override `new_state`).
        cache_size: how many open states to keep; the least recently used
            are finished and dropped beyond it.
    """

    def __init__(
        self,
        vocabulary: Sequence[Hashable],
        token_type: TokenType | None = None,
        eos: EndOfSequence | None = None,
        state_class: type[ParticleState] | None = None,
        cache_size: int = 100,
    ) -> None:
        super().__init__(vocabulary=vocabulary, token_type=token_type, eos=eos)
        self.state_class = state_class
        self.cache_size = cache_size
        self._empty_cache()

    def _empty_cache(self) -> None:
        self._pool: dict[Hashable, list[ParticleState]] = {}  # context key -> open states
        self._keys: dict[type, list[Any]] = {}  # sorted keys, one list per key type
        self._last_use = PriorityMap()  # context key -> clock tick of its last return
        self._clock = itertools.count()
        self._pooled = 0

    def spawn(self) -> StatefulPotential:
        """A shallow copy with an empty state cache, for another worker (states stay here)."""
        twin = copy.copy(self)
        twin._empty_cache()
        return twin

    async def new_state(self) -> ParticleState:
        """A fresh, started state over the empty context.

        Raises:
            NotImplementedError: if no `state_class` was given and a subclass
                does not override this method.
        """
        if self.state_class is None:
            raise NotImplementedError(
                f"{type(self).__name__} has no state_class: pass one or override new_state"
            )
        state = self.state_class(self)
        await state.start()
        return state

    # ------------------------------------------------------------ the state cache
    def _key(self, context: Sequence[Any]) -> Any:
        """The cache key of a context: `bytes` when its tokens are byte values, else a tuple."""
        key = make_immutable(context)
        if isinstance(key, str):
            return tuple(key)
        if isinstance(key, tuple) and self._bytewise:
            try:  # b"a" and 97 name the same byte here
                return bytes(self.lookup[token] for token in key)
            except (KeyError, TypeError, ValueError):
                return key
        return key

    def _longest_cached_prefix(self, key: Any) -> Any | None:
        keys = self._keys.get(type(key))
        if not keys:
            return None
        probe = key
        try:
            while True:
                i = bisect.bisect_right(keys, probe)
                if i == 0:
                    return None
                found = keys[i - 1]  # the largest cached key <= probe
                if probe[: len(found)] == found:
                    return found
                # A longer cached prefix would lie between `found` and `probe`, so every
                # cached prefix of `probe` is a prefix of what the two share.
                shared = next(
                    (j for j, (a, b) in enumerate(zip(found, probe, strict=False)) if a != b),
                    min(len(found), len(probe)),
                )
                probe = probe[:shared]
        except TypeError:  # tokens that do not order: no reuse
            return None

    def _unlist(self, key: Any) -> None:
        del self._pool[key]
        del self._last_use[key]
        keys = self._keys[type(key)]
        del keys[bisect.bisect_left(keys, key)]

    async def _take(self, context: Sequence[Any]) -> ParticleState:
        """An open state over `context` (the cached longest prefix's, advanced), out of the cache."""
        key = self._key(context)
        found = self._longest_cached_prefix(key)
        if found is None:
            state = await self.new_state()
        else:
            pool = self._pool[found]
            state = pool.pop()
            self._pooled -= 1
            if not pool:
                self._unlist(found)
        if len(key) > len(state.context):
            await state.update_context(list(key[len(state.context) :]))
        return state

    async def _give_back(self, state: ParticleState) -> None:
        """Cache an open state under its context, finishing the least recently used beyond size."""
        if state.finished:
            return
        key = self._key(state.context)
        pool = self._pool.get(key)
        if pool is None:
            keys = self._keys.setdefault(type(key), [])
            try:
                bisect.insort(keys, key)
            except TypeError:  # tokens that do not order cannot be indexed: do not cache
                await state.finish()
                return
            pool = self._pool[key] = []
        pool.append(state)
        self._pooled += 1
        self._last_use[key] = next(self._clock)
        evicted = []
        while self._pooled > self.cache_size:
            oldest, _ = self._last_use.peek()
            stale = self._pool[oldest]
            evicted.append(stale.pop())
            self._pooled -= 1
            if not stale:
                self._unlist(oldest)
        if evicted:
            await asyncio.gather(*(s.finish() for s in evicted))

    def cached_contexts(self) -> list[Any]:
        """The context keys of the cached states, least recently used first (for inspection)."""
        return sorted(self._pool, key=self._last_use.__getitem__)

    async def cleanup(self) -> None:
        """Finish every cached state and empty the cache."""
        states = [state for pool in self._pool.values() for state in pool]
        self._empty_cache()
        await asyncio.gather(*(state.finish() for state in states))

    # ------------------------------------------------------------ the potential
    async def prefix(self, context: Sequence[Any]) -> float:
        """The score of the state over `context`, which stays cached for its extensions."""
        state = await self._take(context)
        try:
            return state.current_score
        finally:
            await self._give_back(state)

    async def complete(self, context: Sequence[Any]) -> float:
        """The score of the state over `context` once finished."""
        state = await self._take(context)
        await state.finish()
        return state.current_score

    async def logw_next(self, context: Sequence[Any]) -> LazyWeights:
        """Next-token weights from clones of the state over `context`, one per token and EOS.

        Raises:
            ValueError: if `context` has weight zero as a prefix.
        """
        state = await self._take(context)
        try:
            base = state.current_score
            if base == -math.inf:
                raise ValueError(
                    f"Context {list(context)!r:.80} has weight zero under `prefix` of {self.name}"
                )

            async def extended(token: Any) -> float:
                clone = await state.clone()
                if token is not self.eos:
                    await clone.update_context([token])
                    score = clone.current_score  # as a prefix, before finishing
                    await clone.finish()
                    return score
                await clone.finish()
                return clone.current_score

            scores = await asyncio.gather(*(extended(token) for token in self.vocab_eos))
        finally:
            await self._give_back(state)
        return self.make_lazy_weights(np.array(scores, dtype=float) - base)
