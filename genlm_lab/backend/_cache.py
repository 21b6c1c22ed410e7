"""Token-trie cache of next-token log-probs and KV segments, LRU-bounded.

One trie per adapter (None = the base model) so that nothing cached under one
LoRA adapter is ever returned under another. A node stands for a token prefix
and may hold:

- ``logprobs``: the normalised next-token log-probs after that prefix;
- ``kv``: a KV *segment*, the keys and values of the tokens at depths
  ``(kv_start, depth]``, as one tensor of shape (layers, 2, heads, n, head_dim).
  The keys and values of the tokens before ``kv_start`` come from ``kv_base``,
  another KV node whose prefix covers depth ``kv_start``. A chain of segments
  stores a shared prefix once, however many continuations extend it.

Both kinds of entry sit in their own LRU list. Using a KV node touches its
whole chain, so a base is always more recent than the segments built on it and
eviction from the cold end never strands a segment (a node still used as a
base is skipped anyway).

The cache is thread-safe: every public method runs under one re-entrant lock,
because the event loop reads it (`get_logprobs`) while a forward in another
thread (`next_token_logprobs_sync`, an executor) writes it. A `KVHandle` holds
the segments it found, so a handle stays usable after a concurrent `clear_kv`
or eviction; a segment stored on a base dropped meanwhile is not kept.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Any, TypeVar

import torch

#: How many trie nodes a KV lookup searches below the point where a query
#: leaves the cached paths, for a segment it can slice the prefix from.
_DESCENDANT_SEARCH = 64

_F = TypeVar("_F", bound=Callable[..., Any])


def _locked(method: _F) -> _F:
    """Run a `TokenTrieCache` method under the cache's lock."""

    @functools.wraps(method)
    def wrapper(self: TokenTrieCache, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            return method(self, *args, **kwargs)

    return wrapper  # type: ignore[return-value]


class _Node:
    __slots__ = (
        "children",
        "parent",
        "token",
        "depth",
        "logprobs",
        "kv",
        "kv_start",
        "kv_base",
        "kv_users",
    )

    def __init__(self, parent: _Node | None, token: int, depth: int) -> None:
        self.children: dict[int, _Node] = {}
        self.parent = parent
        self.token = token
        self.depth = depth
        self.logprobs: torch.Tensor | None = None
        self.kv: torch.Tensor | None = None
        self.kv_start = 0
        self.kv_base: _Node | None = None
        self.kv_users = 0  # KV nodes that use this node as their base


class KVHandle:
    """The cached keys and values of a prefix: a chain of segments to concatenate.

    The segments are collected when the handle is made (under the cache's
    lock), so the handle stays valid if the cache drops them afterwards.

    Attributes:
        length: number of prefix tokens covered.
        node: the KV node whose chain covers them (sliced to `length`).
    """

    __slots__ = ("length", "node", "_pieces")

    def __init__(self, node: _Node | None, length: int) -> None:
        self.node = node
        self.length = length
        out = []
        upto = length
        while upto > 0 and node is not None:
            start = node.kv_start
            if start < upto:
                seg = node.kv
                out.append(seg if upto >= node.depth else seg[..., : upto - start, :])
                upto = start
            node = node.kv_base
        out.reverse()
        self._pieces = out

    def pieces(self) -> list[torch.Tensor]:
        """Segments in order, each (layers, 2, heads, n, head_dim), covering `length` tokens."""
        return list(self._pieces)


class CachedPrefix:
    """What the cache holds for one token prefix, read at one moment (see `TokenTrieCache.walk`).

    Attributes:
        length: number of tokens in the prefix.
        logprobs: the next-token log-probs after it, or None if not cached.
        past_key_values: a `KVHandle` over the keys and values of all its
            tokens when a segment ends at this prefix, else None.
    """

    __slots__ = ("length", "logprobs", "past_key_values")

    def __init__(
        self, length: int, logprobs: torch.Tensor | None, past_key_values: KVHandle | None
    ) -> None:
        self.length = length
        self.logprobs = logprobs
        self.past_key_values = past_key_values

    def __repr__(self) -> str:
        kv = "" if self.past_key_values is None else ", keys and values"
        lp = "" if self.logprobs is None else ", log-probs"
        return f"CachedPrefix(length={self.length}{lp}{kv})"


class TokenTrieCache:
    """Prefix-tree cache of log-probs and KV segments for one model (thread-safe).

    Args:
        max_kv_tokens: most token positions whose keys and values are kept
            (summed over all segments and adapters); the least recently used
            segments go first.
        max_logprobs: most log-prob vectors kept (each holds vocab_size floats).
    """

    def __init__(self, max_kv_tokens: int, max_logprobs: int) -> None:
        if max_kv_tokens < 0 or max_logprobs < 0:
            raise ValueError(
                f"cache bounds must be >= 0, got max_kv_tokens={max_kv_tokens}, "
                f"max_logprobs={max_logprobs}"
            )
        self.max_kv_tokens = max_kv_tokens
        self.max_logprobs = max_logprobs
        self._roots: dict[Hashable, _Node] = {}
        self._kv_lru: OrderedDict[_Node, None] = OrderedDict()
        self._lp_lru: OrderedDict[_Node, None] = OrderedDict()
        self.kv_tokens = 0
        self.evictions = 0
        # One re-entrant lock around every public method: the event loop and
        # forward threads use the cache at once (see the module docstring).
        self._lock = threading.RLock()

    # -- lookups ---------------------------------------------------------------

    def _walk(self, adapter: Hashable, ids: Sequence[int]) -> tuple[_Node | None, int]:
        node = self._roots.get(adapter)
        if node is None:
            return None, 0
        depth = 0
        for tok in ids:
            child = node.children.get(tok)
            if child is None:
                break
            node = child
            depth += 1
        return node, depth

    @_locked
    def get_logprobs(self, adapter: Hashable, ids: Sequence[int]) -> torch.Tensor | None:
        """The stored log-probs after exactly `ids`, or None."""
        node, depth = self._walk(adapter, ids)
        if node is None or depth != len(ids) or node.logprobs is None:
            return None
        self._lp_lru.move_to_end(node)
        return node.logprobs

    @_locked
    def longest_kv(self, adapter: Hashable, ids: Sequence[int], limit: int) -> KVHandle:
        """Cached keys and values for the longest prefix of `ids` up to `limit` tokens.

        The prefix may come from a segment on the path of `ids` or, sliced, from
        one below the point where `ids` leaves the cached paths.
        """
        root = self._roots.get(adapter)
        if root is None or limit <= 0 or not self._kv_lru:
            return KVHandle(None, 0)
        best: _Node | None = None
        node = root
        for tok in ids[:limit]:
            child = node.children.get(tok)
            if child is None:
                break
            node = child
            if node.kv is not None:
                best = node
        matched = node.depth
        best_len = best.depth if best is not None else 0
        if matched > best_len:
            below = self._kv_below(node)
            if below is not None:
                best, best_len = below, matched
        if best is None:
            return KVHandle(None, 0)
        self._touch_chain(best)
        return KVHandle(best, best_len)

    @_locked
    def walk(self, adapter: Hashable, ids: Sequence[int]) -> CachedPrefix:
        """The longest prefix of `ids` on a cached path, and what is stored for it.

        Reading does not count as a use: the LRU order stays as it was.
        """
        node, depth = self._walk(adapter, ids)
        if node is None:
            return CachedPrefix(0, None, None)
        kv = KVHandle(node, depth) if node.kv is not None else None
        return CachedPrefix(depth, node.logprobs, kv)

    def _kv_below(self, node: _Node) -> _Node | None:
        stack = list(node.children.values())
        seen = 0
        while stack and seen < _DESCENDANT_SEARCH:
            cand = stack.pop()
            seen += 1
            if cand.kv is not None:
                return cand  # its chain covers every depth down to node's
            stack.extend(cand.children.values())
        return None

    # -- stores ----------------------------------------------------------------

    def _node_for(self, adapter: Hashable, ids: Sequence[int]) -> _Node:
        node = self._roots.get(adapter)
        if node is None:
            node = self._roots[adapter] = _Node(None, -1, 0)
        for tok in ids:
            child = node.children.get(tok)
            if child is None:
                child = node.children[tok] = _Node(node, tok, node.depth + 1)
            node = child
        return node

    @_locked
    def put_logprobs(self, adapter: Hashable, ids: Sequence[int], logprobs: torch.Tensor) -> None:
        """Store the log-probs after `ids` (evicting the oldest beyond the bound)."""
        if self.max_logprobs == 0:
            return
        node = self._node_for(adapter, ids)
        node.logprobs = logprobs
        self._lp_lru[node] = None
        self._lp_lru.move_to_end(node)
        while len(self._lp_lru) > self.max_logprobs:
            old, _ = self._lp_lru.popitem(last=False)
            old.logprobs = None
            self.evictions += 1
            self._prune(old)

    @_locked
    def put_kv(
        self,
        adapter: Hashable,
        ids: Sequence[int],
        base: KVHandle,
        segment: torch.Tensor,
        evict: bool = True,
    ) -> None:
        """Store the keys and values of ids[base.length:], extending `base`.

        Args:
            adapter: the adapter the KV was computed under.
            ids: the whole prefix.
            base: the cached prefix the segment continues (length 0 for none).
            segment: (layers, 2, heads, len(ids) - base.length, head_dim).
            evict: evict beyond the bound now; pass False while storing a
                batch whose bases must stay, then call `evict()`.
        """
        n = segment.shape[-2]
        if n != len(ids) - base.length:
            raise ValueError(f"KV segment of {n} tokens does not cover ids[{base.length}:]")
        if n > self.max_kv_tokens:
            return
        if base.length > 0 and (base.node is None or base.node not in self._kv_lru):
            return  # its base was dropped (cleared by another thread): no chain to extend
        node = self._node_for(adapter, ids)
        if node.kv is not None:
            self._touch_chain(node)
            return
        node.kv = segment
        node.kv_start = base.length
        node.kv_base = base.node if base.length > 0 else None
        if node.kv_base is not None:
            node.kv_base.kv_users += 1
        self.kv_tokens += n
        self._kv_lru[node] = None
        self._touch_chain(node)
        if evict:
            self.evict()

    def _touch_chain(self, node: _Node | None) -> None:
        while node is not None:
            self._kv_lru.move_to_end(node)
            node = node.kv_base

    @_locked
    def evict(self) -> None:
        """Drop the least recently used KV segments until within `max_kv_tokens`."""
        while self.kv_tokens > self.max_kv_tokens:
            victim = next((n for n in self._kv_lru if n.kv_users == 0), None)
            if victim is None:
                return
            self._drop_kv(victim)
            self.evictions += 1

    def _drop_kv(self, node: _Node) -> None:
        del self._kv_lru[node]
        self.kv_tokens -= node.kv.shape[-2]
        node.kv = None
        if node.kv_base is not None:
            node.kv_base.kv_users -= 1
            node.kv_base = None
        self._prune(node)

    def _prune(self, node: _Node) -> None:
        """Remove empty leaves upwards so that the trie stays as small as its data."""
        while (
            node.parent is not None
            and node.parent.children.get(node.token) is node  # not detached already
            and not node.children
            and node.kv is None
            and node.logprobs is None
            and node.kv_users == 0
        ):
            del node.parent.children[node.token]
            node = node.parent

    # -- clearing --------------------------------------------------------------

    @_locked
    def clear(self, adapter: Hashable | type[Ellipsis] = ...) -> None:
        """Forget everything (or everything cached under one adapter)."""
        if adapter is ...:
            self._roots.clear()
            self._kv_lru.clear()
            self._lp_lru.clear()
            self.kv_tokens = 0
            return
        self._roots.pop(adapter, None)
        roots = set(self._roots.values())
        for lru in (self._kv_lru, self._lp_lru):
            for node in [n for n in lru if _root_of(n) not in roots]:
                del lru[node]
        self.kv_tokens = sum(n.kv.shape[-2] for n in self._kv_lru)

    @_locked
    def clear_kv(self) -> None:
        """Forget every KV segment but keep the log-probs."""
        for node in list(self._kv_lru):
            node.kv = None
            node.kv_base = None
            node.kv_users = 0
        for node in list(self._kv_lru):
            self._prune(node)
        self._kv_lru.clear()
        self.kv_tokens = 0

    def __len__(self) -> int:
        """Number of entries (log-prob vectors plus KV segments) held."""
        return len(self._lp_lru) + len(self._kv_lru)

    @property
    def n_logprobs(self) -> int:
        """Number of log-prob vectors held."""
        return len(self._lp_lru)

    @property
    def n_kv_segments(self) -> int:
        """Number of KV segments held."""
        return len(self._kv_lru)


def _root_of(node: _Node) -> _Node:
    while node.parent is not None:
        node = node.parent
    return node
