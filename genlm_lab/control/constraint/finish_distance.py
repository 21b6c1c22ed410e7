"""How many tokens a constraint needs to end: what budgets refuse on, never more than it must.

A run with `max_tokens` keeps only sequences of at most that many tokens
(EOS included). After a prefix with `left` tokens still allowed, a
*finisher* answers `fits(context, left)`: False only where no sequence of at
most `left` tokens (EOS included) completes the prefix under the constraint.
That is soundness: a prefix some completion ends in time is never refused, so
refusing what does not fit leaves the run's target exactly p(x | constraint,
len(x) <= max_tokens). Tightness (refusing everything that cannot fit) is
efficiency, and depends on what is known of the constraint:

- `AutomatonDistance`: exact. For a constraint whose language is a byte
  automaton (an explicit `BoolFSA(automaton)`, and a regex or Python regex
  made only of ASCII literals, sets of them, groups, alternation and repeats),
  the fewest tokens to an accepting state, over this vocabulary's tokens, by a
  shortest path over automaton state x token: each state's successors are read
  by running the automaton down the vocabulary's byte trie (all nodes of a
  depth at once), and distances by a backward breadth-first search, once.
- `SearchDistance`: sound, exact where its search finishes. For any other
  boolean constraint (llguidance's regexes, Lark grammars, JSON schemas, a
  Python regex with backreferences, a `BoolPredicate`): a prefix the
  constraint accepts fits; with one token left, one it does not accept does
  not (exact); otherwise a short completion, where the constraint can name one
  (`JsonSchema.finish`, counted in the fewest tokens that spell it), proves it
  fits, and a depth-first search over the tokens the constraint allows, with a
  node budget, proves that nothing fits. Where neither proves anything (too
  many tokens allowed, too many nodes) the prefix is kept and counted as
  "unproven" in `stats`.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import warnings
import weakref
from collections import OrderedDict, defaultdict, deque
from collections.abc import Callable, Hashable, Sequence
from typing import Any, Protocol

import numpy as np

from genlm_lab.control.constraint.llg.matcher_cache import Key
from genlm_lab.control.potential.base import Potential

__all__ = [
    "AutomatonDistance",
    "Finisher",
    "SearchDistance",
    "finisher_for",
    "plain_ascii_regex",
    "token_bytes",
]

_FAR = np.iinfo(np.int64).max // 4  # "no path": farther than any budget


class Finisher(Protocol):
    """Whether a prefix can still end within a number of tokens (see the module docstring)."""

    exact: bool
    stats: dict[str, int]
    lookup: dict[Any, int]

    def encode(self, context: Sequence[Any]) -> list[int]: ...

    async def fits(
        self, context: Sequence[Any], left: int, ids: Sequence[int] | None = None
    ) -> bool: ...


def token_bytes(potential: Potential) -> list[bytes] | None:
    """The byte string of each token of `potential` (ints 0..255 are bytes), or None."""
    out = []
    for t in potential.vocab:
        if isinstance(t, (bytes, bytearray)):
            out.append(bytes(t))
        elif isinstance(t, (int, np.integer)) and not isinstance(t, bool) and 0 <= t < 256:
            out.append(bytes([int(t)]))
        else:
            return None
    return out


# ------------------------------------------------------------ the vocabulary's byte trie
class _Trie:
    """The usable tokens' byte trie as arrays: node i's parent and byte, by depth.

    `levels[d] = (nodes, parents, bytes)` holds the nodes at depth d + 1, so
    an automaton runs down the whole trie in one vectorised step per depth.
    `token_node[k]` is the node where token `token_ids[k]` ends.
    """

    def __init__(self, tokens: Sequence[bytes], usable: Sequence[int]) -> None:
        children: list[dict[int, int]] = [{}]
        depth = [0]
        parent = [0]
        byte = [0]
        node_of = []
        for i in usable:
            node = 0
            for b in tokens[i]:
                nxt = children[node].get(b)
                if nxt is None:
                    nxt = children[node][b] = len(children)
                    children.append({})
                    depth.append(depth[node] + 1)
                    parent.append(node)
                    byte.append(b)
                node = nxt
            node_of.append(node)
        self.n_nodes = len(children)
        depth_a = np.array(depth)
        parent_a = np.array(parent, dtype=np.int64)
        byte_a = np.array(byte, dtype=np.int64)
        self.levels = []
        for d in range(1, int(depth_a.max(initial=0)) + 1):
            nodes = np.flatnonzero(depth_a == d)
            self.levels.append((nodes, parent_a[nodes], byte_a[nodes]))
        self.token_ids = np.array(list(usable), dtype=np.int64)
        self.token_node = np.array(node_of, dtype=np.int64)
        self.children = children


_TRIES: dict[str, _Trie] = {}


def _trie(tokens: Sequence[bytes], usable: Sequence[int]) -> _Trie:
    key = hashlib.blake2b(
        b"\0".join(tokens) + repr((len(tokens), list(usable))).encode(), digest_size=16
    ).hexdigest()
    found = _TRIES.get(key)
    if found is None:
        if len(_TRIES) >= 8:
            _TRIES.pop(next(iter(_TRIES)))
        found = _TRIES[key] = _Trie(tokens, usable)
    return found


def _fewest_tokens(trie: _Trie, data: bytes) -> int | None:
    """The fewest usable tokens whose bytes concatenate to `data` (None if none do)."""
    best = [0] + [_FAR] * len(data)
    ends = set(trie.token_node.tolist())
    for i in range(len(data)):
        if best[i] >= _FAR:
            continue
        node = 0
        for j in range(i, len(data)):
            node = trie.children[node].get(data[j])
            if node is None:
                break
            if node in ends and best[i] + 1 < best[j + 1]:
                best[j + 1] = best[i] + 1
    return None if best[-1] >= _FAR else best[-1]


# ------------------------------------------------------------ exact: automata
class _Dfa:
    """A deterministic byte automaton as a table: `table[s, b]` is the next state, 0 is dead."""

    def __init__(self, table: np.ndarray, final: np.ndarray, start: int) -> None:
        self.table = table
        self.final = final
        self.start = start

    @classmethod
    def from_nfa(
        cls,
        start: frozenset,
        moves: dict[Hashable, dict[int, set[Hashable]]],
        finals: frozenset,
        max_states: int = 20000,
    ) -> _Dfa | None:
        """The subset construction of an NFA over bytes (None past `max_states` states)."""
        ids: dict[frozenset, int] = {frozenset(): 0}
        rows: list[np.ndarray] = [np.zeros(256, dtype=np.int64)]
        final = [False]
        todo = deque()

        def state(s: frozenset) -> int:
            found = ids.get(s)
            if found is None:
                found = ids[s] = len(rows)
                rows.append(np.zeros(256, dtype=np.int64))
                final.append(bool(s & finals))
                todo.append(s)
            return found

        first = state(frozenset(start))
        while todo:
            if len(rows) > max_states:
                return None
            s = todo.popleft()
            by_byte: dict[int, set] = defaultdict(set)
            for q in s:
                for b, dsts in moves.get(q, {}).items():
                    by_byte[b].update(dsts)
            row = rows[ids[s]]
            for b, dsts in by_byte.items():
                row[b] = state(frozenset(dsts))
        return cls(np.array(rows), np.array(final), first)

    def run(self, state: int, data: bytes) -> int:
        for b in data:
            state = int(self.table[state, b])
            if state == 0:
                return 0
        return state


class AutomatonDistance:
    """Exact fewest tokens (EOS included) to end, for a constraint given by a byte automaton.

    Args:
        dfa: the constraint's language as a `_Dfa` (its live part).
        tokens: the byte string of each token of the constraint's vocabulary.
        usable: the tokens the constraint may ever allow (not special, not empty).
        encode: maps a context to token indices (the potential's `encode`).
        lookup: token -> index (the potential's `lookup`).
        max_states: the most states reachable by tokens for which distances are
            worked out; past it `fits` keeps everything (and counts "unproven").
    """

    exact = True

    def __init__(
        self,
        dfa: _Dfa,
        tokens: Sequence[bytes],
        usable: Sequence[int],
        encode: Callable[[Sequence[Any]], list[int]],
        lookup: dict[Any, int] | None = None,
        max_states: int = 4096,
    ) -> None:
        self.dfa = dfa
        self.lookup = lookup
        self.tokens = list(tokens)
        self.trie = _trie(self.tokens, usable)
        self.encode = encode
        self.max_states = max_states
        self._dist: dict[int, int] | None = None
        self._states: OrderedDict[tuple[int, ...], int] = OrderedDict()
        #: kept / refused: answers; unproven: kept because the distances were too many to work out
        self.stats = {"kept": 0, "refused": 0, "unproven": 0}

    def successors(self, state: int) -> np.ndarray:
        """The automaton's state after each usable token from `state` (0: dead)."""
        at = np.empty(self.trie.n_nodes, dtype=np.int64)
        at[0] = state
        table = self.dfa.table
        for nodes, parents, data in self.trie.levels:
            at[nodes] = table[at[parents], data]
        return at[self.trie.token_node]

    def distances(self) -> dict[int, int] | None:
        """Fewest tokens from each state reachable by tokens to an accepting one (None: too many)."""
        if self._dist is not None:
            return self._dist
        start = self.dfa.start
        back: dict[int, set[int]] = defaultdict(set)
        seen = {start}
        todo = deque([start])
        while todo:
            s = todo.popleft()
            for d in np.unique(self.successors(s)).tolist():
                if d == 0:
                    continue
                back[d].add(s)
                if d not in seen:
                    if len(seen) >= self.max_states:
                        return None
                    seen.add(d)
                    todo.append(d)
        dist = {s: 0 for s in seen if self.dfa.final[s]}
        frontier = deque(dist)
        while frontier:
            s = frontier.popleft()
            for p in back[s]:
                if p not in dist:
                    dist[p] = dist[s] + 1
                    frontier.append(p)
        self._dist = dist
        return dist

    def state(self, ids: Sequence[int]) -> int:
        """The automaton's state after the tokens `ids` (0: dead), cached per context."""
        key = tuple(ids)
        found = self._states.get(key)
        if found is not None:
            return found
        parent = self._states.get(key[:-1]) if key else None
        if parent is not None:
            found = self.dfa.run(parent, self.tokens[key[-1]])
        else:
            found = self.dfa.run(self.dfa.start, b"".join(self.tokens[i] for i in key))
        self._states[key] = found
        if len(self._states) > 8192:
            self._states.popitem(last=False)
        return found

    def needed(self, context: Sequence[Any], ids: Sequence[int] | None = None) -> int | None:
        """The fewest tokens (EOS included) that end `context`; None if unknown, `_FAR` if none.

        `ids`, if given, are the context's token indices (saves encoding it again).
        """
        dist = self.distances()
        if dist is None:
            return None
        ids = self.encode(context) if ids is None else ids
        state = self.state([i for i in ids if i < len(self.tokens)])
        return _FAR if state == 0 else dist.get(state, _FAR - 1) + 1

    async def fits(
        self, context: Sequence[Any], left: int, ids: Sequence[int] | None = None
    ) -> bool:
        """Whether `context` can end within `left` tokens (EOS included): exact."""
        need = self.needed(context, ids)
        if need is None:
            self.stats["unproven"] += 1
            return True
        ok = need <= left
        self.stats["kept" if ok else "refused"] += 1
        return ok


# ------------------------------------------------------------ sound: bounded search
class SearchDistance:
    """A sound bound for any boolean constraint, exact where its search finishes.

    `fits(context, left)` is True where the constraint accepts `context`,
    where `upper` (a short completion's token count, EOS included) is at most
    `left`, and wherever the search below cannot decide; it is False only
    with one token left and `context` not accepted, or where a depth-first
    search over every token the constraint allows, down to the tokens left,
    reaches no accepted context. The search gives up (keeps the prefix,
    counted as "unproven") when a context allows more than `max_branch`
    tokens or after `max_nodes` masks, and is not tried (nothing is read)
    with more than `max_depth` tokens left, where a proof would need more
    nodes than that anyway. It runs only on constraints with a
    cheap whole-vocabulary mask (`allowed`: grammars, JSON schemas); others
    (a Python check, a model-based judge) are only asked `complete` with one
    token left, so AWRS never masks the vocabulary with them.

    Args:
        potential: the boolean constraint over the run's tokens.
        upper: `context -> tokens to end it (EOS included) | None`, an upper bound.
        max_branch: the most allowed tokens a searched context may have.
        max_nodes: the most masks one `fits` may read.
        max_depth: the most tokens left for which anything is checked (None: any).
        cache_size: how many contexts' proven bounds to keep.
        masks: whether to search with the constraint's masks (None: where it has `allowed`).
        necessary: a cheap test a complete text must pass (a JSON document must parse),
            asked before the constraint's own completion check.
    """

    exact = False

    def __init__(
        self,
        potential: Potential,
        upper: Callable[[Sequence[Any]], int | None] | None = None,
        max_branch: int = 64,
        max_nodes: int = 256,
        max_depth: int | None = 8,
        cache_size: int = 65536,
        masks: bool | None = None,
        necessary: Callable[[bytes], bool] | None = None,
    ) -> None:
        self.potential = potential
        self.necessary = necessary
        self._bytes = token_bytes(potential) if necessary is not None else None
        self.encode = potential.encode
        self.lookup = potential.lookup
        self.masks = callable(getattr(potential, "allowed", None)) if masks is None else masks
        self.upper = upper
        self.max_branch = max_branch
        self.max_nodes = max_nodes
        self.max_depth = max_depth
        self.cache_size = cache_size
        self._usable = _usable_mask(potential)
        from genlm_lab.control.constraint.llg.grammar import MaskedPotential

        self._engine = potential.engine if isinstance(potential, MaskedPotential) else None
        # context -> (most tokens proven too few, fewest tokens proven enough)
        self._bounds: OrderedDict[tuple, tuple[int, int]] = OrderedDict()
        #: kept: proven to fit; refused: proven not to; unproven: kept, undecided
        self.stats = {"kept": 0, "refused": 0, "unproven": 0}

    def _tokens(self, ids: tuple[int, ...]) -> list[Any]:
        vocab = self.potential.vocab
        return [vocab[i] for i in ids]

    async def _accepts(self, ids: tuple[int, ...]) -> bool:
        if self._bytes is not None and not self.necessary(b"".join([self._bytes[i] for i in ids])):
            return False
        if self._engine is not None:  # a grammar's own cached check, no re-encoding
            return bool(self._engine.accepting(Key(ids)))
        return await self.potential.complete(self._tokens(ids)) == 0

    async def _allowed(self, ids: tuple[int, ...]) -> np.ndarray:
        if self._engine is not None:
            mask = np.asarray(self._engine.mask(Key(ids)), dtype=bool)[:-1]
        else:
            allowed = getattr(self.potential, "allowed", None)
            context = self._tokens(ids)
            if callable(allowed):
                mask = np.asarray(allowed(context), dtype=bool)[:-1]
            else:
                weights = np.asarray((await self.potential.logw_next(context)).weights, dtype=float)
                mask = weights[:-1] > -math.inf
        if self._usable is not None:
            mask = mask & self._usable
        return np.flatnonzero(mask)

    def _bound(self, key: tuple) -> tuple[int, int]:
        found = self._bounds.get(key)
        if found is None:
            return 0, _FAR
        self._bounds.move_to_end(key)
        return found

    def _learn(self, key: tuple, low: int = 0, high: int = _FAR) -> None:
        old_low, old_high = self._bound(key)
        self._bounds[key] = (max(low, old_low), min(high, old_high))
        if len(self._bounds) > self.cache_size:
            self._bounds.popitem(last=False)

    async def _can(self, ids: tuple[int, ...], r: int, spent: list[int]) -> bool | None:
        """Whether some completion of at most `r` tokens (EOS included) exists; None: unknown."""
        if r < 1:
            return False
        low, high = self._bound(ids)
        if high <= r:
            return True
        if low >= r:
            return False
        if await self._accepts(ids):
            self._learn(ids, high=1)
            return True
        if r == 1:
            self._learn(ids, low=1)
            return False
        if spent[0] >= self.max_nodes:
            return None
        spent[0] += 1
        allowed = await self._allowed(ids)
        if len(allowed) > self.max_branch:
            return None
        unknown = False
        for i in allowed.tolist():
            found = await self._can((*ids, i), r - 1, spent)
            if found:
                self._learn(ids, high=r)
                return True
            unknown = unknown or found is None
        if unknown:
            return None
        self._learn(ids, low=r)
        return False

    async def fits(
        self, context: Sequence[Any], left: int, ids: Sequence[int] | None = None
    ) -> bool:
        """Whether `context` can end within `left` tokens (EOS included); see the class docstring.

        `ids`, if given, are the context's indices in the constraint's vocabulary (saves
        encoding it again).
        """
        ids = tuple(self.potential.encode(context) if ids is None else ids)
        if ids and ids[-1] >= len(self.potential.vocab):  # EOS (only ever last) is not text
            ids = ids[:-1]
        if left < 1:
            return self._count(False)
        if left == 1:  # only EOS is left: exactly whether the text is complete
            return self._count(await self._accepts(ids))
        if not self.masks or (self.max_depth is not None and left > self.max_depth):
            # nothing to prove it with, or too far from the end to prove: keep it, ask nothing
            self.stats["unproven"] += 1
            return True
        low, high = self._bound(ids)
        if high <= left:
            return self._count(True)
        if low >= left:
            return self._count(False)
        if await self._accepts(ids):
            self._learn(ids, high=1)
            return self._count(True)
        allowed = await self._allowed(ids)
        if len(allowed) > self.max_branch:  # no proof within reach: keep it, read no finish
            self.stats["unproven"] += 1
            return True
        if self.upper is not None:
            need = self.upper(self._tokens(ids))
            if need is not None:
                self._learn(ids, high=need)
                if need <= left:
                    return self._count(True)
        found = await self._can(ids, left, [0])
        if found is None:
            self.stats["unproven"] += 1
            return True
        return self._count(found)

    def _count(self, ok: bool) -> bool:
        self.stats["kept" if ok else "refused"] += 1
        return ok


def _usable_mask(potential: Potential) -> np.ndarray | None:
    """Tokens the constraint may allow: not special, not empty (None: every token)."""
    tokens = token_bytes(potential)
    if tokens is None:
        return None
    usable = np.array([bool(t) for t in tokens])
    for i in getattr(potential, "special", None) or ():
        if 0 <= i < len(usable):
            usable[i] = False
    return usable


# ------------------------------------------------------------ which finisher for which factor
_PLAIN = {"LITERAL", "IN", "RANGE", "BRANCH", "SUBPATTERN", "MAX_REPEAT", "MIN_REPEAT"}


def plain_ascii_regex(pattern: str) -> bool:
    """Whether `pattern` holds only ASCII literals, sets of them, groups, alternation and repeats.

    For such a pattern Python's `re`, the `regex` module, Rust's `regex`
    (llguidance) and interegular read the same language, so interegular's
    automaton is exactly the constraint's. Read with Python's `re` parser;
    anything else (`.`, classes, negated sets, anchors, flags, lookarounds,
    backreferences, non-ASCII) is not plain.
    """
    import re._parser as sre

    if not pattern.isascii() or "(?" in pattern or "[:" in pattern:
        return False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            parsed = sre.parse(pattern)
    except Exception:  # noqa: BLE001 - what `re` cannot read is not plain
        return False
    if parsed.state.flags & ~re.UNICODE:
        return False
    stack: list[Any] = [parsed]
    while stack:
        item = stack.pop()
        if isinstance(item, sre.SubPattern):
            stack.extend(item.data)
        elif isinstance(item, (list, tuple)) and item and hasattr(item[0], "name"):
            name = item[0].name
            if name not in _PLAIN:
                return False
            if name == "LITERAL" and item[1] > 127:
                return False
            if name == "RANGE" and item[1][1] > 127:
                return False
            if name == "SUBPATTERN":
                stack.append(item[1][-1])  # (group, add_flags, del_flags, pattern)
                if item[1][1] or item[1][2]:
                    return False
            elif name in ("MAX_REPEAT", "MIN_REPEAT"):
                stack.append(item[1][-1])
            elif name == "BRANCH":
                stack.extend(item[1][-1])
            elif name == "IN":
                stack.extend(item[1])
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return True


def _regex_dfa(pattern: str) -> _Dfa | None:
    from genlm_lab.control.constraint.automata import regex_automaton

    try:
        auto = regex_automaton(pattern)
    except ValueError:
        return None
    moves: dict[Hashable, dict[int, set]] = defaultdict(lambda: defaultdict(set))
    for src, arcs in auto.arcs.items():
        for byte, dst, w in arcs:
            if w > 0:
                moves[src][byte].add(dst)
    start = frozenset(s for s, w in auto.initial.items() if w > 0)
    finals = frozenset(s for s, w in auto.final.items() if w > 0)
    return _Dfa.from_nfa(start, moves, finals)


def _language(potential: Potential) -> tuple[Potential, Any] | None:
    """`(byte-level constraint, coerced view)` behind a factor over tokens, or None."""
    from genlm_lab.control.constraint.llg.grammar import GrammarPotential, TokenConstraint
    from genlm_lab.control.potential.coerce import Coerced, is_join

    if isinstance(potential, TokenConstraint):
        return potential.grammar, potential
    if isinstance(potential, Coerced) and is_join(potential.f):
        return potential.potential, potential
    if isinstance(potential, GrammarPotential) or getattr(potential, "kind", None):
        return potential, potential  # a byte-level constraint used as is
    return None


def _dfa_of(language: Potential) -> _Dfa | None:
    """The exact automaton of a byte-level constraint, where one is known (see the docstring)."""
    from genlm_lab.control.constraint.fsa import AutomatonBoolFSA, BoolFSA
    from genlm_lab.control.constraint.python_regex import PythonRegex

    if isinstance(language, AutomatonBoolFSA):
        moves = {s: {b: set(d) for b, d in by.items()} for s, by in language._moves.items()}
        return _Dfa.from_nfa(language._start, moves, language._finals)
    if isinstance(language, BoolFSA) and language.kind == "regex":
        return _regex_dfa(language.source) if plain_ascii_regex(language.source) else None
    if isinstance(language, PythonRegex) and not language.flags:
        return _regex_dfa(language.pattern) if plain_ascii_regex(language.pattern) else None
    return None


def _json_upper(potential: Potential, language: Any, trie: _Trie) -> Callable | None:
    """A short completion's token count, where the constraint can name one (`finish`)."""
    finish = getattr(language, "finish", None)
    if not callable(finish):
        return None
    tokens = token_bytes(potential)

    def upper(context: Sequence[Any]) -> int | None:
        text = b"".join(tokens[i] for i in potential.encode(context) if i < len(tokens))
        try:
            tail = finish(text)
        except Exception:  # noqa: BLE001 - no finish is no upper bound, never an error
            return None
        if tail is None:
            return None
        n = _fewest_tokens(trie, tail)
        return None if n is None else n + 1

    return upper


def _parses_as_json(text: bytes) -> bool:
    """Whether `text` is UTF-8 JSON: what a `JsonSchema`'s completion check parses first."""
    try:
        json.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return False
    return True


_FINISHERS: weakref.WeakKeyDictionary[Potential, Any] = weakref.WeakKeyDictionary()
_NONE = object()


def finisher_for(potential: Potential, **search: Any) -> Finisher | None:
    """The finisher of one factor over tokens (cached per factor), or None.

    None for factors that are no constraint (language models, critics) and
    for those already under a budget (`WithinBudget`). Boolean factors get a
    `SearchDistance` at least; constraints with a known automaton an
    `AutomatonDistance`. `search` goes to `SearchDistance`.
    """
    from genlm_lab.control.constraint.json.budget import WithinBudget

    inner = getattr(potential, "potential", None)
    if type(potential).__name__ == "AutoBatched" and isinstance(inner, Potential):
        return finisher_for(inner, **search)
    if isinstance(potential, WithinBudget) or not getattr(potential, "is_boolean", False):
        return None
    found = _FINISHERS.get(potential) if not search else None
    if found is not None:
        return None if found is _NONE else found
    tokens = token_bytes(potential)
    out: Finisher | None = None
    if tokens is not None:
        found_language = _language(potential)
        language = found_language[0] if found_language else None
        usable = np.flatnonzero(_usable_mask(potential)).tolist()
        dfa = _dfa_of(language) if language is not None else None
        if dfa is not None:
            out = AutomatonDistance(dfa, tokens, usable, potential.encode, potential.lookup)
        else:
            upper = (
                _json_upper(potential, language, _trie(tokens, usable))
                if language is not None
                else None
            )
            from genlm_lab.control.constraint.json.schema import JsonSchema

            necessary = _parses_as_json if isinstance(language, JsonSchema) else None
            out = SearchDistance(potential, upper=upper, necessary=necessary, **search)
    else:
        out = SearchDistance(potential, **search)
    if not search:
        try:
            _FINISHERS[potential] = _NONE if out is None else out
        except TypeError:
            pass
    return out
