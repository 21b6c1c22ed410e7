"""Set-based token samplers: a weighted set of tokens, walked byte by byte, then one token from it.

Both samplers target `iter_potential * coerce(item_potential, iter_potential)`:
a token-level potential (an LM) times a byte-level one (a regex, a grammar)
read through the tokens' bytes. They never compute the byte-level
potential's weight of every token; they walk the vocabulary's byte trie.

A *set sampler* draws a random set S of tokens and gives each token t in S
the weight target(t) / P(t in S). Drawing one token of S in proportion to
these weights, with weight log sum_S, is then properly weighted for the
target: E[w 1{x = t}] = P(t in S) target(t) / P(t in S) = target(t).

- Eager: walk one path down the trie, choosing each byte with probability
  proportional to (LM mass below the child) x (byte potential's weight of
  the byte). Every token whose bytes end on the path joins S; P(t in S) is
  the probability of the path prefix that spells t. One byte-potential
  call per byte of the path.
- Top-K: best-first search of the trie for the K tokens of greatest target
  weight (the LM's largest weight below a node, plus the byte weights so
  far, bounds every token under it when byte weights never grow, as for
  boolean constraints); they join S with probability one and their exact
  weights. If tokens are left over, one "wildcard" token drawn in
  proportion to its LM weight alone joins S too, weighted by its target
  weight over its probability of being the wildcard.

Semantics follow genlm-control 0.4's `EagerSetSampler` / `TopKSetSampler`.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from genlm_lab.control._tokens import check_log_weights, sample_index, sample_linear, token_bytes
from genlm_lab.control.coerce import coerce
from genlm_lab.control.constant import EndOfSequence
from genlm_lab.control.potential import Potential
from genlm_lab.control.samplers import TokenSampler

__all__ = [
    "EagerTokenSampler",
    "SetTokenSampler",
    "TopKTokenSampler",
    "eager_token_sampler",
    "topk_token_sampler",
]


class _ByteTrie:
    """The byte strings of `vocab` (EOS excluded) as a trie with per-node token lists.

    Node 0 is the root. `flat_nodes` / `flat_tokens` list (node, token) for
    every node on every token's path, so subtree sums and maxima are one
    numpy call.
    """

    def __init__(self, vocab: Sequence[Any]) -> None:
        self.children: list[dict[int, int]] = [{}]
        self.ends: list[list[int]] = [[]]
        nodes, tokens = [], []
        for index, token in enumerate(vocab):
            node = 0
            nodes.append(0)
            tokens.append(index)
            for byte in token_bytes(token):
                child = self.children[node].get(byte)
                if child is None:
                    child = len(self.children)
                    self.children[node][byte] = child
                    self.children.append({})
                    self.ends.append([])
                node = child
                nodes.append(node)
                tokens.append(index)
            self.ends[node].append(index)
        self.flat_nodes = np.array(nodes, dtype=np.int64)
        self.flat_tokens = np.array(tokens, dtype=np.int64)
        self.n_nodes = len(self.children)

    def mass(self, weights: np.ndarray) -> np.ndarray:
        """Sum of `weights` (one per token) below each node."""
        return np.bincount(self.flat_nodes, weights[self.flat_tokens], minlength=self.n_nodes)

    def max(self, log_weights: np.ndarray) -> np.ndarray:
        """Largest of `log_weights` (one per token) below each node."""
        out = np.full(self.n_nodes, -math.inf)
        np.maximum.at(out, self.flat_nodes, log_weights[self.flat_tokens])
        return out


_TRIES: dict[tuple[bytes, ...], _ByteTrie] = {}


def _trie_of(vocab: Sequence[Any]) -> _ByteTrie:
    """The byte trie of a vocabulary, shared by samplers over the same tokens (built in ~1 s for 49k)."""
    key = tuple(token_bytes(t) for t in vocab)
    trie = _TRIES.get(key)
    if trie is None:
        if len(_TRIES) >= 4:
            _TRIES.pop(next(iter(_TRIES)))
        trie = _TRIES[key] = _ByteTrie(vocab)
    return trie


class SetTokenSampler(TokenSampler):
    """Draws a weighted token set (`sample_set`), then one token in proportion to the weights.

    Args:
        iter_potential: the token-level potential (e.g. a `PromptedLLM`).
        item_potential: a byte-level potential (tokens are byte values).
        seed: see `TokenSampler`.
    """

    def __init__(
        self,
        iter_potential: Potential,
        item_potential: Potential,
        seed: int | np.random.Generator | None = None,
    ) -> None:
        for name, value in (("iter_potential", iter_potential), ("item_potential", item_potential)):
            if not isinstance(value, Potential):
                raise ValueError(f"{name} must be a Potential, got {type(value).__name__}")
        self.iter_potential = iter_potential
        self.item_potential = item_potential
        super().__init__(iter_potential * coerce(item_potential, iter_potential), seed)
        self.trie = _trie_of(iter_potential.vocab)
        self.eos_index = len(iter_potential.vocab)

    def _items(self, context: Sequence[Any]) -> list[int]:
        return list(b"".join(token_bytes(t) for t in context))

    async def sample_set(self, context: Sequence[Any]) -> tuple[np.ndarray, float]:
        """Log-weights over `vocab_eos` (-inf outside the set) and the log-probability of the set."""
        raise NotImplementedError

    async def sample(self, context: Sequence[Any]) -> tuple[Any, float, float]:
        """A token of a sampled set; weight = log of the set's total weight."""
        logws, logp = await self.sample_set(list(context))
        top = float(np.max(logws))
        if top == -math.inf:
            return self.target.eos, -math.inf, logp
        index = sample_index(logws, self.rng)
        log_z = top + math.log(float(np.sum(np.exp(logws - top))))
        return self.target.vocab_eos[index], log_z, logp + float(logws[index]) - log_z

    async def _iter_weights(self, context: list[Any]) -> np.ndarray:
        weights = np.asarray((await self.iter_potential.logw_next(context)).weights, dtype=float)
        check_log_weights(weights, f"{self.iter_potential.name}.logw_next")
        return weights


class EagerTokenSampler(SetTokenSampler):
    """The set of tokens spelled along one byte path drawn through the trie (see the module)."""

    async def sample_set(self, context: Sequence[Any]) -> tuple[np.ndarray, float]:
        context = list(context)
        iter_w = await self._iter_weights(context)
        top = float(np.max(iter_w))
        out = np.full(len(iter_w), -math.inf)
        if top == -math.inf:
            return out, 0.0
        linear = np.exp(iter_w - top)
        mass = self.trie.mass(linear[:-1])
        items = self._items(context)
        eos = self.item_potential.eos
        node, logw, logp = 0, 0.0, 0.0
        path: list[int] = []
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
                return out, logp
            choice = sample_linear(weights_arr, self.rng)
            logp += math.log(weights_arr[choice] / total)
            key = keys[choice]
            logw += float(row[key])
            if isinstance(key, EndOfSequence):
                out[self.eos_index] = iter_w[-1] + logw - logp
                return out, logp
            path.append(key)
            node = children[choice][1]


class TopKTokenSampler(SetTokenSampler):
    """The K heaviest tokens of the target, plus one wildcard token (see the module).

    Args:
        K: tokens to enumerate exactly (None: all of them, no wildcard).

    Raises:
        ValueError: if K is not a positive int or None; at sampling time, if the
            byte potential's weights grow along a path (the search's bound fails).
    """

    def __init__(
        self,
        iter_potential: Potential,
        item_potential: Potential,
        K: int | None,
        seed: int | np.random.Generator | None = None,
    ) -> None:
        if K is not None and (isinstance(K, bool) or not isinstance(K, int) or K < 1):
            raise ValueError(f"K must be a positive int or None, got {K!r}")
        super().__init__(iter_potential, item_potential, seed)
        self.K = K

    async def _best_first(self, context: list[Any], iter_w: np.ndarray) -> list[tuple[int, float]]:
        """The (token index, exact log-weight) of the K heaviest tokens, heaviest first.

        A heap holds trie nodes, keyed by an upper bound on every token below
        them (byte weights so far + the LM's largest weight below), and
        tokens, keyed by their exact weight; a token popped is the heaviest left.
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
                        f"{self.item_potential.name}'s weights grow along a byte path; top-K "
                        "search needs byte weights <= 0 (e.g. a boolean constraint)"
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
            for byte, child in self.trie.children[node].items():
                step = float(row[byte])
                if step == -math.inf or bound[child] == -math.inf:
                    continue
                value = logw + step
                heapq.heappush(
                    heap, (-(value + bound[child]), next(count), child, value, (*path, byte))
                )
        return out

    async def sample_set(self, context: Sequence[Any]) -> tuple[np.ndarray, float]:
        context = list(context)
        iter_w = await self._iter_weights(context)
        out = np.full(len(iter_w), -math.inf)
        best = await self._best_first(context, iter_w)
        for token, value in best:
            out[token] = value
        if self.K is None or len(best) < self.K:  # every token of positive weight is in
            return out, 0.0
        rest = iter_w.copy()
        rest[[t for t, _ in best]] = -math.inf
        top = float(np.max(rest))
        if top == -math.inf:
            return out, 0.0
        wildcard = sample_index(rest, self.rng)
        logp = float(rest[wildcard]) - (top + math.log(float(np.sum(np.exp(rest - top)))))
        out[wildcard] = iter_w[wildcard] + await self._guide(context, wildcard) - logp
        return out, logp

    async def _guide(self, context: list[Any], index: int) -> float:
        """The byte potential's weight of token `index` after `context` (its coerced logw_next)."""
        items = self._items(context)
        base = await self.item_potential.prefix(items)
        if index == self.eos_index:
            return float(await self.item_potential.complete(items)) - base
        token = self.iter_potential.vocab[index]
        return float(await self.item_potential.prefix(items + list(token_bytes(token)))) - base


def eager_token_sampler(
    iter_potential: Potential,
    item_potential: Potential,
    seed: int | np.random.Generator | None = None,
) -> TokenSampler:
    """Tokens of `iter_potential` (an LM) guided byte by byte by `item_potential` (a byte-level one).

    The target is `iter_potential * coerce(item_potential, iter_potential)`;
    see `EagerTokenSampler`.
    """
    return EagerTokenSampler(iter_potential, item_potential, seed=seed)


def topk_token_sampler(
    iter_potential: Potential,
    item_potential: Potential,
    K: int | None,
    seed: int | np.random.Generator | None = None,
) -> TokenSampler:
    """The K heaviest tokens of `iter_potential * coerce(item_potential, ...)` plus a wildcard.

    See `TopKTokenSampler`.
    """
    return TopKTokenSampler(iter_potential, item_potential, K, seed=seed)
