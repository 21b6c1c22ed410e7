"""Object keys while a JSON document is written: required keys before `}`, no key twice.

llguidance's mask (compiled from the relaxed schema, keys in any order) knows
neither which keys an open object already holds nor which it still needs.
`KeyRules.feed` reads the bytes of a document prefix and keeps, for each open
object, the keys written so far and the object schemas it may still match (a
disjunction: `anyOf`/`oneOf` branches, each a conjunction of `allOf` parts
and `$ref` targets). It refuses a prefix where

- a key is written a second time (a key string may not even start towards a
  name the object cannot take: with `additionalProperties: false`, only
  unused property names);
- an object closes while every schema it may match misses a required key
  (or has fewer than `minProperties` keys);
- a `,` asks for a key the object has no room for (`maxProperties`, all names used);
- with `maxProperties` keys left only for missing required keys, another key starts.

Whatever it cannot decide (a `$ref` it cannot resolve, a regex Python cannot
read, too many branches) it allows: it never refuses a prefix of a valid
document. Values are not checked here (llguidance does that).
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["KeyRules", "State"]

State = tuple  # (mode, stack, pending view, key bytes, escape pending)
View = tuple  # a disjunction of conjunctions (tuples) of schema dicts; ((),) allows anything

_ANY: View = ((),)
_MAX_BRANCHES = 64
_MAX_DEPTH = 24
# modes
VAL, VAL_OR_END, KEY_OR_END, KEY, KSTR, COLON, STR, SCAL, AFTER = range(9)
_WS = frozenset(b" \t\r\n")
_SCALAR_END = frozenset(b" \t\r\n,}]")
_STRING_STOP = re.compile(rb'["\\]')
_KEY_STOP = re.compile(rb'["\\]')
_DRAFT_OLD = ("draft-03", "draft-04", "draft-06", "draft-07")


def _vkey(view: View) -> tuple:
    """A hashable key of a view (the ids of its schema dicts, which the root keeps alive)."""
    return tuple(tuple(map(id, conj)) for conj in view)


def _dedup(conjs) -> tuple:
    return tuple({tuple(map(id, c)): c for c in conjs}.values())


def _types(node: dict) -> list[str] | None:
    t = node.get("type")
    if t is None:
        return None
    return [t] if isinstance(t, str) else list(t)


class KeyFilter:
    """The keys an object with `patternProperties` and `additionalProperties: false` takes:
    its property names and the names a pattern finds (`re.search`, as jsonschema does).

    `takes(name)` is that exact verdict; `may_start(raw)` whether some such name starts
    with the key text `raw` (an llguidance regex of the names, read over bytes; True
    where it cannot tell: escapes, patterns Rust's regex cannot read).
    """

    def __init__(self, names: frozenset[str], patterns: list[str]) -> None:
        self.names = names
        self.patterns: list[re.Pattern] = []
        self.unknown = False
        for pattern in patterns:
            try:
                self.patterns.append(re.compile(pattern))
            except re.error:
                self.unknown = True
        self._engine: Any = None
        self._starts: dict[bytes, bool] = {}
        self._grammar: str | None = None
        self._token_engines: dict[int, Any] = {}
        if not self.unknown:
            self._grammar = _key_grammar(names, patterns)
            if self._grammar is not None:
                self._engine = _engine([bytes([i]) for i in range(256)], self._grammar)

    def takes(self, name: str) -> bool:
        return self.unknown or name in self.names or any(p.search(name) for p in self.patterns)

    def token_mask(self, raw: bytes, tokens: list[bytes]) -> Any:
        """Bool array over `tokens`: which keep a key starting `raw` the start of a key
        this filter takes (one native mask; None where it cannot tell). Meant for tokens
        without a quote or backslash: the others end or escape the key."""
        if self._grammar is None or b"\\" in raw:
            return None
        engine = self._token_engines.get(id(tokens))
        if engine is None:
            # the vocabulary, then the 256 single bytes the key so far is spelled in
            engine = _engine([*tokens, *(bytes([i]) for i in range(256))], self._grammar)
            if len(self._token_engines) >= 4:  # a few vocabularies (bytes, one model's tokens)
                self._token_engines.pop(next(iter(self._token_engines)))
            self._token_engines[id(tokens)] = engine
        n = len(tokens)
        return engine.mask(tuple(n + b for b in raw))[:n]

    def may_start(self, raw: bytes) -> bool:
        if self._engine is None or b"\\" in raw:
            return True
        found = self._starts.get(raw)
        if found is None:
            found = self._starts[raw] = self._engine.alive(raw)
            if len(self._starts) > 1 << 16:
                self._starts.clear()
        return found


def _key_grammar(names: frozenset[str], patterns: list[str]) -> str | None:
    """llguidance's regex grammar of the key language (None if Rust cannot read it)."""
    import llguidance

    from genlm_lab.control.constraint.json.relax import _rust_literal, _rust_regex_ok

    parts = [_rust_literal(n) for n in sorted(names)]
    for pattern in patterns:
        head, tail = "(?s:.*)", "(?s:.*)"  # re.search: the match may start and end anywhere
        if pattern.startswith("^"):
            pattern, head = pattern[1:], ""
        if pattern.endswith("$") and not pattern.endswith("\\$"):
            pattern, tail = pattern[:-1], ""
        if "^" in pattern.replace("[^", "") or "$" in pattern or not _rust_regex_ok(pattern):
            return None  # anchors inside, or syntax Rust reads otherwise: no prefix verdict
        parts.append(f"{head}(?:{pattern}){tail}")
    if not parts:
        parts = ["[^\\s\\S]"]
    try:
        return llguidance.LLMatcher.grammar_from_regex("|".join(f"(?:{p})" for p in parts))
    except Exception:  # noqa: BLE001 - flags llguidance reads otherwise: no verdict
        return None


def _engine(tokens: list[bytes], grammar: str) -> Any:
    from genlm_lab.control.constraint.llg.engine import Engine

    try:
        return Engine(tokens, grammar)
    except Exception:  # noqa: BLE001 - a grammar llguidance refuses: no verdict
        return None


class ObjAlt:
    """One object schema (a conjunction of schema dicts) that an open object may match."""

    __slots__ = ("conj", "required", "names", "maxp", "minp", "filters", "_children", "_encoded")

    def __init__(self, conj, required, names, maxp, minp, filters=()) -> None:
        self.conj = conj
        self.required: frozenset[str] = required
        self.names: frozenset[str] | None = names  # None: any key
        self.maxp: int | None = maxp
        self.minp: int = minp
        self.filters: tuple[KeyFilter, ...] = filters  # where names is None
        self._children: dict[str, View] = {}
        self._encoded: dict[str, bytes] = {}

    def admits(self, name: str) -> bool:
        """Whether the key filters take `name` (the property names are checked by `takes`)."""
        return all(f.takes(name) for f in self.filters)

    def takes(self, keys: frozenset[str]) -> frozenset[str] | None:
        """The keys this schema lets come next after `keys` (None: any unused key)."""
        missing = self.required - keys
        if self.maxp is not None:
            slots = self.maxp - len(keys)
            if slots <= 0:
                return frozenset()
            if slots <= len(missing):
                return missing
        if self.names is None:
            return None
        return self.names - keys

    def encoded(self, name: str) -> bytes:
        found = self._encoded.get(name)
        if found is None:
            found = self._encoded[name] = json.dumps(name, ensure_ascii=False)[1:-1].encode()
        return found


class KeyRules:
    """The object-key rules of one schema, read while the document is written.

    Args:
        schema: the JSON schema (as the user gave it; `$ref`s are resolved in it).
    """

    def __init__(self, schema: Any) -> None:
        self.root = schema
        draft = schema.get("$schema", "") if isinstance(schema, dict) else ""
        self._ref_alone = isinstance(draft, str) and any(d in draft for d in _DRAFT_OLD)
        self._views: dict[int, View] = {}
        self._alts: dict[tuple, tuple[ObjAlt, ...]] = {}
        self._elems: dict[tuple, View] = {}
        self.start: State = (VAL, (), self.view(schema), b"", False)

    # ------------------------------------------------------------ schemas
    def _resolve(self, ref: str) -> Any:
        if ref == "#":
            return self.root
        if not ref.startswith("#/"):
            return True  # anchors, remote documents: unknown, allow anything
        node = self.root
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            elif isinstance(node, dict) and part in node:
                node = node[part]
            else:
                return True
        return node

    def view(self, node: Any, depth: int = 0) -> View:
        """`node` as a disjunction of conjunctions of schema dicts (`$ref`, allOf, anyOf, oneOf
        unfolded); `((),)` where it cannot tell (allows anything)."""
        if node is True or not isinstance(node, (dict, bool)):
            return _ANY
        if node is False:
            return ()
        found = self._views.get(id(node))
        if found is not None:
            return found
        if depth > _MAX_DEPTH:
            return _ANY
        ref = node.get("$ref")
        alone = isinstance(ref, str) and self._ref_alone  # drafts <= 7 ignore $ref's siblings
        out: list[tuple] = [()] if alone else [(node,)]
        parts: list[list[View]] = []
        if isinstance(ref, str):
            parts.append([self.view(self._resolve(ref), depth + 1)])
        if not alone:
            for sub in node.get("allOf") or []:
                parts.append([self.view(sub, depth + 1)])
            for key in ("anyOf", "oneOf"):
                if isinstance(node.get(key), list):
                    parts.append([self.view(sub, depth + 1) for sub in node[key]])
        for options in parts:
            union = _dedup(c for v in options for c in v)
            out = [a + b for a in out for b in union]
            if len(out) > _MAX_BRANCHES:
                out = [()] if alone else [(node,)]  # too many: this node's own keywords only
                break
        view = self._views[id(node)] = _dedup(out)
        return view

    def _conj(self, parts: list[Any]) -> View:
        out: list[tuple] = [()]
        for part in parts:
            out = [a + b for a in out for b in self.view(part)]
            if len(out) > _MAX_BRANCHES:
                return _ANY
        return _dedup(out)

    def alts(self, view: View) -> tuple[ObjAlt, ...]:
        """The object schemas of `view` (those that allow an object at all)."""
        vkey = _vkey(view)
        found = self._alts.get(vkey)
        if found is None:
            found = self._alts[vkey] = tuple(a for c in view if (a := self._alt(c)) is not None)
        return found

    @staticmethod
    def _alt(conj: tuple) -> ObjAlt | None:
        required: set[str] = set()
        names: set[str] | None = None
        filters: list[KeyFilter] = []
        maxp, minp = None, 0
        for d in conj:
            types = _types(d)
            if types is not None and "object" not in types:
                return None
            if "const" in d and not isinstance(d["const"], dict):
                return None
            if isinstance(d.get("enum"), list) and not any(isinstance(v, dict) for v in d["enum"]):
                return None
            if isinstance(d.get("required"), list):
                required.update(r for r in d["required"] if isinstance(r, str))
            if d.get("additionalProperties") is False and not d.get("patternProperties"):
                own = set(d.get("properties") or {})
                names = own if names is None else names & own
            elif d.get("additionalProperties") is False and isinstance(
                d.get("patternProperties"), dict
            ):
                filters.append(KeyFilter(frozenset(d.get("properties") or {}),
                                         list(d["patternProperties"])))  # fmt: skip
            if isinstance(d.get("maxProperties"), int):
                maxp = d["maxProperties"] if maxp is None else min(maxp, d["maxProperties"])
            if isinstance(d.get("minProperties"), int):
                minp = max(minp, d["minProperties"])
        if names is not None:
            names = {n for n in names if all(f.takes(n) for f in filters)}
            filters = []
        if names is not None and not required <= names:
            return None
        if not all(f.takes(r) for f in filters for r in required):
            return None
        if maxp is not None and maxp < max(len(required), minp):
            return None
        return ObjAlt(conj, frozenset(required), None if names is None else frozenset(names),
                      maxp, minp, tuple(filters))  # fmt: skip

    def child(self, alt: ObjAlt, key: str) -> View:
        """The view of the value under `key` in an object matching `alt`."""
        found = alt._children.get(key)
        if found is not None:
            return found
        parts: list[Any] = []
        for d in alt.conj:
            props = d.get("properties") or {}
            matched, unknown = [], False
            for pattern, sub in (d.get("patternProperties") or {}).items():
                try:
                    if re.search(pattern, key):
                        matched.append(sub)
                except re.error:
                    unknown = True
            if key in props:
                parts.append(props[key])
            parts.extend(matched)
            if key not in props and not matched and not unknown:
                parts.append(d.get("additionalProperties", True))
        found = alt._children[key] = self._conj(parts)
        return found

    def element(self, view: View, index: int) -> View:
        """The view of item `index` of an array under `view`."""
        vkey = (_vkey(view), index)
        found = self._elems.get(vkey)
        if found is not None:
            return found
        out: list[tuple] = []
        for conj in view:
            parts: list[Any] = []
            if any((t := _types(d)) is not None and "array" not in t for d in conj):
                continue
            for d in conj:
                prefix, items = d.get("prefixItems"), d.get("items", True)
                if isinstance(items, list):  # drafts 4-7: a tuple
                    prefix, items = items, d.get("additionalItems", True)
                if isinstance(prefix, list) and index < len(prefix):
                    parts.append(prefix[index])
                else:
                    parts.append(items)
            out.extend(self._conj(parts))
        found = _dedup(out) if len(out) <= _MAX_BRANCHES else _ANY
        if index < 64:  # long arrays: past any tuple prefix, items repeat
            self._elems[vkey] = found
        return found

    # ------------------------------------------------------------ keys
    @staticmethod
    def _prefix_ok(alts: tuple[ObjAlt, ...], keys: frozenset[str], raw: bytes) -> bool:
        """Some schema of the object takes a key whose JSON text starts with `raw`."""
        for alt in alts:
            names = alt.takes(keys)
            if names is None and all(f.may_start(raw) for f in alt.filters):
                return True
            if names is None:
                continue
            if b"\\" in raw and names:
                return True
            if any(alt.encoded(n).startswith(raw) for n in names):
                return True
        return False

    @staticmethod
    def closable(alts: tuple[ObjAlt, ...], keys: frozenset[str]) -> bool:
        return any(a.required <= keys and len(keys) >= a.minp for a in alts)

    # ------------------------------------------------------------ bytes
    def feed(self, state: State, data: bytes) -> State | None:
        """The state after `data` (bytes llguidance's grammar allows), or None if they break
        a key rule."""
        mode, stack, pend, key, esc = state
        i, n = 0, len(data)
        while i < n:
            if mode == STR:
                if esc:
                    esc, i = False, i + 1
                    continue
                m = _STRING_STOP.search(data, i)
                if m is None:
                    break
                i = m.end()
                if data[m.start()] == 92:  # backslash
                    esc = True
                else:
                    mode = AFTER
                continue
            c = data[i]
            if mode == KSTR:
                if esc:
                    key, esc, i = key + data[i : i + 1], False, i + 1
                    continue
                m = _KEY_STOP.search(data, i)
                j = n if m is None else m.start()
                key += data[i:j]
                i = j
                if m is None:
                    break
                if data[j] == 92:
                    key, esc, i = key + b"\\", True, j + 1
                    continue
                i = j + 1
                try:
                    name = json.loads(b'"' + key + b'"')
                except ValueError:
                    return None
                kind, alts, keys = stack[-1]
                if name in keys:
                    return None
                alts = tuple(
                    a
                    for a in alts
                    if ((t := a.takes(keys)) is None or name in t) and a.admits(name)
                )
                if not alts:
                    return None
                views = [self.child(a, name) for a in alts]
                pend = views[0] if len(views) == 1 else _dedup(c for v in views for c in v)
                stack = (*stack[:-1], (kind, alts, keys | {name}))
                mode, key = COLON, b""
                continue
            i += 1
            if mode == SCAL:
                if c in _SCALAR_END:
                    mode, i = AFTER, i - 1
                continue
            if c in _WS:
                continue
            if mode in (VAL, VAL_OR_END):
                if c == 123:  # {
                    alts = self.alts(pend)
                    if not alts:
                        return None
                    stack, mode = (*stack, (0, alts, frozenset())), KEY_OR_END
                elif c == 91:  # [
                    stack = (*stack, (1, pend, 0))
                    pend, mode = self.element(pend, 0), VAL_OR_END
                elif c == 93 and mode == VAL_OR_END:
                    stack, mode = stack[:-1], AFTER
                elif c == 34:
                    mode = STR
                else:
                    mode = SCAL
            elif mode in (KEY_OR_END, KEY):
                _, alts, keys = stack[-1]
                if c == 34:
                    if not self._prefix_ok(alts, keys, b""):
                        return None
                    mode, key = KSTR, b""
                elif c == 125 and mode == KEY_OR_END:
                    if not self.closable(alts, keys):
                        return None
                    stack, mode = stack[:-1], AFTER
            elif mode == COLON:
                if c == 58:
                    mode = VAL
            elif mode == AFTER and stack:
                top = stack[-1]
                if top[0] == 0:
                    if c == 44 and self._prefix_ok(top[1], top[2], b""):
                        mode = KEY
                    elif c == 125 and self.closable(top[1], top[2]):
                        stack = stack[:-1]
                    else:
                        return None
                elif c == 44:
                    stack = (*stack[:-1], (1, top[1], top[2] + 1))
                    pend, mode = self.element(top[1], top[2] + 1), VAL
                elif c == 93:
                    stack = stack[:-1]
        if mode == KSTR and not esc and not self._prefix_ok(stack[-1][1], stack[-1][2], key):
            return None
        return (mode, stack, pend, key, esc)

    @staticmethod
    def key_filter_mask(state: State, tokens: list[bytes]) -> Any:
        """Inside a key that `patternProperties` filters (every schema of the object takes
        any unused key its filters take): bool array over `tokens`, which keep the key the
        start of one a filter takes (for tokens without a quote or backslash). None: no
        such key, or no native verdict."""
        if state[0] != KSTR or state[4]:
            return None
        _, alts, keys = state[1][-1]
        out = None
        for alt in alts:
            if alt.takes(keys) is not None or not alt.filters:
                return None
            conj = None
            for f in alt.filters:
                mask = f.token_mask(state[3], tokens)
                if mask is None:
                    return None
                conj = mask if conj is None else conj & mask
            out = conj if out is None else out | conj
        return out

    @staticmethod
    def in_key(state: State) -> bool:
        """Whether the state is inside a key string whose names are all known (listed, or
        filtered by `patternProperties`): every byte of it is then read here."""
        if state[0] != KSTR:
            return False
        _, alts, keys = state[1][-1]
        return all(a.takes(keys) is not None or a.filters for a in alts)

    @staticmethod
    def in_string(state: State) -> bool:
        return state[0] == STR
