"""How a JSON document closes: what the JSON family tells a token budget (`BudgetHooks`).

A JSON text that opens with `{`, `[` or `"` ends in the byte that closes its
first value, after at least one closing byte per string, array and object
still open (`json_closer`), and a complete document parses (`parses_as_json`).
With these a budget decides exactly whether one more token can end a prefix,
however many tokens the schema allows (`SearchDistance`). `JsonSchema.closing`
hands them over.
"""

from __future__ import annotations

import json
import re

from genlm_lab.control.constraint.budget import Closing

__all__ = ["CLOSING", "JSON_CLOSING", "json_closer", "parses_as_json"]

#: The bytes that close a JSON string, array or object (`json_closer` counts them).
CLOSING = b'"]}'

_CLOSERS = {ord("{"): ord("}"), ord("["): ord("]"), ord('"'): ord('"')}
_STRINGS = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)


def parses_as_json(text: bytes) -> bool:
    """Whether `text` is UTF-8 JSON: what a `JsonSchema`'s completion check parses first."""
    try:
        json.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return False
    return True


def json_closer(text: bytes) -> tuple[int, int] | None:
    """`(byte, n)`: every JSON text that extends `text` ends in `byte` (an object's `}`, an
    array's `]`, a string's quote) and adds at least `n` closing bytes (one per string,
    array and object left open); None for a number or literal, or nothing yet."""
    first = text.lstrip(b" \t\r\n")[:1]
    if not first or first[0] not in _CLOSERS:
        return None
    bare = _STRINGS.sub(b"", text)  # what is left of a string is the one left open
    open_string = b'"' in bare
    bare = bare[: bare.index(b'"')] if open_string else bare
    depth = bare.count(b"{") + bare.count(b"[") - bare.count(b"}") - bare.count(b"]")
    return _CLOSERS[first[0]], max(depth, 0) + open_string


#: What `JsonSchema.closing` answers.
JSON_CLOSING = Closing(necessary=parses_as_json, closer=json_closer, closing_bytes=CLOSING)
