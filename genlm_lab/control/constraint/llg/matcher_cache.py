"""Matcher states per context, in time linear in the new tokens and memory bounded by a budget.

An llguidance matcher remembers every token it consumed (it can roll back),
so copying one costs time in proportion to its context: copying per token
would make a walk through a long document quadratic. Instead a context that
is extended *moves* its parent's matcher forward (one `consume_token`), and
leaves behind a note of where it went. When the parent is asked for again (a
resampled particle, a second child), the matcher is recovered by copying the
descendant's and rolling it back. A context nobody cached is rebuilt from its
nearest cached ancestor (checked at distances 1, 2, 4, 8, ...), else from the
root, in one native `consume_tokens` call; no recursion anywhere.

Memory: entries are dropped least recently used first when their number or
the total length of their contexts passes a budget.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Collection

import llguidance

__all__ = ["Key", "StateCache", "as_key"]


class Key(tuple):
    """A context (tuple of token indices) that hashes once: long contexts are looked up often."""

    def __new__(cls, items=()) -> Key:
        self = super().__new__(cls, items)
        self.h = tuple.__hash__(self)
        return self

    def __hash__(self) -> int:
        return self.h


def as_key(context) -> bytes | Key:
    """`context` as a dictionary key whose hash is computed once (bytes cache theirs)."""
    if isinstance(context, (bytes, Key)):
        return context
    return Key(context)


class _Entry:
    """A context's state: its matcher, or dead, or moved on to a longer context."""

    __slots__ = ("matcher", "moved_to")

    def __init__(self, matcher: llguidance.LLMatcher | None, moved_to: tuple | None = None) -> None:
        self.matcher = matcher
        self.moved_to = moved_to

    @property
    def dead(self) -> bool:
        return self.matcher is None and self.moved_to is None


class StateCache:
    """Matchers advanced through contexts (tuples of token indices).

    Args:
        root: the matcher at the empty context (never moved; copied).
        n_tokens: token indices >= this (EOS) cannot be consumed.
        max_entries: the most contexts kept.
        max_tokens: the most tokens summed over the kept contexts.
    """

    def __init__(
        self,
        root: llguidance.LLMatcher,
        n_tokens: int,
        max_entries: int = 4096,
        max_tokens: int = 1 << 22,
    ) -> None:
        self.root = root
        self.n_tokens = n_tokens
        self.max_entries = max_entries
        self.max_tokens = max_tokens
        self._entries: OrderedDict[tuple[int, ...], _Entry] = OrderedDict()
        self._total = 0
        self.stats = {"consumed": 0, "copies": 0, "moves": 0, "rebuilt": 0}

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        self._entries.clear()
        self._total = 0

    # ------------------------------------------------------------ bookkeeping
    def _put(self, context: tuple[int, ...], entry: _Entry) -> None:
        old = self._entries.pop(context, None)
        if old is not None:
            self._total -= len(context)
        self._entries[context] = entry
        self._total += len(context)
        while len(self._entries) > 1 and (
            len(self._entries) > self.max_entries or self._total > self.max_tokens
        ):
            gone, _ = self._entries.popitem(last=False)
            self._total -= len(gone)

    def _matcher(
        self, context: tuple[int, ...] | bytes, entry: _Entry
    ) -> llguidance.LLMatcher | None:
        """The entry's matcher, recovered from where it moved if need be (None if lost)."""
        if entry.matcher is not None:
            return entry.matcher
        target, hops = entry.moved_to, 0
        while target is not None and hops < 64:
            found = self._entries.get(target)
            if found is None:
                return None
            if found.matcher is not None:
                copy = found.matcher.deep_copy()
                self.stats["copies"] += 1
                if not copy.rollback(len(target) - len(context)):
                    return None
                entry.matcher, entry.moved_to = copy, None
                return copy
            target, hops = found.moved_to, hops + 1
        return None

    # ------------------------------------------------------------ lookup
    def get(
        self, context: tuple[int, ...], pinned: Collection[tuple[int, ...]] = ()
    ) -> llguidance.LLMatcher | None:
        """The matcher at `context` (owned by the cache: read it, never advance it), or None
        if the context is outside the grammar.

        Args:
            context: token indices.
            pinned: contexts whose matchers the caller holds: they are copied, never moved.
        """
        if not context:
            return self.root
        context = as_key(context)
        entry = self._entries.get(context)
        if entry is not None:
            self._entries.move_to_end(context)
            if entry.dead:
                return None
            matcher = self._matcher(context, entry)
            if matcher is not None:
                return matcher
        start, base = self._ancestor(context)
        if base is None:
            self._put(context, _Entry(None))
            return None
        suffix = list(context[start:])  # ints, from bytes or a tuple
        if max(suffix) >= self.n_tokens:  # EOS cannot be followed
            self._put(context, _Entry(None))
            return None
        ancestor = as_key(context[:start])
        movable = start > 0 and ancestor not in pinned
        if len(suffix) == 1 and base.validate_tokens(suffix) < 1:
            # Checked first: consuming a refused token costs far more (an error state).
            self._put(context, _Entry(None))
            return None
        matcher = base if movable else base.deep_copy()
        self.stats["moves" if movable else "copies"] += 1
        done = matcher.try_consume_tokens(suffix)  # one parse, stops before a refused token
        if done < len(suffix) or matcher.is_error():
            if movable and not (matcher.rollback(done) and not matcher.is_error()):
                if self._entries.pop(ancestor, None) is not None:  # not restored: forget it
                    self._total -= len(ancestor)
            self._put(context, _Entry(None))
            return None
        if movable:
            parent = self._entries.get(ancestor)
            if parent is not None:
                parent.matcher, parent.moved_to = None, context
        if len(suffix) > 1:
            self.stats["rebuilt"] += 1
        self.stats["consumed"] += len(suffix)
        self._put(context, _Entry(matcher))
        return matcher

    def _ancestor(self, context: tuple[int, ...]) -> tuple[int, llguidance.LLMatcher | None]:
        """`(length, matcher)` of the nearest cached live ancestor; matcher None if one is dead."""
        n, step = len(context), 1
        while n - step > 0:
            k = n - step
            ancestor = as_key(context[:k])
            entry = self._entries.get(ancestor)
            if entry is not None:
                if entry.dead:
                    return k, None
                matcher = self._matcher(ancestor, entry)
                if matcher is not None:
                    return k, matcher
            step *= 2
        return 0, self.root
