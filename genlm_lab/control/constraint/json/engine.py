"""`KeyedEngine`: llguidance's JSON mask with the object-key rules of `json.keys` on top.

llguidance computes the mask of the relaxed schema over the whole vocabulary
in one native call; then only the tokens it allows that could break a key
rule are read in Python: those holding a `"`, `{`, `}` or `,` (inside a value
string, only those holding a `"`; inside a key whose possible names are all
known, every allowed token). Key-rule states are cached per context, and an
extended context costs one `feed` of its last token.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from genlm_lab.control.constraint.json.keys import STR, KeyRules, State
from genlm_lab.control.constraint.llg.engine import Engine
from genlm_lab.control.constraint.llg.mask_weights import read_only_masks, unpack_mask
from genlm_lab.control.constraint.llg.matcher_cache import as_key

__all__ = ["KeyedEngine"]

_MISSING = object()


def _holding(tokens: list[bytes], chars: bytes) -> np.ndarray:
    return np.array([any(c in t for c in chars) for t in tokens], dtype=bool)


class KeyedEngine:
    """An `Engine` whose masks, checks and completions also obey `rules` (same interface).

    `accepting` (a potential's `complete`) is `check` on the text alone, whatever
    the mask: a valid document written with its keys in another order than the
    mask's, or with more whitespace, is still complete.

    Args:
        inner: the llguidance engine of the relaxed schema.
        rules: the schema's key rules.
        check: the exact check of a finished text (jsonschema's verdict).
        cache_size: how many contexts' key states and masks to keep.
    """

    def __init__(
        self, inner: Engine, rules: KeyRules, check: Callable[[bytes], bool], cache_size: int = 4096
    ) -> None:
        self.inner = inner
        self.rules = rules
        self.check = check
        self._checked: OrderedDict[Any, bool] = OrderedDict()
        self.n_tokens = inner.n_tokens
        self._tokens: list[bytes] = inner._tokens
        self._quote = _holding(self._tokens, b'"')
        self._hot = _holding(self._tokens, b'"{},')
        self._quote_or_escape = _holding(self._tokens, b'"\\')
        self._states: OrderedDict[Any, State | None] = OrderedDict()
        self._masks: OrderedDict[Any, np.ndarray] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.RLock()
        self.stats = {"read": 0, "refused": 0}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    # ------------------------------------------------------------ states
    def _remember(self, cache: OrderedDict, context: Any, value: Any) -> Any:
        cache[context] = value
        if len(cache) > self._cache_size:
            cache.popitem(last=False)
        return value

    def key_state(self, context: Any) -> State | None:
        """The key-rule state after `context` (None if it breaks a rule)."""
        if not context:
            return self.rules.start
        with self._lock:
            found = self._states.get(context, _MISSING)
            if found is not _MISSING:
                return found
            parent = context[:-1]
            if not parent or parent in self._states:
                base = self.key_state(parent)
                state = None if base is None else self.rules.feed(base, self._text(context[-1:]))
            else:
                state = self.rules.feed(self.rules.start, self._text(context))
            return self._remember(self._states, context, state)

    def _text(self, context: Any) -> bytes:
        if isinstance(context, bytes) and self.n_tokens == 256:
            return context
        return b"".join(self._tokens[i] for i in context)

    # ------------------------------------------------------------ queries
    def alive(self, context: Any) -> bool:
        context = as_key(context)
        return self.inner.alive(context) and self.key_state(context) is not None

    def accepting(self, context: Any) -> bool:
        context = as_key(context)
        with self._lock:
            found = self._checked.get(context)
            if found is None:
                try:
                    text = self._text(context)
                except IndexError:  # EOS inside the context
                    return False
                found = self._remember(self._checked, context, bool(self.check(text)))
            return found

    def allows(self, context: Any, token: int) -> bool:
        context = as_key(context)
        bits = self._masks.get(context)
        if bits is not None:
            return bool((bits[token >> 3] >> (token & 7)) & 1)
        if not self.inner.allows(context, token):
            return False
        state = self.key_state(context)
        if state is None:
            return False
        return token >= self.n_tokens or self.rules.feed(state, self._tokens[token]) is not None

    def mask(self, context: Any) -> np.ndarray:
        return self.masks([context])[0]

    def masks(self, contexts: Sequence[Any]) -> list[np.ndarray]:
        return read_only_masks(self.bits(contexts), self.n_tokens + 1)

    def bits(self, contexts: Sequence[Any]) -> list[np.ndarray]:
        """llguidance's packed masks, less the tokens that break a key rule."""
        contexts = [as_key(c) for c in contexts]
        with self._lock:
            out = [self._masks.get(c) for c in contexts]
            todo = [i for i, b in enumerate(out) if b is None]
            if todo:
                raw = self.inner.bits([contexts[i] for i in todo])
                for i, bits in zip(todo, raw, strict=True):
                    found = self._masks.get(contexts[i])
                    if found is None:
                        found = self._refine(contexts[i], bits)
                        self._remember(self._masks, contexts[i], found)
                    out[i] = found
            return out  # type: ignore[return-value]

    def _refine(self, context: Any, bits: np.ndarray) -> np.ndarray:
        if not bits.any():
            return bits
        state = self.key_state(context)
        if state is None:
            return np.zeros_like(bits)
        allowed = unpack_mask(bits, self.n_tokens)
        plain_dead = None
        if state[0] == STR:
            allowed &= self._quote
        elif not self.rules.in_key(state):
            allowed &= self._hot
        else:
            keys = self.rules.key_filter_mask(state, self._tokens)
            if keys is not None:  # a filtered key: one native mask for the plain tokens
                plain_dead = allowed & ~self._quote_or_escape & ~keys
                allowed &= self._quote_or_escape
        candidates = np.flatnonzero(allowed)
        self.stats["read"] += len(candidates)
        feed, tokens = self.rules.feed, self._tokens
        bad = [i for i in candidates.tolist() if feed(state, tokens[i]) is None]
        if plain_dead is not None:
            bad.extend(np.flatnonzero(plain_dead).tolist())
        if not bad:
            return bits
        self.stats["refused"] += len(bad)
        out = bits.copy()
        for i in bad:
            out[i >> 3] &= ~np.uint8(1 << (i & 7))
        out.flags.writeable = False
        return out

    def clear(self) -> None:
        with self._lock:
            self.inner.clear()
            self._states.clear()
            self._masks.clear()
            self._checked.clear()
