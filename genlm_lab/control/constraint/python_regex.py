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
node whose parent is live, a dead node ruling out its subtree.

Bytes are read as UTF-8. A context that ends inside a multi-byte character is
live when some character starting with those bytes keeps the match alive; the
characters tried are every one of the range when it holds at most 64, else
one per (Unicode category, script word of the character name) per 4,096 code
points, plus the characters the pattern spells (and their case variants).
"""

from __future__ import annotations

import codecs
import math
import re
import unicodedata
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np
import regex

from genlm_lab.control.constraint.guidance import InvalidGrammar
from genlm_lab.control.core.weights import LazyWeights
from genlm_lab.control.potential.base import Potential

__all__ = ["PythonRegex", "byte_mask_walk"]

_LIVE_CACHE_CHARS = 1 << 24  # characters of text kept in the (text, tail) -> live cache
_MASKS_PER_TRIE = 64  # token masks kept per vocabulary trie (by context)
# Prefix checks on texts this short run without the timeout: arming it costs about
# 17 us a call (3x the match itself), and no backtracking on 16 characters nears a second.
_UNTIMED_CHARS = 16


def _split_utf8(data: bytes) -> tuple[str, bytes] | None:
    """`(text, tail)`: the decoded complete characters and the bytes of an unfinished one.

    None if `data` is not a prefix of any valid UTF-8 string.
    """
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        text = decoder.decode(data, final=False)
    except UnicodeDecodeError:
        return None
    return text, decoder.getstate()[0]


def _char_range(tail: bytes) -> range:
    """The code points whose UTF-8 encoding starts with the unfinished `tail`."""
    lead = tail[0]
    width = 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
    value = lead & (0x7F >> width)
    for byte in tail[1:]:
        value = (value << 6) | (byte & 0x3F)
    missing = 6 * (width - len(tail))
    low = max(value << missing, (0x80, 0x800, 0x10000)[width - 2])
    high = min(((value + 1) << missing) - 1, 0x10FFFF)
    return range(low, high + 1)


@lru_cache(maxsize=4096)
def _representatives(tail: bytes) -> tuple[str, ...]:
    """Characters that stand for all those starting with `tail` (see the module docstring)."""
    chars = _char_range(tail)
    if len(chars) <= 64:
        return tuple(chr(c) for c in chars if not 0xD800 <= c < 0xE000)
    seen: dict[tuple, str] = {}
    for c in chars:
        if 0xD800 <= c < 0xE000:
            continue
        char = chr(c)
        key = (c >> 12, unicodedata.category(char), unicodedata.name(char, "").split(" ", 1)[0])
        seen.setdefault(key, char)
    return tuple(seen.values())


def _positional_partial() -> bool:
    """Whether `fullmatch` takes `partial` as its 5th positional argument (faster than keywords)."""
    try:
        return regex.compile("ab").fullmatch("a", None, None, None, True) is not None
    except TypeError:
        return False


_POSITIONAL = _positional_partial()
_ASCII = [chr(b) for b in range(128)]
_BYTES = [bytes((b,)) for b in range(256)]

_ESCAPES = re.compile(r"\\(?:u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|x\{([0-9a-fA-F]+)\}|N\{([^}]+)\})")


def _spelled_chars(pattern: str) -> list[str]:
    """Non-ASCII characters the pattern names (literally or by escape), with case variants."""
    found = {c for c in pattern if ord(c) > 127}
    for match in _ESCAPES.finditer(pattern):
        hex_code = match.group(1) or match.group(2) or match.group(3)
        try:
            char = chr(int(hex_code, 16)) if hex_code else unicodedata.lookup(match.group(4))
        except (ValueError, KeyError, OverflowError):
            continue
        found.add(char)
    variants = set()
    for char in found:
        for v in (char, char.lower(), char.upper(), char.casefold(), char.title()):
            if len(v) == 1 and ord(v) > 127 and not 0xD800 <= ord(v) < 0xE000:
                variants.add(v)
    return sorted(variants)


def _ascii_only(pattern: str, flags: int) -> bool:
    """Whether the pattern can only ever match ASCII text (then multi-byte characters need no test).

    Read with Python's own `re` parser: True only if it parses and has no
    non-ASCII literal, no `.`, no negated set, no `\\w`/`\\d`/`\\s` class and no
    case folding (`(?i)` maps `k` to the Kelvin sign). Anything it cannot
    parse (the `regex` module's own syntax) counts as False.
    """
    import re._parser as sre  # the parser behind `re`; regex-only syntax fails there

    if flags & (regex.IGNORECASE | regex.FULLCASE) or "[:" in pattern:
        return False  # POSIX classes: `re` reads `[[:alpha:]]` as a set of ASCII characters
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            parsed = sre.parse(pattern)
    except Exception:  # noqa: BLE001 - any parse failure means "don't know"
        return False
    if parsed.state.flags & re.IGNORECASE:
        return False
    stack: list[Any] = [parsed]
    while stack:
        item = stack.pop()
        if isinstance(item, sre.SubPattern):
            stack.extend(item.data)
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, tuple) and item and hasattr(item[0], "name"):
            name, arg = item[0].name, item[1] if len(item) > 1 else None
            if name in ("ANY", "NOT_LITERAL", "NEGATE", "CATEGORY"):
                return False
            if (name == "LITERAL" and arg > 127) or (name == "RANGE" and arg[1] > 127):
                return False
            stack.extend(item[1:])
        elif isinstance(item, tuple):
            stack.extend(item)
    return True


class PythonRegex(Potential):
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
        InvalidGrammar (a ValueError): if the pattern does not compile, naming it
            and the engine's message.
    """

    is_boolean = True

    def __init__(self, pattern: str, flags: int = 0, timeout: float | None = None) -> None:
        if not isinstance(pattern, str):
            raise ValueError(f"a regex pattern must be a str, got {type(pattern).__name__}")
        try:
            self.compiled = regex.compile(pattern, flags)
        except (regex.error, ValueError, TypeError, OverflowError) as error:
            raise InvalidGrammar(f"invalid Python regex {pattern!r}: {error}") from None
        super().__init__(list(range(256)))
        self.pattern = pattern
        self.flags = flags
        self.timeout = timeout
        self.source = pattern
        self.kind = "Python regex"
        self._spelled = _spelled_chars(pattern)
        self._ascii = _ascii_only(pattern, flags)
        self._live: OrderedDict[tuple[str, bytes], bool] = OrderedDict()
        self._live_chars = 0
        self._masks: weakref.WeakKeyDictionary[Any, OrderedDict[bytes, np.ndarray]] = (
            weakref.WeakKeyDictionary()
        )
        self.calls = 0

    # ------------------------------------------------------------ the engine
    def _partial(self, text: str) -> bool:
        self.calls += 1
        if self.timeout is None or len(text) <= _UNTIMED_CHARS:
            return self.compiled.fullmatch(text, partial=True) is not None  # a timeout= costs
        return self.compiled.fullmatch(text, partial=True, timeout=self.timeout) is not None

    def _candidates(self, tail: bytes) -> list[str]:
        if self._ascii:
            return []
        chars = _char_range(tail)
        spelled = [c for c in self._spelled if ord(c) in chars]
        return spelled + list(_representatives(tail))

    def _alive(self, text: str, tail: bytes) -> bool:
        key = (text, tail)
        found = self._live.get(key)
        if found is not None:
            self._live.move_to_end(key)
            return found
        if not tail:
            live = self._partial(text)
        else:
            live = self._alive(text, b"") and any(
                self._partial(text + c) for c in self._candidates(tail)
            )
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
        split = _split_utf8(data)
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
        split = _split_utf8(data)
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
                step = _split_utf8(tail + bytes([byte]))
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
        rules out its subtree. Liveness at each node is that of
        `allowed_bytes`, so the mask is the one `byte_mask_walk` gives, in far
        fewer calls. Masks are cached per trie and context.

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
        split = _split_utf8(data)
        if split is None or not self._alive(*split):
            raise ValueError(
                f"the context {data!r:.60} has weight zero under {self.name}; nothing can follow it"
            )
        children, ends = trie.children, trie.ends
        timeout, alive, compiled = self.timeout, self._alive, self.compiled
        fullmatch = compiled.fullmatch
        if not _POSITIONAL:

            def fullmatch(text: str, _p: Any, _e: Any, _c: Any, partial: bool, *limit: Any) -> Any:
                return compiled.fullmatch(text, partial=partial, timeout=(limit or [None])[0])

        live = list(ends[0])  # empty tokens leave the context unchanged
        calls = 0
        stack = [(0, *split)]
        while stack:
            node, text, tail = stack.pop()
            for byte, child in children[node].items():
                if not tail and byte < 0x80:
                    longer, rest = text + _ASCII[byte], b""
                    calls += 1
                    if timeout is None or len(longer) <= _UNTIMED_CHARS:
                        found = fullmatch(longer, None, None, None, True)
                    else:
                        found = fullmatch(longer, None, None, None, True, timeout)
                    if found is None:
                        continue
                else:
                    step = _split_utf8(tail + _BYTES[byte])
                    if step is None or not alive(text + step[0], step[1]):
                        continue
                    longer, rest = text + step[0], step[1]
                live.extend(ends[child])
                if children[child]:
                    stack.append((child, longer, rest))
        self.calls += calls
        out = np.full(trie.n_tokens + 1, -math.inf)
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


def byte_mask_walk(potential: PythonRegex, trie: Any, data: bytes) -> np.ndarray:
    """The token mask the old way: a full byte mask (`allowed_bytes`) at every live trie node.

    The reference for `PythonRegex.walk_byte_trie` (same `trie` and result),
    kept for tests and benchmarks: it asks the engine about all 256 bytes at
    each node reached, not only those leading to a token.
    """
    out = np.full(trie.n_tokens + 1, -math.inf)
    root = potential.allowed_bytes(data)
    out[-1] = 0.0 if root[256] else -math.inf
    out[list(trie.ends[0])] = 0.0
    stack = [(0, data, root)]
    while stack:
        node, path, mask = stack.pop()
        for byte, child in trie.children[node].items():
            if not mask[byte]:
                continue
            out[list(trie.ends[child])] = 0.0
            if trie.children[child]:
                longer = path + bytes((byte,))
                stack.append((child, longer, potential.allowed_bytes(longer)))
    return out
