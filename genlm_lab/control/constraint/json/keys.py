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
from functools import cached_property
from typing import Any

from genlm_lab.control.constraint.json.objects import ObjAlt, ObjectSchemas, dedup

__all__ = ["KeyRules", "State", "unescaped_prefix"]

State = tuple  # (mode, stack, pending view, key bytes, escape pending)
# modes
VAL, VAL_OR_END, KEY_OR_END, KEY, KSTR, COLON, STR, SCAL, AFTER = range(9)
_WS = frozenset(b" \t\r\n")
_SCALAR_END = frozenset(b" \t\r\n,}]")
_STRING_STOP = re.compile(rb'["\\]')
_KEY_STOP = re.compile(rb'["\\]')


def _has_if(node: Any, depth: int = 0) -> bool:
    if isinstance(node, dict):
        return "if" in node or any(_has_if(v, depth + 1) for v in node.values() if depth < 64)
    if isinstance(node, list):
        return any(_has_if(v, depth + 1) for v in node if depth < 64)
    return False


_SHORT_ESCAPES = {
    ord('"'): b'"', ord("\\"): b"\\", ord("/"): b"/", ord("b"): b"\b",
    ord("f"): b"\f", ord("n"): b"\n", ord("r"): b"\r", ord("t"): b"\t",
}  # fmt: skip
_HEX = frozenset(b"0123456789abcdefABCDEF")


def unescaped_prefix(raw: bytes) -> bytes | None:
    """The UTF-8 bytes that the start `raw` of a JSON string's text decodes to, up to its
    last complete character (a trailing partial escape, or a high surrogate still
    waiting for its low half, is left out). None where a lone surrogate makes the text
    no UTF-8; an invalid escape ends the decoding (the grammar refuses it anyway).
    """
    out = bytearray()
    i, n = 0, len(raw)
    high: int | None = None  # a high surrogate waiting for its low half
    while i < n:
        c = raw[i]
        if c != 92:
            if high is not None:
                return None
            out.append(c)
            i += 1
            continue
        if i + 1 >= n:
            break  # a backslash: the character it escapes is not known yet
        short = _SHORT_ESCAPES.get(raw[i + 1])
        if short is not None:
            if high is not None:
                return None
            out += short
            i += 2
            continue
        if raw[i + 1] != ord("u"):
            break
        digits = raw[i + 2 : i + 6]
        if not all(d in _HEX for d in digits):
            break
        if len(digits) < 4:
            break  # a partial \u escape
        code = int(digits, 16)
        i += 6
        if 0xD800 <= code < 0xDC00:
            if high is not None:
                return None
            high = code
            continue
        if 0xDC00 <= code < 0xE000:
            if high is None:
                return None
            code, high = 0x10000 + ((high - 0xD800) << 10) + (code - 0xDC00), None
        elif high is not None:
            return None
        out += chr(code).encode()
    return bytes(out)


class KeyRules(ObjectSchemas):
    """The object-key rules of one schema, read while the document is written.

    Args:
        schema: the JSON schema (as the user gave it; `$ref`s are resolved in it).
    """

    def __init__(self, schema: Any) -> None:
        super().__init__(schema)
        self.start: State = (VAL, (), self.view(schema), b"", False)

    @cached_property
    def has_if(self) -> bool:
        """Whether the schema has a conditional (`if`) anywhere: then the finish may walk
        again, adding the keys one requires (`json.finish`)."""
        return _has_if(self.root)

    @staticmethod
    def _prefix_ok(alts: tuple[ObjAlt, ...], keys: frozenset[str], raw: bytes) -> bool:
        """Some schema of the object takes a key whose JSON text starts with `raw`.

        A key with escapes is compared by what it decodes to (`unescaped_prefix`): a
        key no name can complete is refused at once, not only when it closes.
        """
        if b"\\" in raw:
            decoded = unescaped_prefix(raw)
            if decoded is None:
                return True  # a lone surrogate: no verdict
            return any(
                (names := alt.takes(keys)) is None
                and all(f.may_start(decoded, keys) for f in alt.filters)
                or names is not None
                and any(n.encode("utf-8", "surrogatepass").startswith(decoded) for n in names)
                for alt in alts
            )
        for alt in alts:
            names = alt.takes(keys)
            if names is None and all(f.may_start(raw, keys) for f in alt.filters):
                return True
            if names is None:
                continue
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
                pend = views[0] if len(views) == 1 else dedup(c for v in views for c in v)
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
        if mode == KSTR and not self._prefix_ok(stack[-1][1], stack[-1][2], key):
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
                mask = f.token_mask(state[3], tokens, keys)
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
