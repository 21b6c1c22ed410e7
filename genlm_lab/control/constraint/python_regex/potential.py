"""`PythonRegex`: a pattern of Python's `regex` module as a constraint over bytes.

The `regex` module has what no automaton compiles: backreferences,
lookarounds, recursion, conditionals, possessive and atomic groups. What it
offers instead is partial matching: `fullmatch(text, partial=True)` says
whether the engine ran out of text before it could fail, i.e. whether `text`
may still be the start of a match. That is this potential's prefix check;
`fullmatch` is its complete check. Each call re-runs the backtracking engine
over the whole text, so this is an *expensive* potential: a full next-byte
mask costs one call per allowed byte, which is why samplers such as `AWRS`
(a few calls per token) suit it. Coerced onto a tokenizer's vocabulary, its
token mask walks the tokens' byte trie (`walk_byte_trie`): one call per trie
node whose parent is live, a dead node ruling out its subtree. Where the
pattern is one character set, or is regular in the syntax Python's `re` reads
the same way (no backreferences, lookarounds, `\b`, flags, ...), the mask is
read off an automaton instead (`CharAutomaton`): it gives exactly the engine's
partial-match verdicts, and runs over every node of a trie depth at once.
Bytes are read as UTF-8. A context that ends inside a multi-byte character is
live when some character starting with those bytes keeps the match alive; the
characters tried are every one of the range when it holds at most 64, else
one per (Unicode category, script word of the character name) per 4,096 code
points, plus the characters the pattern spells (and their case variants).
"""

from __future__ import annotations

import math
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np
import regex

from genlm_lab.control.constraint.errors import InvalidGrammar
from genlm_lab.control.constraint.python_regex.automaton import CharAutomaton
from genlm_lab.control.constraint.python_regex.budget import PatternBudget
from genlm_lab.control.constraint.python_regex.trie_walk import (
    _BYTES,
    _POSITIONAL,
    _UNTIMED_CHARS,
    TrieWalker,
)
from genlm_lab.control.constraint.python_regex.utf8 import (
    ascii_only,
    char_range,
    representatives,
    spelled_chars,
    split_step,
    split_utf8,
)
from genlm_lab.control.core.weights import LazyWeights
from genlm_lab.control.potential.base import Potential

__all__ = ["PythonRegex"]

_LIVE_CACHE_CHARS = 1 << 24  # characters of text kept in the (text, tail) -> live cache
_MASKS_PER_TRIE = 64  # token masks kept per vocabulary trie (by context)


class PythonRegex(Potential, PatternBudget, TrieWalker):
    """A `regex`-module pattern as a constraint over bytes: the whole text must match.

    `prefix(x)` is 0 iff the engine's partial matching finds that the UTF-8
    text `x` may still start a full match (`regex.fullmatch(pattern, x,
    partial=True)`); `complete(x)` iff `regex.fullmatch(pattern, x)`. Partial
    matching is the engine's own judgment: with lookaheads or possessive
    groups it can call a text live that no extension matches (`a*+a` after
    "aa"); `complete` is always exact.

    Args:
        pattern: the pattern (str), in the `regex` module's syntax.
        flags: `regex` flags (e.g. `regex.IGNORECASE`).
        timeout: seconds one match may take before `TimeoutError` (None: no limit);
            prefix checks of texts of at most 16 characters run untimed.

    Raises:
        InvalidGrammar (a ValueError): if the pattern does not compile (or nests too deep
            to), naming why, or matches no text (`(?!)`; a pattern the check cannot read is kept).
    """

    is_boolean = True

    def __init__(self, pattern: str, flags: int = 0, timeout: float | None = None) -> None:
        if not isinstance(pattern, str):
            raise ValueError(f"a regex pattern must be a str, got {type(pattern).__name__}")
        try:
            self.compiled = regex.compile(pattern, flags)
        except (regex.error, ValueError, TypeError, OverflowError, RecursionError) as error:
            why = "nested too deep to compile" if isinstance(error, RecursionError) else error
            raise InvalidGrammar(f"invalid Python regex {pattern!r}: {why}") from None
        super().__init__(list(range(256)))
        self.pattern = pattern
        self.flags = flags
        self.timeout = timeout
        self.source = pattern
        self.kind = "Python regex"
        self._spelled = spelled_chars(pattern)
        self._ascii = ascii_only(pattern, flags)
        self._live: OrderedDict[tuple[str, bytes], bool] = OrderedDict()
        self._live_chars = 0
        self._masks: weakref.WeakKeyDictionary[Any, OrderedDict[bytes, np.ndarray]] = (
            weakref.WeakKeyDictionary()
        )
        self.calls = 0
        self._automaton: CharAutomaton | None | bool = False  # False: not built yet
        # The automaton's byte-level states: (DFA state, unfinished UTF-8 bytes), 0 the dead one,
        # and their transitions (-1: not worked out yet).
        self._byte_keys: list[tuple[int, bytes]] = [(-1, b"")]
        self._byte_ids: dict[tuple[int, bytes], int] = {}
        self._table = np.full((16, 256), -1, dtype=np.int32)
        self._table[0] = 0
        if self._admits_nothing():
            raise InvalidGrammar(f"the Python regex {pattern!r} matches no text")

    def _admits_nothing(self) -> bool:
        """No text matches: no end reachable in the automaton, or the engine's partial
        match already fails on the empty text (patterns without an automaton)."""
        self._automaton = CharAutomaton.build(self.pattern, self.flags)
        if self._automaton is not None:
            return self._automaton.admits_nothing()
        try:
            return self.compiled.fullmatch("", partial=True, timeout=1.0) is None
        except TimeoutError:
            return False

    # ------------------------------------------------------------ the engine
    def _partial(self, text: str) -> bool:
        self.calls += 1
        if self.timeout is None or len(text) <= _UNTIMED_CHARS:
            if _POSITIONAL:
                return self.compiled.fullmatch(text, None, None, None, True) is not None
            return self.compiled.fullmatch(text, partial=True) is not None  # a timeout= costs
        return self.compiled.fullmatch(text, partial=True, timeout=self.timeout) is not None

    def _candidates(self, tail: bytes) -> list[str]:
        if self._ascii:
            return []
        chars = char_range(tail)
        spelled = [c for c in self._spelled if ord(c) in chars]
        return spelled + list(representatives(tail))

    def _alive(self, text: str, tail: bytes) -> bool:
        key = (text, tail)
        found = self._live.get(key)
        if found is not None:
            self._live.move_to_end(key)
            return found
        if not tail:
            live = self._partial(text)
        else:
            live = False
            if self._alive(text, b""):
                for c in self._candidates(tail):  # the first live one decides
                    if live := self._partial(text + c):
                        break
        self._live[key] = live
        self._live_chars += len(text) + 1
        while self._live_chars > _LIVE_CACHE_CHARS:
            (old, _), _ = self._live.popitem(last=False)
            self._live_chars -= len(old) + 1
        return live

    # ------------------------------------------------------------ potential
    def accepts(self, data: bytes) -> bool:
        """Whether the bytes are UTF-8 text the pattern fully matches."""
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return False
        self.calls += 1
        return self.compiled.fullmatch(text, timeout=self.timeout) is not None

    def viable(self, data: bytes) -> bool:
        """Whether the bytes may still start a full match (the prefix check)."""
        split = split_utf8(data)
        return split is not None and self._alive(*split)

    async def prefix(self, context: Sequence[Any]) -> float:
        return 0.0 if self.viable(bytes(self.encode(context))) else -math.inf

    async def complete(self, context: Sequence[Any]) -> float:
        return 0.0 if self.accepts(bytes(self.encode(context))) else -math.inf

    def allowed_bytes(self, data: bytes) -> np.ndarray:
        """Bool array over the 256 bytes and EOS (last): which may follow the bytes `data`.

        Raises:
            ValueError: if `data` is already ruled out (nothing can follow it).
        """
        split = split_utf8(data)
        if split is None or not self._alive(*split):
            raise ValueError(
                f"the context {data!r:.60} has weight zero under {self.name}; nothing can follow it"
            )
        text, tail = split
        out = np.zeros(257, dtype=bool)
        for byte in range(256):
            if not tail and byte < 0x80:
                out[byte] = self._alive(text + chr(byte), b"")
            else:
                step = split_step(tail + _BYTES[byte])
                out[byte] = step is not None and self._alive(text + step[0], step[1])
        out[256] = not tail and self.accepts(data)
        return out

    def allowed(self, context: Sequence[Any]) -> np.ndarray:
        """Bool array over `vocab_eos`: which bytes (and EOS) may follow `context`."""
        return self.allowed_bytes(bytes(self.encode(context)))

    async def logw_next(self, context: Sequence[Any]) -> LazyWeights:
        return self.make_lazy_weights(np.where(self.allowed(context), 0.0, -math.inf))

    # ------------------------------------------------------------ token masks
    def walk_byte_trie(self, trie: Any, data: bytes) -> np.ndarray:
        """Log-weights (0 or -inf) of a byte trie's tokens after the bytes `data`, EOS last.

        The hook `Coerced` calls for a vocabulary of byte strings. `trie` has
        `children` (per node, a dict byte -> child; node 0 is the root),
        `ends` (per node, the tokens its path spells) and `n_tokens`. The
        engine is asked only about bytes that lead to a token, and a dead node
        rules out its subtree; where the pattern has an exact automaton
        (`CharAutomaton.build`), no engine call is made but for EOS: its
        states run over the trie's edges a depth at a time. Liveness at each
        node is that of `allowed_bytes`, so the mask is the one
        `byte_mask_walk` gives. Masks are cached per trie and context.

        Raises:
            ValueError: if `data` is already ruled out (nothing can follow it).
        """
        cache = self._masks.get(trie)
        if cache is None:
            cache = self._masks[trie] = OrderedDict()
        found = cache.get(data)
        if found is not None:
            cache.move_to_end(data)
            return found.copy()
        split = split_utf8(data)
        if self._automaton is False:
            self._automaton = CharAutomaton.build(self.pattern, self.flags)
        if self._automaton is not None:
            live = self._walk_automaton(self._automaton, trie, split)
        else:
            live = self._walk_engine(trie, split)
        if live is None:
            raise ValueError(
                f"the context {data!r:.60} has weight zero under {self.name}; nothing can follow it"
            )
        out = np.full(trie.n_tokens + 1, -math.inf)
        if isinstance(live, np.ndarray):
            out[:-1][live] = 0.0
        else:
            out[live] = 0.0
        out[-1] = 0.0 if not split[1] and self.accepts(data) else -math.inf
        cache[data] = out
        if len(cache) > _MASKS_PER_TRIE:
            cache.popitem(last=False)
        return out.copy()

    async def cleanup(self) -> None:
        self._live.clear()
        self._live_chars = 0
        self._masks.clear()

    def _default_name(self) -> str:
        return f"PythonRegex({self.pattern!r:.40})"

    def __repr__(self) -> str:
        return f"PythonRegex({self.pattern!r:.60})"
