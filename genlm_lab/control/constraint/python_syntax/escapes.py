"""Escape sequences in a string literal's body: whether a body decodes, or still can.

A non-raw literal is decoded as CPython 3.11's parser decodes it: in a text
literal every non-ASCII character is first spelled `\\UXXXXXXXX` and a
backslash before one (or at the end) stands for itself, then the
`unicode_escape` codec runs; a bytes literal goes through `escape_decode`.
What fails there (a short `\\x4`, an unknown `\\N{...}` name, `\\U` above
0x10FFFF) fails the literal; unknown escapes such as `\\d` only warn.

An unclosed body may end inside an escape. `completable` splits such a tail
off, decodes the rest, and asks whether the tail can still become a valid
escape: hex digits so far (and for `\\U`, a value that can stay at or below
0x10FFFF), or a `\\N{` name that is the start of some character's name. Names
are read from `unicodedata` (every code point's name, algorithmic ones
included); a name alias (`\\N{BOM}`) counts only once it is typed whole.
"""

from __future__ import annotations

import bisect
import codecs
import sys
import unicodedata
import warnings
from functools import lru_cache

__all__ = ["completable", "decodes", "name_prefix_exists"]

_HEX = frozenset("0123456789abcdefABCDEF")
_WIDTH = {"x": 2, "u": 4, "U": 8}


def _spelled(body: str) -> str:
    """The ASCII text CPython hands to `unicode_escape` for a text literal's body."""
    out: list[str] = []
    i, n = 0, len(body)
    while i < n:
        c = body[i]
        if c == "\\":
            out.append("\\")
            i += 1
            if i >= n or body[i] >= "\x80":
                out.append("u005c")  # the backslash stands for itself
                if i >= n:
                    break
            c = body[i]
        out.append(f"\\U{ord(c):08x}" if c >= "\x80" else c)
        i += 1
    return "".join(out)


@lru_cache(maxsize=1 << 14)
def decodes(body: str, is_bytes: bool) -> bool:
    """Whether a whole non-raw literal body decodes (bytes: ASCII only, as CPython demands)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            if is_bytes:
                codecs.escape_decode(body.encode("ascii"))
            else:
                _spelled(body).encode("ascii").decode("unicode_escape")
        except (UnicodeError, ValueError):
            return False
    return True


@lru_cache(maxsize=1)
def _names() -> list[str]:
    """Every code point's name, sorted (built once: about a second)."""
    found = (unicodedata.name(chr(i), "") for i in range(sys.maxunicode + 1))
    return sorted(name for name in found if name)


def name_prefix_exists(partial: str) -> bool:
    """Whether `\\N{` + `partial` can still be closed into a known name (case ignored)."""
    key = partial.upper()
    names = _names()
    i = bisect.bisect_left(names, key)
    if i < len(names) and names[i].startswith(key):
        return True
    try:
        unicodedata.lookup(key)  # a whole alias
    except KeyError:
        return False
    return True


def _open_escape(body: str, is_bytes: bool) -> int:
    """Where an escape left unfinished at the end of `body` starts (len(body) if none)."""
    i, n = 0, len(body)
    while i < n:
        if body[i] != "\\":
            i += 1
            continue
        if i + 1 == n:
            return i
        kind = body[i + 1]
        width = _WIDTH.get(kind) if (kind == "x" or not is_bytes) else None
        if width is not None:
            digits = body[i + 2 : i + 2 + width]
            if len(digits) < width and i + 2 + len(digits) == n and set(digits) <= _HEX:
                return i
            i += 2
        elif kind == "N" and not is_bytes:
            if i + 2 == n:
                return i
            close = body.find("}", i + 3) if body[i + 2] == "{" else i + 1
            if close < 0:
                return i
            i = close + 1
        else:
            i += 2
    return n


def completable(body: str, is_bytes: bool) -> bool:
    """Whether an unclosed non-raw body can still be closed into a literal that decodes."""
    cut = _open_escape(body, is_bytes)
    if not decodes(body[:cut], is_bytes):
        return False
    rest = body[cut:]
    if len(rest) <= 2:  # "", "\\", "\\x", "\\N", "\\u", "\\U"
        return True
    kind = rest[1]
    if kind == "N":
        return name_prefix_exists(rest[3:])
    if kind == "U":
        return int(rest[2:].ljust(8, "0"), 16) <= sys.maxunicode
    return True
