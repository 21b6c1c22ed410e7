"""`WCFG`: a weighted context-free grammar as a potential (genlm-control's `WCFG`).

`complete(x)` is the log of the total weight of the derivations of exactly
`x`; `prefix(x)` the log of the total weight of every string that starts
with `x` (a sum over infinitely many strings in general, computed exactly:
`genlm_lab.control.wcfg._chart`); `logw_next(x)[y] = prefix(x + [y]) -
prefix(x)`, and `complete(x) - prefix(x)` for EOS. Build one from
genlm-grammar's text format with `WCFG.from_string` (terminals become bytes)
or from a `WeightedGrammar` (also `genlm_lab.control.WeightedGrammar`).
"""

from __future__ import annotations

import copy
import html
import math
import operator
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from genlm_lab.control.core.constant import EndOfSequence
from genlm_lab.control.core.weights import LazyWeights
from genlm_lab.control.potential.base import Potential
from genlm_lab.control.wcfg._chart import Column, Tables
from genlm_lab.control.wcfg.grammar import WeightedGrammar

__all__ = ["WCFG", "WeightedGrammar"]

_CACHE_SIZE = 4096  # contexts whose chart columns are kept (the oldest go first)


def _as_grammar(cfg: Any) -> WeightedGrammar:
    """Our grammar from a `WeightedGrammar` or a genlm-grammar `CFG` (duck-typed) over Float."""
    if isinstance(cfg, WeightedGrammar):
        if cfg.semiring != "float":
            raise ValueError(f"cfg semiring must be Float: got a {cfg.semiring} grammar")
        return cfg
    semiring = getattr(cfg, "R", None)
    if semiring is not None and hasattr(cfg, "S") and hasattr(cfg, "V"):
        name = getattr(semiring, "__name__", type(semiring).__name__)
        if name != "Float":
            raise ValueError(f"cfg semiring must be Float, got {name}")
        rules = getattr(cfg, "rules", None)
        rules = list(cfg) if rules is None else rules
        try:
            triples = [(r.w, r.head, tuple(r.body)) for r in rules]
        except AttributeError:
            raise TypeError(
                f"cannot read the rules of {type(cfg).__name__}: expected rules with .w, .head, .body"
            ) from None
        return WeightedGrammar(S=cfg.S, V=cfg.V, rules=triples)
    raise TypeError(
        "WCFG takes a WeightedGrammar (or a genlm-grammar CFG over Float), "
        f"got {type(cfg).__name__}; from text use WCFG.from_string"
    )


def _sorted(symbols: set[Hashable]) -> list[Hashable]:
    try:
        return sorted(symbols)
    except TypeError:  # mixed types
        return sorted(symbols, key=lambda x: (type(x).__name__, repr(x)))


def _log(x: float) -> float:
    return math.log(x) if x > 0 else -math.inf


class WCFG(Potential):
    """A weighted context-free grammar over its terminals (bytes, from text) as a potential.

    Args:
        cfg: a `WeightedGrammar` with float weights, or a genlm-grammar `CFG`
            over `Float` (converted). Kept as `.cfg`.

    The vocabulary is the grammar's terminals, sorted (for a byte grammar the
    byte values in it, e.g. `[97, 98, 99]`). Contexts are lists of tokens or,
    for a byte grammar, `bytes` (`b"ab"`, `[97, 98]` and `[b"a", b"b"]` are
    the same context); a byte the grammar does not use weighs zero.

    Weights are exact sums over derivations, including infinitely many (unary
    cycles, nullable symbols) and, for `prefix`, over every continuation; the
    grammar's partition function is solved once, when the potential is built.

    Raises:
        ValueError: if the grammar is boolean (or a genlm-grammar CFG over another
            semiring than Float), has no terminals, or its total weight diverges.
        TypeError: if `cfg` is not a grammar.
    """

    def __init__(self, cfg: Any) -> None:
        grammar = _as_grammar(cfg)
        vocab = _sorted(grammar.V)
        if not vocab:
            raise ValueError("the grammar has no terminals: a WCFG needs at least one")
        super().__init__(vocab)
        self.cfg = cfg
        self.grammar = grammar
        self._bytes = grammar.is_bytes
        if self._bytes:  # b"a" names the byte 97, as in the byte-level potentials
            for i, b in enumerate(vocab):
                self.lookup.setdefault(bytes([b]), i)
        self._index = {t: i for i, t in enumerate(vocab)}
        self._tables = Tables(grammar, vocab)
        self._columns_cache: dict[tuple[int, ...], tuple[Column, ...]] = {}
        self._next_cache: dict[tuple[int, ...], np.ndarray] = {}

    @classmethod
    def from_string(cls, grammar: str, to_bytes: bool = True, **kwargs: Any) -> WCFG:
        """A WCFG from genlm-grammar's text format (`0.5: S -> a S`, one rule a line).

        Args:
            grammar: the rules; a body symbol is a terminal iff its first
                character is not upper case; the start symbol is `S`.
            to_bytes: spell each terminal as its UTF-8 bytes, one token per byte
                (default), as genlm-control does; False keeps the words as tokens.
            **kwargs: passed to the constructor.

        Raises:
            ValueError: naming the first line that is not a rule, or as the constructor.
        """
        cfg = WeightedGrammar.from_string(grammar, "float")
        if to_bytes:
            cfg = cfg.to_bytes()
        return cls(cfg, **kwargs)

    # ------------------------------------------------------------ contexts
    def _symbols(self, context: Sequence[Any]) -> tuple[int, ...]:
        """Vocabulary indices of a context's symbols (-1: a symbol of zero weight)."""
        index = self._index
        if isinstance(context, (bytes, bytearray)):
            if not self._bytes:
                raise ValueError(f"a bytes context needs a byte-level grammar; {self.name} is not")
            return tuple(index.get(b, -1) for b in context)
        out = []
        for pos, token in enumerate(context):
            if isinstance(token, EndOfSequence):
                raise ValueError(f"EOS at position {pos}: prefix and complete take no EOS")
            if self._bytes:
                token = self._byte(token, pos)
            try:
                out.append(index.get(token, -1))
            except TypeError:
                raise ValueError(f"token {token!r:.60} at position {pos} is unhashable") from None
        return tuple(out)

    @staticmethod
    def _byte(token: Any, pos: int) -> int:
        if isinstance(token, (bytes, bytearray)):
            if len(token) != 1:
                raise ValueError(
                    f"token {bytes(token)!r:.60} at position {pos} is not one byte "
                    "(a byte-level WCFG reads one byte per token)"
                )
            return token[0]
        try:
            value = operator.index(token)
        except TypeError:
            raise ValueError(
                f"token {token!r:.60} at position {pos} is not a byte (an int 0..255 or bytes)"
            ) from None
        if not 0 <= value < 256:
            raise ValueError(f"token {token!r} at position {pos} is not a byte value 0..255")
        return value

    def encode(self, context: Sequence[Any]) -> list[int]:
        if isinstance(context, (bytes, bytearray)) and self._bytes:
            context = list(context)
        return super().encode(context)

    # ------------------------------------------------------------ chart, cached by context
    def _columns(self, key: tuple[int, ...]) -> tuple[Column, ...]:
        cache = self._columns_cache
        found = cache.get(key)
        if found is not None:
            return found
        k = max(len(key) - 1, 0)
        while k > 0 and key[:k] not in cache:
            k -= 1
        columns = cache[key[:k]] if k > 0 else (self._tables.first_column(),)
        for t in range(k, len(key)):
            columns = (*columns, self._tables.extend(columns, key[t]))
            self._store(cache, key[: t + 1], columns)
        return columns

    def _next(self, key: tuple[int, ...]) -> np.ndarray:
        """Log prefix weight of `key + [y]` for every token y (vocabulary order)."""
        found = self._next_cache.get(key)
        if found is None:
            found = self._tables.next_prefix(self._columns(key))
            self._store(self._next_cache, key, found)
        return found

    @staticmethod
    def _store(cache: dict, key: tuple[int, ...], value: Any) -> None:
        if len(cache) >= _CACHE_SIZE:
            for old in list(cache)[: _CACHE_SIZE // 4]:
                del cache[old]
        cache[key] = value

    def _prefix(self, key: tuple[int, ...]) -> float:
        if not key:
            return _log(float(self._tables.Z[self._tables.start]))
        if -1 in key:
            return -math.inf
        return float(self._next(key[:-1])[key[-1]])

    def _complete(self, key: tuple[int, ...]) -> float:
        if not key:
            return _log(float(self._tables.E[self._tables.start]))
        if -1 in key:
            return -math.inf
        return self._columns(key)[-1].inside_start

    # ------------------------------------------------------------ the potential
    async def complete(self, context: Sequence[Any]) -> float:
        """Log of the total weight of the derivations of exactly `context`."""
        return self._complete(self._symbols(context))

    async def prefix(self, context: Sequence[Any]) -> float:
        """Log of the total weight of every string that starts with `context`."""
        return self._prefix(self._symbols(context))

    async def logw_next(self, context: Sequence[Any]) -> LazyWeights:
        """`prefix(context + [y]) - prefix(context)` for each token y; EOS: `complete - prefix`.

        Raises:
            ValueError: if `context` has prefix weight zero (nothing can follow it).
        """
        key = self._symbols(context)
        base = self._prefix(key)
        if base == -math.inf:
            raise ValueError(
                f"Context {list(context)!r:.80} has weight zero under `prefix` of {self.name}: "
                "nothing can follow it"
            )
        out = np.empty(len(self.vocab_eos))
        out[:-1] = self._next(key) - base
        out[-1] = self._complete(key) - base
        return self.make_lazy_weights(out)

    def clear_cache(self) -> None:
        """Forget the chart columns kept for the contexts seen so far."""
        self._columns_cache.clear()
        self._next_cache.clear()

    async def cleanup(self) -> None:
        self.clear_cache()

    def spawn(self) -> WCFG:
        """A WCFG of the same grammar with its own cache (the compiled tables are shared)."""
        new = copy.copy(self)
        new.__dict__.pop("_autobatched", None)
        new._columns_cache = {}
        new._next_cache = {}
        return new

    def __repr__(self) -> str:
        return f"WCFG(cfg={self.cfg!r})"

    def _repr_html_(self) -> str:
        view = getattr(self.cfg, "_repr_html_", None)
        return view() if callable(view) else f"<pre>{html.escape(repr(self.cfg))}</pre>"
