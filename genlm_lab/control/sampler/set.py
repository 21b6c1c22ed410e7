"""Set-based token samplers: a weighted set of tokens, walked item by item, then one token from it.

A *set sampler* draws a random set S of tokens and gives each token t in S
the weight target(t) / P(t in S). Drawing one token of S in proportion to
these weights, with weight log sum_S, is then properly weighted for the
target: E[w 1{x = t}] = P(t in S) target(t) / P(t in S) = target(t).
`SetTokenSampler` does that last step for any `SetSampler`.

The trie set samplers target `iter_potential * coerce(item_potential,
iter_potential)`: a potential over tokens that are sequences (an LM's byte
tokens) times one over their items (bytes: a regex, a grammar) read through
the tokens. They never compute the item potential's weight of every token;
they walk the vocabulary's trie of items.

- `EagerSetSampler`: walk one path down the trie, choosing each item with
  probability proportional to (iter mass below the child) x (item
  potential's weight of the item). Every token whose items end on the path
  joins S; P(t in S) is the probability of the path prefix that spells t.
  One item-potential call per item of the path.
- `TopKSetSampler`: best-first search of the trie for the K tokens of
  greatest target weight (the iter potential's largest weight below a node,
  plus the item weights so far, bounds every token under it when item
  weights never grow, as for boolean constraints); they join S with
  probability one and their exact weights. If tokens are left over, one
  "wildcard" token drawn in proportion to its iter weight alone joins S
  too, weighted by its target weight over its probability of being drawn.

Every `sample_set` / `sample` takes `draw=`, a custom choice (see
`genlm_lab.control.core.tokens.draw_index`). Semantics follow genlm-control
0.4's classes of the same names.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from genlm_lab.control.core.constant import EndOfSequence
from genlm_lab.control.core.tokens import Draw, check_log_weights, draw_index
from genlm_lab.control.core.weights import LazyWeights
from genlm_lab.control.potential.base import Potential
from genlm_lab.control.potential.coerce import coerce
from genlm_lab.control.sampler._item_trie import token_items, trie_of
from genlm_lab.control.sampler.token import TokenSampler
from genlm_lab.smc.rng import get_rng, make_rng

__all__ = [
    "EagerSetSampler",
    "SetSampler",
    "SetTokenSampler",
    "TopKSetSampler",
    "TrieSetSampler",
    "eager_token_sampler",
    "topk_token_sampler",
]


class SetSampler:
    """Base class: `sample_set(context)` draws a weighted set of the target's tokens.

    Args:
        target: the potential the set's weights are properly weighted for.
        seed: a seed (or numpy Generator) for this sampler's draws; None draws
            from the running inference's generator (see `TokenSampler`).
    """

    def __init__(self, target: Potential, seed: int | np.random.Generator | None = None) -> None:
        self.target = target
        self._rng = None if seed is None else make_rng(seed)

    @property
    def rng(self) -> np.random.Generator:
        """The random generator draws come from (see `seed`)."""
        return self._rng if self._rng is not None else get_rng()

    async def sample_set(
        self, context: Sequence[Any], draw: Draw | None = None
    ) -> tuple[LazyWeights, float]:
        """Log-weights over `target.vocab_eos` (-inf outside the set) and the set's log-probability."""
        raise NotImplementedError(f"{type(self).__name__}.sample_set() is not defined")

    async def cleanup(self) -> None:
        """Release the target's caches and background work."""
        await self.target.cleanup()


class TrieSetSampler(SetSampler):
    """Base of the trie walkers: the target is `iter_potential * coerce(item_potential, ...)`.

    Args:
        iter_potential: the potential over sequence tokens (e.g. a `PromptedLLM`).
        item_potential: a potential over their items (byte values for byte tokens).
        autobatch: wrap `iter_potential` so concurrent particles' calls batch
            (`item_potential` is called along one path and stays bare).
        seed: see `SetSampler`.

    Raises:
        ValueError: if either is not a Potential, or `iter_potential`'s tokens
            are not sequences of `item_potential`'s.
    """

    def __init__(
        self,
        iter_potential: Potential,
        item_potential: Potential,
        autobatch: bool = True,
        seed: int | np.random.Generator | None = None,
    ) -> None:
        for name, value in (("iter_potential", iter_potential), ("item_potential", item_potential)):
            if not isinstance(value, Potential):
                raise ValueError(f"{name} must be a Potential, got {type(value).__name__}")
        if not iter_potential.token_type.is_iterable_of(item_potential.token_type):
            raise ValueError(
                "Token type of `iter_potential` must be an iterable of token type of "
                f"`item_potential`; got {iter_potential.token_type} and "
                f"{item_potential.token_type}"
            )
        self.iter_potential = iter_potential.to_autobatched() if autobatch else iter_potential
        self.item_potential = item_potential
        byte_tokens = all(isinstance(t, (bytes, bytearray)) for t in iter_potential.vocab)
        self._flat = None if byte_tokens else _flatten
        target = self.iter_potential * coerce(item_potential, self.iter_potential, f=self._flat)
        super().__init__(target, seed)
        self.trie = trie_of(iter_potential.vocab)
        self.eos_index = len(iter_potential.vocab)
        lookup = target.lookup
        self._to_target = np.array([lookup.get(t, -1) for t in self.iter_potential.vocab_eos])

    def _items(self, context: Sequence[Any]) -> list[Any]:
        return [item for token in context for item in token_items(token)]

    async def _iter_weights(self, context: list[Any]) -> np.ndarray:
        weights = np.asarray((await self.iter_potential.logw_next(context)).weights, dtype=float)
        check_log_weights(weights, f"{self.iter_potential.name}.logw_next")
        return weights

    def _as_target(self, out: np.ndarray) -> LazyWeights:
        """Log-weights over the iter vocabulary (+EOS) as the target's `LazyWeights`."""
        logws = np.full(len(self.target.vocab_eos), -math.inf)
        keep = self._to_target >= 0
        logws[self._to_target[keep]] = out[keep]
        return self.target.make_lazy_weights(logws)


def _flatten(context: Sequence[Any]) -> list[Any]:
    return [item for token in context for item in token_items(token)]


class EagerSetSampler(TrieSetSampler):
    """The set of tokens spelled along one item path drawn through the trie (see the module)."""

    async def sample_set(
        self, context: Sequence[Any], draw: Draw | None = None
    ) -> tuple[LazyWeights, float]:
        context = list(context)
        iter_w = await self._iter_weights(context)
        top = float(np.max(iter_w))
        out = np.full(len(iter_w), -math.inf)
        if top == -math.inf:
            return self._as_target(out), 0.0
        linear = np.exp(iter_w - top)
        mass = self.trie.mass(linear[:-1])
        items = self._items(context)
        eos = self.item_potential.eos
        node, logw, logp = 0, 0.0, 0.0
        path: list[Any] = []
        while True:
            for token in self.trie.ends[node]:
                out[token] = iter_w[token] + logw - logp
            row = await self.item_potential.logw_next(items + path)
            children = list(self.trie.children[node].items())
            keys: list[Any] = [b for b, _ in children]
            weights = [mass[c] * math.exp(row[b]) for b, c in children]
            if node == 0:
                keys.append(eos)
                weights.append(linear[-1] * math.exp(row[eos]))
            weights_arr = np.array(weights, dtype=float)
            total = float(weights_arr.sum()) if weights else 0.0
            if total <= 0:
                return self._as_target(out), logp
            with np.errstate(divide="ignore"):
                choice = draw_index(np.log(weights_arr), keys, self.rng, draw)
            logp += math.log(weights_arr[choice] / total)
            key = keys[choice]
            logw += float(row[key])
            if isinstance(key, EndOfSequence):
                out[self.eos_index] = iter_w[-1] + logw - logp
                return self._as_target(out), logp
            path.append(key)
            node = children[choice][1]


class TopKSetSampler(TrieSetSampler):
    """The K heaviest tokens of the target, plus one wildcard token (see the module).

    Args:
        K: tokens to enumerate exactly (None: all of them, no wildcard).

    Raises:
        ValueError: if K is not a positive int or None; at sampling time, if the
            item potential's weights grow along a path (the search's bound fails).
    """

    def __init__(
        self,
        iter_potential: Potential,
        item_potential: Potential,
        K: int | None,
        autobatch: bool = True,
        seed: int | np.random.Generator | None = None,
    ) -> None:
        if K is not None and (isinstance(K, bool) or not isinstance(K, int) or K < 1):
            raise ValueError(f"K must be a positive int or None, got {K!r}")
        super().__init__(iter_potential, item_potential, autobatch, seed)
        self.K = K

    async def _best_first(self, context: list[Any], iter_w: np.ndarray) -> list[tuple[int, float]]:
        """The (token index, exact log-weight) of the K heaviest tokens, heaviest first.

        A heap holds trie nodes, keyed by an upper bound on every token below
        them (item weights so far + the iter potential's largest weight
        below), and tokens, keyed by their exact weight; a token popped is
        the heaviest left.
        """
        bound = self.trie.max(iter_w[:-1])
        items = self._items(context)
        eos = self.item_potential.eos
        count = itertools.count()
        heap: list[tuple] = [(-math.inf, next(count), 0, 0.0, ())]  # the root, popped first
        out: list[tuple[int, float]] = []
        last = math.inf
        while heap and (self.K is None or len(out) < self.K):
            priority, _, node, logw, path = heapq.heappop(heap)
            if path is None:  # a token, with its exact weight
                if -priority > last + 1e-9:
                    raise ValueError(
                        f"{self.item_potential.name}'s weights grow along an item path; top-K "
                        "search needs item weights <= 0 (e.g. a boolean constraint)"
                    )
                last = -priority
                out.append((node, -priority))
                continue
            last = min(last, -priority)
            for t in self.trie.ends[node]:
                if iter_w[t] > -math.inf:
                    heapq.heappush(heap, (-(logw + iter_w[t]), next(count), t, 0.0, None))
            row = await self.item_potential.logw_next(items + list(path))
            if node == 0 and iter_w[-1] + float(row[eos]) > -math.inf:
                value = iter_w[-1] + float(row[eos])
                heapq.heappush(heap, (-value, next(count), self.eos_index, 0.0, None))
            for item, child in self.trie.children[node].items():
                step = float(row[item])
                if step == -math.inf or bound[child] == -math.inf:
                    continue
                value = logw + step
                heapq.heappush(
                    heap, (-(value + bound[child]), next(count), child, value, (*path, item))
                )
        return out

    async def sample_set(
        self, context: Sequence[Any], draw: Draw | None = None
    ) -> tuple[LazyWeights, float]:
        context = list(context)
        iter_w = await self._iter_weights(context)
        out = np.full(len(iter_w), -math.inf)
        best = await self._best_first(context, iter_w)
        for token, value in best:
            out[token] = value
        if self.K is None or len(best) < self.K:  # every token of positive weight is in
            return self._as_target(out), 0.0
        rest = iter_w.copy()
        rest[[t for t, _ in best]] = -math.inf
        top = float(np.max(rest))
        if top == -math.inf:
            return self._as_target(out), 0.0
        wildcard = draw_index(rest, self.iter_potential.vocab_eos, self.rng, draw)
        logp = float(rest[wildcard]) - (top + math.log(float(np.sum(np.exp(rest - top)))))
        out[wildcard] = iter_w[wildcard] + await self._guide(context, wildcard) - logp
        return self._as_target(out), logp

    async def _guide(self, context: list[Any], index: int) -> float:
        """The item potential's weight of token `index` after `context` (its coerced logw_next)."""
        items = self._items(context)
        base = await self.item_potential.prefix(items)
        if index == self.eos_index:
            return float(await self.item_potential.complete(items)) - base
        token = self.iter_potential.vocab[index]
        return float(await self.item_potential.prefix(items + token_items(token))) - base


class SetTokenSampler(TokenSampler):
    """Draws a weighted token set from `set_sampler`, then one token in proportion to the weights.

    The weight is the log of the set's total weight; the pair is properly
    weighted for `set_sampler.target` (see the module).

    Args:
        set_sampler: the `SetSampler` to draw sets from.
        seed: see `TokenSampler` (the set sampler keeps its own).

    Raises:
        ValueError: if `set_sampler` is not a `SetSampler`.
    """

    def __init__(
        self, set_sampler: SetSampler, seed: int | np.random.Generator | None = None
    ) -> None:
        if not isinstance(set_sampler, SetSampler):
            raise ValueError(f"set_sampler must be a SetSampler, got {type(set_sampler).__name__}")
        super().__init__(set_sampler.target, seed)
        self.set_sampler = set_sampler

    async def sample(
        self, context: Sequence[Any], draw: Draw | None = None
    ) -> tuple[Any, float, float]:
        """A token of a sampled set; weight = log of the set's total weight."""
        logws, logp = await self.set_sampler.sample_set(list(context), draw=draw)
        weights = np.asarray(logws.weights, dtype=float)
        top = float(np.max(weights))
        if top == -math.inf:
            return self.target.eos, -math.inf, logp
        index = draw_index(weights, self.target.vocab_eos, self.rng, draw)
        log_z = top + math.log(float(np.sum(np.exp(weights - top))))
        return self.target.vocab_eos[index], log_z, logp + float(weights[index]) - log_z

    async def cleanup(self) -> None:
        await self.set_sampler.cleanup()


def eager_token_sampler(
    iter_potential: Potential,
    item_potential: Potential,
    seed: int | np.random.Generator | None = None,
) -> SetTokenSampler:
    """Tokens of `iter_potential` (an LM) guided item by item by `item_potential` (a byte-level one).

    The target is `iter_potential * coerce(item_potential, iter_potential)`;
    see `EagerSetSampler`.
    """
    rng = None if seed is None else make_rng(seed)  # one stream for the set and the token
    return SetTokenSampler(EagerSetSampler(iter_potential, item_potential, seed=rng), seed=rng)


def topk_token_sampler(
    iter_potential: Potential,
    item_potential: Potential,
    K: int | None,
    seed: int | np.random.Generator | None = None,
) -> SetTokenSampler:
    """The K heaviest tokens of `iter_potential * coerce(item_potential, ...)` plus a wildcard.

    See `TopKSetSampler`.
    """
    rng = None if seed is None else make_rng(seed)  # one stream for the set and the token
    return SetTokenSampler(TopKSetSampler(iter_potential, item_potential, K, seed=rng), seed=rng)
