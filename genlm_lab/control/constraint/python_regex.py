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
read off an automaton instead (`_CharAutomaton`): it gives exactly the engine's
partial-match verdicts, and runs over every node of a trie depth at once.

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
from itertools import chain
from re._constants import MAXREPEAT as _MAXREPEAT
from typing import Any

import numpy as np
import regex

from genlm_lab.control.constraint.errors import InvalidGrammar
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


# ------------------------------------------------------------ the automaton path
_PRED, _EXCL, _EPS, _FINAL = 0, 1, 2, 3
_MAX_STATES = 4096  # a pattern whose automaton would be larger keeps to the engine
_CATEGORIES = {
    "CATEGORY_DIGIT": r"\d",
    "CATEGORY_NOT_DIGIT": r"\D",
    "CATEGORY_SPACE": r"\s",
    "CATEGORY_NOT_SPACE": r"\S",
    "CATEGORY_WORD": r"\w",
    "CATEGORY_NOT_WORD": r"\W",
}


class _NotRegular(Exception):
    """The pattern holds something `_CharAutomaton` does not model (it keeps to the engine)."""


def _char(code: int) -> str:
    return f"\\U{code:08x}"


def _class_source(op: str, arg: Any) -> str:
    """`regex`-module source of one character item of `re`'s parse (a literal, `.` or a set)."""
    if op == "LITERAL":
        return _char(arg)
    if op == "NOT_LITERAL":
        return f"[^{_char(arg)}]"
    if op == "ANY":
        return "."
    parts = []
    for item, value in arg:  # op == "IN"
        name = item.name
        if name == "NEGATE":
            parts.insert(0, "^")
        elif name == "LITERAL":
            parts.append(_char(value))
        elif name == "RANGE":
            parts.append(f"{_char(value[0])}-{_char(value[1])}")
        elif name == "CATEGORY" and value.name in _CATEGORIES:
            parts.append(_CATEGORIES[value.name])
        else:
            raise _NotRegular(name)
    return "[" + "".join(parts) + "]"


_ONE_CHARACTER = ("Any", "AnyAll", "AnyU", "Character", "Property", "Range")


def _one_character(pattern: str) -> bool:
    """Whether the `regex` module parses `pattern` (no flags) as one character or character set.

    Such a pattern matches exactly one character, so a text is live iff it is
    empty or one character the pattern matches. Read with the module's own
    (private) parser, so `\\p{..}` and set operations are read as it reads
    them; False wherever that parser is not there or says anything else.
    """
    try:
        from regex._main import _Info, _parse_pattern, _Source

        source = _Source(pattern)
        info = _Info(0, source.char_type, {})
        parsed = _parse_pattern(source, info)
        items = parsed.items if type(parsed).__name__ == "Sequence" else [parsed]
        if not source.at_end() or info.flags or len(items) != 1:
            return False
        name = type(items[0]).__name__
    except Exception:  # noqa: BLE001 - an unknown parser version: keep to the engine
        return False
    return name in _ONE_CHARACTER or name.startswith("Set")


class _CharAutomaton:
    """A pattern's partial matching as a DFA over characters, built lazily from an NFA.

    Only for patterns that Python's own `re` parser reads (without warnings,
    flags or case folding) and that hold nothing but characters, sets, `.`,
    alternation, groups and greedy or lazy repeats, `^`/`\\A` only at the start
    and `$`/`\\Z` only at the end, and possessive repeats of one character
    outside any repeat. For those, `fullmatch(text, partial=True)` finds a
    match iff some path of the backtracking engine reads all of `text`: the
    set of NFA states reached after `text` is not empty (a possessive repeat
    of one character leaves its loop only on a character it cannot take).
    Each character set is tested by the `regex` module itself (its `\\w`, `\\s`
    and `.` differ from `re`'s), so the automaton agrees with the engine
    character for character. A pattern the `regex` module itself parses as
    one character set (`\\P{Greek}`, `[\\p{L}&&\\P{Lu}]`) is the automaton of
    that set, tested with the pattern. `build` returns None for any other.
    """

    def __init__(self) -> None:
        self.kind: list[int] = []
        self.pred: list[int] = []  # PRED/EXCL: the character set tested
        self.next: list[Any] = []  # PRED: target; EXCL: (loop, exit); EPS: targets
        self.sets: list[Any] = []  # the compiled character sets
        self._set_ids: dict[str, int] = {}
        self._closures: dict[int, frozenset[int]] = {}
        self._ids: dict[frozenset[int], int] = {}
        self.states: list[frozenset[int]] = []  # DFA state -> its NFA states
        self.rows: list[dict[str, int]] = []  # DFA state -> char -> DFA state (-1: dead)
        self.ascii: list[list[int]] = []  # the same for the 128 ASCII chars (-2: not yet known)
        self.start = -1

    # ---- building
    @classmethod
    def build(cls, pattern: str, flags: int) -> _CharAutomaton | None:
        """The automaton of `pattern`, or None where it is not exactly the engine's (see above)."""
        import re._parser as sre

        if flags:
            return None
        out = cls()
        final = out._add(_FINAL, -1, None)
        if _one_character(pattern):  # the engine's own set, tested on each character
            out.sets.append(regex.compile(pattern).fullmatch)
            out.start = out._dfa(out._closure(out._add(_PRED, 0, final)))
            return out
        if "[:" in pattern:  # POSIX classes: `re` reads `[[:alpha:]]` as a plain set
            return None
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                parsed = sre.parse(pattern)
            if parsed.state.flags & ~re.UNICODE:
                return None
            out.start = out._dfa(out._closure(out._seq(list(parsed), final, True, True, False)))
        except Exception:  # noqa: BLE001 - anything not modelled keeps to the engine
            return None
        return out

    def _add(self, kind: int, pred: int, nxt: Any) -> int:
        if len(self.kind) >= _MAX_STATES:
            raise _NotRegular("too many states")
        self.kind.append(kind)
        self.pred.append(pred)
        self.next.append(nxt)
        return len(self.kind) - 1

    def _set(self, op: str, arg: Any) -> int:
        source = _class_source(op, arg)
        found = self._set_ids.get(source)
        if found is None:
            found = self._set_ids[source] = len(self.sets)
            self.sets.append(regex.compile(source).fullmatch)
        return found

    def _seq(self, items: list, nxt: int, head: bool, tail: bool, looped: bool) -> int:
        """Entry state of the sequence `items` followed by state `nxt` (built back to front)."""
        anchors = [op.name == "AT" for op, _ in items]
        for i in reversed(range(len(items))):
            in_head = head and all(anchors[:i])
            in_tail = tail and all(anchors[i + 1 :])
            nxt = self._item(items[i], nxt, in_head, in_tail, looped)
        return nxt

    def _item(self, item: tuple, nxt: int, head: bool, tail: bool, looped: bool) -> int:
        op, arg = item[0].name, item[1]
        if op in ("LITERAL", "NOT_LITERAL", "ANY", "IN"):
            return self._add(_PRED, self._set(op, arg), nxt)
        if op == "AT":
            name = arg.name
            if (name in ("AT_BEGINNING", "AT_BEGINNING_STRING") and head) or (
                name in ("AT_END", "AT_END_STRING") and tail
            ):
                return nxt  # always true there: fullmatch starts at 0 and must reach the end
            raise _NotRegular(name)
        if op == "BRANCH":
            return self._add(
                _EPS, -1, [self._seq(list(b), nxt, head, tail, looped) for b in arg[1]]
            )
        if op == "SUBPATTERN":
            _, add_flags, del_flags, body = arg
            if add_flags or del_flags:
                raise _NotRegular("scoped flags")
            return self._seq(list(body), nxt, head, tail, looped)
        if op in ("MAX_REPEAT", "MIN_REPEAT"):  # greedy or lazy: the same paths exist
            low, high, body = arg
            body = list(body)
            if high == _MAXREPEAT:
                loop = self._add(_EPS, -1, None)
                self.next[loop] = [self._seq(body, loop, False, False, True), nxt]
                entry = loop
            else:
                entry = nxt
                for _ in range(high - low):
                    entry = self._add(_EPS, -1, [self._seq(body, entry, False, False, True), nxt])
            for _ in range(low):
                entry = self._seq(body, entry, False, False, True)
            return entry
        if op == "POSSESSIVE_REPEAT" and not looped:
            low, high, body = arg
            body = list(body)
            if len(body) != 1 or body[0][0].name not in ("LITERAL", "NOT_LITERAL", "ANY", "IN"):
                raise _NotRegular("possessive repeat of more than one character")
            pred = self._set(body[0][0].name, body[0][1])
            if high == _MAXREPEAT:
                entry = self._add(_EXCL, pred, None)
                self.next[entry] = (entry, nxt)
            else:
                entry = nxt
                for _ in range(high - low):
                    entry = self._add(_EXCL, pred, (entry, nxt))
            for _ in range(low):
                entry = self._add(_PRED, pred, entry)
            return entry
        raise _NotRegular(op)

    def admits_nothing(self) -> bool:
        """Whether no path from the start reaches the end over character sets that hold a
        character (a loop's exit counts as reachable: the answer is never a wrong True)."""
        empty: dict[int, bool] = {}

        def holds_none(pred: int) -> bool:
            if pred not in empty:
                test = self.sets[pred]
                empty[pred] = not any(
                    test(chr(c)) is not None
                    for c in chain(range(0x800), range(0x800, 0xD800), range(0xE000, 0x110000))
                )
            return empty[pred]

        seen = set(self.states[self.start]) if self.start >= 0 else set()
        todo = list(seen)
        while todo:
            s = todo.pop()
            kind = self.kind[s]
            if kind == _FINAL:
                return False
            nxt = []
            if kind == _PRED and not holds_none(self.pred[s]):
                nxt.append(self.next[s])
            elif kind == _EXCL:
                if not holds_none(self.pred[s]):
                    nxt.append(self.next[s][0])
                nxt.append(self.next[s][1])
            for t in nxt:
                for u in self._closure(t):
                    if u not in seen:
                        seen.add(u)
                        todo.append(u)
        return True

    # ---- running
    def _closure(self, state: int) -> frozenset[int]:
        found = self._closures.get(state)
        if found is None:
            out, seen, stack = set(), {state}, [state]
            while stack:
                s = stack.pop()
                if self.kind[s] == _EPS:
                    for t in self.next[s]:
                        if t not in seen:
                            seen.add(t)
                            stack.append(t)
                else:
                    out.add(s)
            found = self._closures[state] = frozenset(out)
        return found

    def _dfa(self, states: frozenset[int]) -> int:
        if not states:
            return -1
        found = self._ids.get(states)
        if found is None:
            found = self._ids[states] = len(self.states)
            self.states.append(states)
            self.rows.append({})
            self.ascii.append([-2] * 128)
        return found

    def _step_states(self, states: frozenset[int], char: str) -> set[int]:
        out: set[int] = set()
        for s in states:
            kind = self.kind[s]
            if kind == _FINAL:
                continue
            hit = self.sets[self.pred[s]](char) is not None
            if kind == _PRED:
                if hit:
                    out |= self._closure(self.next[s])
            elif hit:
                out |= self._closure(self.next[s][0])
            else:  # a possessive loop that cannot take `char` hands it to what follows
                out |= self._step_states(self._closure(self.next[s][1]), char)
        return out

    def step(self, state: int, char: str) -> int:
        """The DFA state after `char` from `state` (-1: no path reads it, the text is dead)."""
        row = self.rows[state]
        found = row.get(char)
        if found is None:
            found = row[char] = self._dfa(frozenset(self._step_states(self.states[state], char)))
            if len(char) == 1 and ord(char) < 128:
                self.ascii[state][ord(char)] = found
        return found

    def run(self, text: str, state: int | None = None) -> int:
        """The DFA state after `text` (from the start, or from `state`); -1 if dead."""
        state = self.start if state is None else state
        for char in text:
            if state < 0:
                break
            state = self.step(state, char)
        return state


class _ByteLevels:
    """A byte trie's edges grouped by depth, to walk each depth with numpy (cached per trie).

    `levels`: per depth 1, 2, ..., arrays (child node, parent node, byte) of
    its edges; `token_node`: the node each token ends at.
    """

    _cache: weakref.WeakKeyDictionary[Any, _ByteLevels] = weakref.WeakKeyDictionary()

    def __init__(self, trie: Any) -> None:
        children = trie.children
        self.n_nodes = n = len(children)
        counts = np.fromiter(map(len, children), dtype=np.int64, count=n)
        edges = int(counts.sum())
        parent_of = np.zeros(n, dtype=np.int64)
        byte_of = np.zeros(n, dtype=np.int64)
        child = np.fromiter(chain.from_iterable(d.values() for d in children), np.int64, edges)
        parent_of[child] = np.repeat(np.arange(n), counts)
        byte_of[child] = np.fromiter(chain.from_iterable(children), np.int64, edges)
        # Depths by pointer jumping: after round k, `up` is each node's 2**k-th ancestor (the
        # root at most) and `depth` its distance to it; the root is its own parent.
        up, depth = parent_of, (np.arange(n) != 0).astype(np.int64)
        while up.any():
            depth = depth + depth[up]
            up = up[up]
        order = child[np.argsort(depth[child], kind="stable")]
        bounds = np.searchsorted(depth[order], np.arange(1, int(depth.max()) + 2))
        self.levels = [
            (nodes, parent_of[nodes], byte_of[nodes])
            for nodes in np.split(order, bounds[1:-1])
            if len(nodes)
        ]
        ends = trie.ends
        self.token_node = np.zeros(trie.n_tokens, dtype=np.int64)
        tokens = np.fromiter(chain.from_iterable(ends), np.int64)
        self.token_node[tokens] = np.repeat(np.arange(n), [len(e) for e in ends])

    @classmethod
    def of(cls, trie: Any) -> _ByteLevels:
        found = cls._cache.get(trie)
        if found is None:
            found = cls._cache[trie] = cls(trie)
        return found


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
            and the engine's message, or if it matches no text (`(?!)`, an empty
            character set; a pattern the check cannot read is kept).
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
        self._automaton: _CharAutomaton | None | bool = False  # False: not built yet
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
        self._automaton = _CharAutomaton.build(self.pattern, self.flags)
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
        rules out its subtree; where the pattern has an exact automaton
        (`_CharAutomaton.build`), no engine call is made but for EOS: its
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
        split = _split_utf8(data)
        if self._automaton is False:
            self._automaton = _CharAutomaton.build(self.pattern, self.flags)
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

    def _walk_automaton(
        self, auto: _CharAutomaton, trie: Any, split: tuple[str, bytes] | None
    ) -> np.ndarray | None:
        """Which tokens of `trie` are live after `split`, read off the automaton (None: dead).

        The automaton's byte-level states run over the trie's edges depth by
        depth, all nodes of a depth at once; a transition is worked out (in
        Python, as `_alive` would decide it) the first time it is met.
        """
        state = 0 if split is None else self._byte_state(auto, split[1], auto.run(split[0]))
        if state == 0:
            return None
        levels = _ByteLevels.of(trie)
        states = np.empty(levels.n_nodes, dtype=np.int32)
        states[0] = state
        for child, parent, byte in levels.levels:
            here = states[parent]
            nxt = self._table[here, byte]
            unknown = nxt < 0
            if unknown.any():
                for s, b in set(zip(here[unknown].tolist(), byte[unknown].tolist(), strict=True)):
                    self._table[s, b] = self._byte_step(auto, s, b)
                nxt = self._table[here, byte]
            states[child] = nxt
        return states[levels.token_node] != 0

    def _byte_state(self, auto: _CharAutomaton, tail: bytes, char_state: int) -> int:
        """The byte-level state (id) for a text in DFA state `char_state` plus the unfinished `tail`.

        0 is the dead state: the text is dead, or no character starting with
        `tail` keeps it live (the test `_alive` makes, on the same candidates).
        """
        if char_state < 0:
            return 0
        if tail and not any(auto.step(char_state, c) >= 0 for c in self._candidates(tail)):
            return 0
        key = (char_state, tail)
        found = self._byte_ids.get(key)
        if found is None:
            found = self._byte_ids[key] = len(self._byte_keys)
            self._byte_keys.append(key)
            if found >= len(self._table):
                grown = np.full((2 * len(self._table), 256), -1, dtype=np.int32)
                grown[: len(self._table)] = self._table
                self._table = grown
        return found

    def _byte_step(self, auto: _CharAutomaton, state: int, byte: int) -> int:
        """The byte-level state after `byte` from `state` (0: dead)."""
        char_state, tail = self._byte_keys[state]
        if not tail and byte < 0x80:
            return self._byte_state(auto, b"", auto.step(char_state, _ASCII[byte]))
        step = _split_utf8(tail + _BYTES[byte])
        if step is None:
            return 0
        return self._byte_state(auto, step[1], auto.run(step[0], char_state))

    def _walk_engine(self, trie: Any, split: tuple[str, bytes] | None) -> list[int] | None:
        """The live tokens of `trie` after `split`, one engine call per node reached (None: dead)."""
        if split is None or not self._alive(*split):
            return None
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
        return live

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
