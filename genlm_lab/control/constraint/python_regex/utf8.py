"""Bytes read as UTF-8, and the characters a pattern can match: what the prefix check tries.

A context may end inside a multi-byte character; `split_utf8` separates the
complete characters from that tail, and `representatives` (with
`spelled_chars`, the non-ASCII characters a pattern names) picks the
characters to try for it. `ascii_only` says when no multi-byte character
can ever match, so none need trying.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

import regex

from genlm_lab.control.constraint.regular.parse_tree import nodes, parse
from genlm_lab.util.utf8 import char_range, split_utf8

__all__ = [
    "ascii_only",
    "char_range",
    "representatives",
    "spelled_chars",
    "split_step",
    "split_utf8",
]


@lru_cache(maxsize=1 << 16)
def split_step(data: bytes) -> tuple[str, bytes] | None:
    """`split_utf8` of an unfinished character's bytes and one more byte (cached: at most 4 bytes).

    What each byte mask asks 128-256 times; there are only so many such strings.
    """
    return split_utf8(data)


@lru_cache(maxsize=4096)
def representatives(tail: bytes) -> tuple[str, ...]:
    """Characters that stand for all those starting with `tail` (see the module docstring)."""
    chars = char_range(tail)
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


_ESCAPES = re.compile(r"\\(?:u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|x\{([0-9a-fA-F]+)\}|N\{([^}]+)\})")


def spelled_chars(pattern: str) -> list[str]:
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


def ascii_only(pattern: str, flags: int) -> bool:
    """Whether the pattern can only ever match ASCII text (then multi-byte characters need no test).

    Read with Python's own `re` parser: True only if it parses and has no
    non-ASCII literal, no `.`, no negated set, no `\\w`/`\\d`/`\\s` class and no
    case folding (`(?i)` maps `k` to the Kelvin sign). Anything it cannot
    parse (the `regex` module's own syntax) counts as False.
    """
    if flags & (regex.IGNORECASE | regex.FULLCASE) or "[:" in pattern:
        return False  # POSIX classes: `re` reads `[[:alpha:]]` as a set of ASCII characters
    parsed = parse(pattern, strict=False)  # regex-only syntax fails there: "don't know"
    if parsed is None or parsed.state.flags & re.IGNORECASE:
        return False
    for name, arg in nodes(parsed):
        if name in ("ANY", "NOT_LITERAL", "NEGATE", "CATEGORY"):
            return False
        if (name == "LITERAL" and arg > 127) or (name == "RANGE" and arg[1] > 127):
            return False
    return True
