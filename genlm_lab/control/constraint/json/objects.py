"""What an open JSON object may hold under a schema: its alternatives and the key names each takes.

`ObjectSchemas` reads a schema into *views* (a disjunction of conjunctions of
object schemas: `anyOf`/`oneOf` branches, `allOf` parts, `$ref` targets),
and a view into `ObjAlt`s: per alternative, the required keys, the names it
takes (`KeyFilter` for `patternProperties` and `propertyNames`) and the
`minProperties`/`maxProperties` bounds. `keys.KeyRules` applies them to the
bytes of a document as it is written.
"""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np

from genlm_lab.control.constraint.json.reading import resolve_pointer

__all__ = ["KeyFilter", "ObjAlt", "ObjectSchemas", "View", "dedup"]

View = tuple  # a disjunction of conjunctions (tuples) of schema dicts; ((),) allows anything

_ANY: View = ((),)
_MAX_BRANCHES = 64
_MAX_DEPTH = 24
_DRAFT_OLD = ("draft-03", "draft-04", "draft-06", "draft-07")


def _vkey(view: View) -> tuple:
    """A hashable key of a view (the ids of its schema dicts, which the root keeps alive)."""
    return tuple(tuple(map(id, conj)) for conj in view)


def dedup(conjs) -> tuple:
    return tuple({tuple(map(id, c)): c for c in conjs}.values())


def _types(node: dict) -> list[str] | None:
    t = node.get("type")
    if t is None:
        return None
    return [t] if isinstance(t, str) else list(t)


class KeyFilter:
    """The keys an object with `patternProperties` and `additionalProperties: false` takes:
    its property names and the names a pattern finds (`re.search`, as jsonschema does).

    `takes(name)` is that exact verdict; `may_start(key, taken)` whether some such name
    not yet in `taken` starts with the (decoded) key text `key`: the names are compared
    in Python, the patterns read by an llguidance regex over bytes. It is True where it
    cannot tell (a pattern Rust's regex cannot read; a pattern's only keys all taken).
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
        self._encoded = {n: json.dumps(n, ensure_ascii=False)[1:-1].encode() for n in names}
        self._engine: Any = None  # the patterns' language alone (None: no patterns)
        self._starts: dict[bytes, bool] = {}
        self._grammar: str | None = None
        self._token_engines: dict[int, Any] = {}
        self._token_index: dict[int, dict[bytes, list[int]]] = {}
        self._vague = False  # a pattern Rust's regex cannot read: no prefix verdict
        if not self.unknown and patterns:
            self._grammar = _key_grammar(frozenset(), patterns)
            if self._grammar is not None:
                self._engine = _engine([bytes([i]) for i in range(256)], self._grammar)
            self._vague = self._engine is None

    def takes(self, name: str) -> bool:
        return self.unknown or name in self.names or any(p.search(name) for p in self.patterns)

    def token_mask(
        self, raw: bytes, tokens: list[bytes], taken: frozenset[str] = frozenset()
    ) -> Any:
        """Bool array over `tokens`: which keep a key starting `raw` the start of a key
        this filter takes and `taken` lacks (None where it cannot tell). Meant for tokens
        without a quote or backslash: the others end or escape the key."""
        if self.unknown or self._vague or b"\\" in raw:
            return None
        n = len(tokens)
        if self._grammar is None:
            mask = np.zeros(n, dtype=bool)
        else:
            engine = self._token_engines.get(id(tokens))
            if engine is None:
                # the vocabulary, then the 256 single bytes the key so far is spelled in
                engine = _engine([*tokens, *(bytes([i]) for i in range(256))], self._grammar)
                if engine is None:
                    return None
                if len(self._token_engines) >= 4:  # a few vocabularies (bytes, one model's)
                    self._token_engines.pop(next(iter(self._token_engines)))
                self._token_engines[id(tokens)] = engine
            mask = np.array(engine.mask(tuple(n + b for b in raw))[:n], dtype=bool)
        index = self._index(tokens)
        for name, text in self._encoded.items():
            if name in taken or not text.startswith(raw):
                continue
            rest = text[len(raw) :]
            for k in range(1, len(rest) + 1):
                for i in index.get(rest[:k], ()):
                    mask[i] = True
        return mask

    def _index(self, tokens: list[bytes]) -> dict[bytes, list[int]]:
        """Each token text's indices in `tokens` (kept for a few vocabularies)."""
        found = self._token_index.get(id(tokens))
        if found is None:
            found = {}
            for i, token in enumerate(tokens):
                found.setdefault(token, []).append(i)
            if len(self._token_index) >= 4:
                self._token_index.pop(next(iter(self._token_index)))
            self._token_index[id(tokens)] = found
        return found

    def may_start(self, key: bytes, taken: frozenset[str] = frozenset()) -> bool:
        """Whether a key this filter takes, not in `taken`, starts with the UTF-8 `key`."""
        if self.unknown or self._vague:
            return True
        if any(n not in taken and n.encode("utf-8", "surrogatepass").startswith(key)
               for n in self.names):  # fmt: skip
            return True
        if self._engine is None:
            return False
        found = self._starts.get(key)
        if found is None:
            found = self._starts[key] = self._engine.alive(key)
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


class ObjectSchemas:
    """A schema read as views and object alternatives, cached per schema node.

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

    # ------------------------------------------------------------ schemas
    def _resolve(self, ref: str) -> Any:
        # anchors, remote documents, dangling pointers: unknown, so allow anything
        node = resolve_pointer(self.root, ref)
        return True if node is None else node

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
            union = dedup(c for v in options for c in v)
            out = [a + b for a in out for b in union]
            if len(out) > _MAX_BRANCHES:
                out = [()] if alone else [(node,)]  # too many: this node's own keywords only
                break
        view = self._views[id(node)] = dedup(out)
        return view

    def _conj(self, parts: list[Any]) -> View:
        out: list[tuple] = [()]
        for part in parts:
            out = [a + b for a in out for b in self.view(part)]
            if len(out) > _MAX_BRANCHES:
                return _ANY
        return dedup(out)

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
        found = dedup(out) if len(out) <= _MAX_BRANCHES else _ANY
        if index < 64:  # long arrays: past any tuple prefix, items repeat
            self._elems[vkey] = found
        return found
