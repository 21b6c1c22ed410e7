"""A short way to finish a JSON document prefix, found by walking the byte mask.

`finish(engine, prefix)` writes bytes after `prefix` one at a time, each one
the mask of the schema allows, until EOS is allowed (the document is then
valid: the byte-level mask allows EOS only where jsonschema accepts). At
each byte it takes the cheapest move the key-rule state suggests:

- inside a string value: close it (`"`), else a closer or two that lead to
  the quote (`}}` of a `${{ ... }}` pattern), else the first allowed content byte;
- inside a key: go on towards a name the object still needs (a missing
  required key first, then the names it lists), else close the key;
- where an object or array may close: close it;
- where a value starts: the shortest starts first (`0`, `""`, `[]`, `{}`, `null`, `true`, ...);
- after a value: close the container, else `,` (a missing required key);
- whitespace only when nothing else is allowed.

The walk is greedy, not a search: it returns *a* finish, which is short but
not always the shortest. Whatever it cannot finish within `limit` bytes (or
where it runs into a dead end) it gives up on: None.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from genlm_lab.control.constraint._json_keys import (
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

__all__ = ["finish"]

_EOS = 256
_VALUE_STARTS = b'0"[{ntf-123456789'
_CONTENT = b"a1A_-. 0"  # "1" before "0": a date pattern then writes 1111-11-11, a real date
_CLOSERS = b"}])>'"
_WS = frozenset(b" \t\r\n")


def _first(allowed: np.ndarray, order: bytes) -> int | None:
    for b in order:
        if allowed[b]:
            return b
    return None


def _any_but_whitespace(allowed: np.ndarray) -> int | None:
    options = np.flatnonzero(allowed[:_EOS]).tolist()
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


def _key_byte(state: Any, allowed: np.ndarray) -> int | None:
    """The next byte of a key: towards a missing required name, else a listed name, else close."""
    _, stack, _, raw, esc = state
    if esc:
        return None
    _, alts, keys = stack[-1]
    for name in _names(alts, keys):
        encoded = alts[0].encoded(name)
        if encoded == raw and allowed[34]:
            return 34
        if encoded.startswith(raw) and len(encoded) > len(raw) and allowed[encoded[len(raw)]]:
            return encoded[len(raw)]
    return _first(allowed, b'"' + _CONTENT)


def _string_byte(engine: Any, text: bytes, allowed: np.ndarray) -> int | None:
    """The next byte inside a string value: its closing quote, else one or two closers that
    lead to it (a `${{ ... }}` pattern), else content."""
    if allowed[34]:
        return 34
    for first in _CLOSERS:
        if not allowed[first]:
            continue
        after = engine.mask(text + bytes([first]))
        if after[34] or any(
            after[c] and engine.mask(text + bytes([first, c]))[34] for c in _CLOSERS
        ):
            return first
    return _first(allowed, _CONTENT)


def _choose(engine: Any, text: bytes, state: Any, allowed: np.ndarray) -> int | None:
    """The next byte of the finish after `text`, in key-rule `state` (None: stuck)."""
    mode = state[0]
    if mode == STR:
        pick = _string_byte(engine, text, allowed)
    elif mode == KSTR:
        pick = _key_byte(state, allowed)
    elif mode in (KEY, KEY_OR_END):
        pick = _first(allowed, b'}"')
    elif mode == COLON:
        pick = _first(allowed, b":")
    elif mode in (VAL, VAL_OR_END):
        pick = _first(allowed, b"]" + _VALUE_STARTS)
    elif mode in (SCAL, AFTER):
        pick = _first(allowed, b'}],"0')
    else:
        pick = None
    return pick if pick is not None else _any_but_whitespace(allowed)


def finish(engine: Any, prefix: bytes, limit: int = 1024) -> bytes | None:
    """Bytes that make `prefix` a valid document, found greedily (None: none found).

    Args:
        engine: the byte-level `KeyedEngine` of a `JsonSchema` (masks over 256 bytes + EOS).
        prefix: the document so far.
        limit: the most bytes to write before giving up.
    """
    text = bytes(prefix)
    out = bytearray()
    for _ in range(limit + 1):
        allowed = engine.mask(text)
        if allowed[_EOS]:
            return bytes(out)
        state = engine.key_state(text)
        if state is None or len(out) >= limit:
            return None
        pick = _choose(engine, text, state, allowed)
        if pick is None:
            return None
        out.append(pick)
        text += bytes([pick])
    return None
