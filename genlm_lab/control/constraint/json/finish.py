"""A short way to finish a JSON document prefix, found by walking the byte mask.

`finish(engine, prefix)` writes bytes after `prefix` one at a time, each one
the mask of the schema allows, until EOS is allowed (the document is then
valid: the byte-level mask allows EOS only where jsonschema accepts). At
each byte it takes the cheapest move the key-rule state suggests:

- inside a string value with a `format`: the rest of a value of that format
  (`2024-0` + `1-01` for a date, `@a` for an e-mail address), if the mask
  allows it and the quote after it;
- inside a string value: close it (`"`), else a closer or two that lead to
  the quote (`}}` of a `${{ ... }}` pattern), else the first allowed content byte;
- inside a key: go on towards a name the object still needs (a missing
  required key first, then the names it lists), else close the key;
- where an object or array may close: close it;
- where a value starts: the shortest starts first (`0`, `""`, `[]`, `{}`, `null`, `true`, ...);
- after a value: close the container, else `,` (a missing required key);
- whitespace only when nothing else is allowed.

The walk is greedy, not a search: it returns *a* finish, which is short but
not always the shortest. Where it runs into a dead end it walks once more,
now adding to each object the keys a conditional of its schema names as
required (in `if`, `then` or `else`: the mask checks conditionals only at
completion, so an object may close without them), and starting a value the
mask leaves free as a string. Whatever it still cannot finish within
`limit` bytes it gives up on: None.
"""

from __future__ import annotations

import re
from itertools import chain, islice
from typing import Any

import numpy as np

from genlm_lab.control.constraint.budget.hooks import QUOTE_BREAKERS
from genlm_lab.control.constraint.json.keys import (
    AFTER,
    COLON,
    KEY,
    KEY_OR_END,
    KSTR,
    SCAL,
    STR,
    VAL,
    VAL_OR_END,
)
from genlm_lab.control.constraint.json.pattern_example import pattern_example

__all__ = ["finish", "formats"]

_EOS = 256
_VALUE_STARTS = b'0"[{ntf-123456789'
_CONTENT = b"a1A_-. 0"  # "1" before "0": a date pattern then writes 1111-11-11, a real date
_CLOSERS = b"}])>'"
_WS = frozenset(b" \t\r\n")
# Content bytes, past the string's minLength, after which a walk that still cannot close the
# string gives up: a pattern `re.search` reads anywhere lets the mask take "aaa..." forever.
_STRING_WALK = 64
# A value of each format the mask enforces: the rest of one is written from where the
# string stands (the formats are fixed-width up to their fractions and offsets).
_EXAMPLES = {
    "date": "2000-01-01",
    "time": "00:00:00Z",
    "date-time": "2000-01-01T00:00:00Z",
    "uuid": "00000000-0000-0000-0000-000000000000",
}
_TAILS = ("", "Z", "0Z", ":00Z", "00Z", "0", "00")  # after a fraction or an offset started


class _Allowed:
    """The bytes the engine allows after `text`, asked one at a time.

    A finish step reads one to three bytes (`_first`), so it asks those alone (a native
    check each) and reads the whole 257-entry mask only where a step needs every byte.
    """

    __slots__ = ("engine", "text", "_mask")

    def __init__(self, engine: Any, text: bytes) -> None:
        self.engine = engine
        self.text = text
        self._mask: np.ndarray | None = None

    def __getitem__(self, byte: int) -> bool:
        if self._mask is not None:
            return bool(self._mask[byte])
        return bool(self.engine.allows(self.text, byte))

    def mask(self) -> np.ndarray:
        if self._mask is None:
            self._mask = self.engine.mask(self.text)
        return self._mask


def formats(state: Any) -> list[str]:
    """The `format`s the string value being written in key-rule `state` must have."""
    if state[0] != STR:
        return []
    return sorted({d["format"] for conj in state[2] for d in conj
                   if isinstance(d.get("format"), str)})  # fmt: skip


def _string_start(text: bytes) -> int:
    """The offset just after the quote that opens the string `text` ends inside."""
    i = len(text)
    while True:
        i = text.rfind(b'"', 0, i)
        slashes = 0
        while i - 1 - slashes >= 0 and text[i - 1 - slashes] == 92:
            slashes += 1
        if slashes % 2 == 0:
            return i + 1


def _format_rests(name: str, content: str) -> list[str]:
    """Candidate rests of a string value of format `name` that starts with `content`."""
    if name == "ipv4":
        parts = content.split(".")
        if parts[-1] == "":
            parts[-1] = "0"
        rest = ("0" if content.endswith(".") or not content else "") + ".0" * (4 - len(parts))
        return [rest, *[rest + t for t in ("0", "00")]]
    if name in ("email", "idn-email"):
        return ["", "@a"]
    example = _EXAMPLES.get(name)
    if example is None:
        return []
    return [example[len(content) :] + tail for tail in _TAILS]


def _format_plan(engine: Any, text: bytes, state: Any) -> bytes | None:
    """Bytes that close the string value of a format being written (None: none found)."""
    names = formats(state)
    if not names:
        return None
    start = _string_start(text)
    try:
        content = text[start:].decode("utf-8")
    except UnicodeDecodeError:
        return None
    for name in names:
        for rest in _format_rests(name, content):
            plan = rest.encode("utf-8")
            if _walks(engine, text, plan + b'"'):
                return plan
    return None


def _pattern_plan(engine: Any, text: bytes, state: Any) -> bytes | None:
    """Bytes that close the string value being written so that its `pattern` finds a match
    (None: none found): the shortest end of the pattern's example (`pattern_example`) after
    which Python's `re` finds it in the whole value ("orig" + "@a.aa"), else, for a pattern
    `re.search` may find anywhere, the whole example; kept where the mask walks it."""
    patterns = sorted({d["pattern"] for conj in state[2] for d in conj
                       if isinstance(d.get("pattern"), str)})  # fmt: skip
    try:
        content = text[_string_start(text) :].decode("utf-8")
    except UnicodeDecodeError:
        return None
    for pattern in patterns:
        found = pattern_example(pattern)
        if found is None:
            continue
        example, anchored = found
        ends = (example[k:] for k in range(len(example), -1, -1))  # shortest first
        ends_found = (end for end in ends if _finds(pattern, content + end))
        whole = () if anchored else (example,)
        for rest in islice(chain(ends_found, whole), 2):  # searched only until two are found
            plan = rest.encode("utf-8")
            if QUOTE_BREAKERS.isdisjoint(plan) and _walks(engine, text, plan + b'"'):
                return plan
    return None


def _finds(pattern: str, value: str) -> bool:
    try:
        return re.search(pattern, value) is not None
    except re.error:
        return False


def _walks(engine: Any, text: bytes, plan: bytes) -> bool:
    for b in plan:
        if not engine.allows(text, b):
            return False
        text += bytes([b])
    return True


def _min_length(state: Any) -> int:
    """The largest `minLength` among the schemas of the string value being written."""
    lengths = [d.get("minLength") for conj in state[2] for d in conj]
    return max((n for n in lengths if isinstance(n, int)), default=0)


def _first(allowed: _Allowed, order: bytes) -> int | None:
    for b in order:
        if allowed[b]:
            return b
    return None


def _any_but_whitespace(allowed: _Allowed) -> int | None:
    options = np.flatnonzero(allowed.mask()[:_EOS]).tolist()
    return next((b for b in options if b not in _WS), options[0] if options else None)


def _names(alts: Any, keys: frozenset[str]) -> list[str]:
    """Key names to aim for: the missing required ones, then the others the object lists."""
    ranked: list[str] = []
    for alt in alts:
        ranked.extend(sorted(alt.required - keys))
    for alt in alts:
        names = alt.takes(keys)
        if names is None:  # any key may come: the listed properties are the safe ones
            listed = {n for d in alt.conj for n in (d.get("properties") or {})}
            names = frozenset(listed) - keys
        ranked.extend(sorted(names))
    return ranked


def _conditional(alts: Any, keys: frozenset[str]) -> list[str]:
    """Names a conditional of the object's schemas requires (`if`, `then`, `else`), not yet
    written."""
    names: set[str] = set()
    for alt in alts:
        for d in alt.conj:
            for branch in (d.get("if"), d.get("then"), d.get("else")):
                required = branch.get("required") if isinstance(branch, dict) else None
                if isinstance(required, list):
                    names.update(n for n in required if isinstance(n, str) and alt.admits(n))
    return sorted(names - keys)


def _wants_key(state: Any) -> bool:
    """Whether the object being written still misses a key a conditional may require."""
    stack = state[1]
    return bool(stack) and stack[-1][0] == 0 and bool(_conditional(stack[-1][1], stack[-1][2]))


def _key_byte(state: Any, allowed: _Allowed, hints: bool = False) -> int | None:
    """The next byte of a key: towards a missing required name (with `hints`, then one a
    conditional requires), else a listed name, else close."""
    _, stack, _, raw, esc = state
    if esc:
        return None
    _, alts, keys = stack[-1]
    names = _names(alts, keys)
    for name in [*_conditional(alts, keys), *names] if hints else names:
        encoded = alts[0].encoded(name)
        if encoded == raw and allowed[34]:
            return 34
        if encoded.startswith(raw) and len(encoded) > len(raw) and allowed[encoded[len(raw)]]:
            return encoded[len(raw)]
    return _first(allowed, b'"' + _CONTENT)


def _string_byte(engine: Any, text: bytes, allowed: _Allowed) -> int | None:
    """The next byte inside a string value: its closing quote, else one or two closers that
    lead to it (a `${{ ... }}` pattern), else content."""
    if allowed[34]:
        return 34
    for first in _CLOSERS:
        if not allowed[first]:
            continue
        after = _Allowed(engine, text + bytes([first]))
        if after[34] or any(
            after[c] and engine.allows(text + bytes([first, c]), 34) for c in _CLOSERS
        ):
            return first
    return _first(allowed, _CONTENT)


def _choose(
    engine: Any, text: bytes, state: Any, allowed: _Allowed, hints: bool = False
) -> int | None:
    """The next byte of the finish after `text`, in key-rule `state` (None: stuck); with
    `hints`, an object misses no key a conditional may require before it closes."""
    mode = state[0]
    more = hints and mode in (KEY, KEY_OR_END, SCAL, AFTER) and _wants_key(state)
    if mode == STR:
        pick = _string_byte(engine, text, allowed)
    elif mode == KSTR:
        pick = _key_byte(state, allowed, hints)
    elif more:
        pick = _first(allowed, b'"' if mode in (KEY, KEY_OR_END) else b",")
    elif mode in (KEY, KEY_OR_END):
        pick = _first(allowed, b'}"')
    elif mode == COLON:
        pick = _first(allowed, b":")
    elif mode in (VAL, VAL_OR_END):  # with hints a value the mask leaves free is a string
        pick = _first(allowed, b"]" + (b'"' if hints else b"") + _VALUE_STARTS)
    elif mode in (SCAL, AFTER):
        pick = _first(allowed, b'}],"0')
    else:
        pick = None
    return pick if pick is not None else _any_but_whitespace(allowed)


def finish(
    engine: Any, prefix: bytes, limit: int = 1024, stuck: list | None = None
) -> bytes | None:
    """Bytes that make `prefix` a valid document, found greedily (None: none found).

    Args:
        engine: the byte-level `KeyedEngine` of a `JsonSchema` (masks over 256 bytes + EOS).
        prefix: the document so far.
        limit: the most bytes to write before giving up.
        stuck: if given, where the walk got stuck is appended to it: `(text, key-rule
            state)` (nothing when it stopped at `limit`).
    """
    where: list = []
    found = _finish(engine, prefix, limit, where)
    if found is None and where and getattr(getattr(engine, "rules", None), "has_if", False):
        found = _finish(engine, prefix, limit, [], hints=True)  # a dead end, not the limit
    if found is None and stuck is not None:
        stuck.extend(where)
    return found


def _finish(
    engine: Any, prefix: bytes, limit: int, stuck: list, hints: bool = False
) -> bytes | None:
    text = bytes(prefix)
    out = bytearray()
    planned = False  # the string being written already got its format's rest
    content = 0  # bytes the walk wrote into the string value it is in
    for _ in range(limit + 1):
        allowed = _Allowed(engine, text)
        if allowed[_EOS]:
            return bytes(out)
        state = engine.key_state(text)
        if state is None or len(out) >= limit:
            if len(out) < limit:  # a limit reached is no verdict: nothing is appended
                stuck.append((text, state))
            return None
        if state[0] == STR and not planned:
            planned = True
            plan = _format_plan(engine, text, state) or _pattern_plan(engine, text, state)
            if plan:
                out += plan
                text += plan
                continue
        elif state[0] != STR:
            planned, content = False, 0
        if state[0] == STR:
            content += 1
            if content > _STRING_WALK + _min_length(state):
                return None  # content the mask never lets close (an unanchored pattern): no verdict
        pick = _choose(engine, text, state, allowed, hints)
        if pick is None:
            stuck.append((text, state))
            return None
        out.append(pick)
        text += bytes([pick])
    return None
