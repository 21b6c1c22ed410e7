"""A short string that a JSON schema's `pattern` finds, so the finish can close such a string.

The greedy finish writes `a`, `1`, ... into a string value until the mask
lets it close. Under a pattern that `re.search` may find anywhere
(`https://orcid\\.org/[0-9]{4}-...`, no `^`), the mask takes `aaa...` forever
and the quote never comes. `pattern_example` reads the pattern with Python's
own regex parser and writes one short match: each repeat its minimum times,
the shortest branch, the first character of a set. It is a candidate only:
the finish keeps it where the mask walks it and then allows the quote.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from genlm_lab.control.constraint.regular.parse_tree import parse

__all__ = ["pattern_example"]

_CATEGORY = {
    "CATEGORY_DIGIT": "0",
    "CATEGORY_WORD": "a",
    "CATEGORY_SPACE": " ",
    "CATEGORY_NOT_DIGIT": "a",
    "CATEGORY_NOT_WORD": "-",
    "CATEGORY_NOT_SPACE": "a",
}
_ANCHORS = {"AT_BEGINNING", "AT_BEGINNING_STRING", "AT_END", "AT_END_STRING"}


@lru_cache(maxsize=256)
def pattern_example(pattern: str) -> tuple[str, bool] | None:
    """`(text, anchored)`: a short string the pattern matches, and whether the pattern
    starts with `^` (then the match must start the string); None where the pattern
    uses what this does not write (look-arounds, back-references, negated sets)."""
    parsed = parse(pattern, strict=False)
    if parsed is None:
        return None
    items = list(parsed)
    anchored = bool(items) and str(items[0][0]) == "AT" and str(items[0][1]) in _ANCHORS
    text = _write(items)
    return None if text is None else (text, anchored)


def _write(items: Any) -> str | None:
    out = []
    for op, arg in items:
        name = str(op)
        if name == "LITERAL":
            out.append(chr(arg))
        elif name == "ANY":
            out.append("a")
        elif name == "IN":
            one = _one_of(arg)
            if one is None:
                return None
            out.append(one)
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            low, _, body = arg
            part = _write(body)
            if part is None:
                return None
            out.append(part * low)
        elif name in ("SUBPATTERN", "ATOMIC_GROUP"):
            part = _write(arg[-1] if name == "SUBPATTERN" else arg)
            if part is None:
                return None
            out.append(part)
        elif name == "BRANCH":
            options = [t for t in (_write(b) for b in arg[1]) if t is not None]
            if not options:
                return None
            out.append(min(options, key=len))
        elif name == "AT" and str(arg) in _ANCHORS:
            continue
        elif name == "CATEGORY" and str(arg) in _CATEGORY:
            out.append(_CATEGORY[str(arg)])
        else:
            return None
    return "".join(out)


def _one_of(members: Any) -> str | None:
    """A character of a set `[...]` (None for a negated one)."""
    for op, arg in members:
        name = str(op)
        if name == "NEGATE":
            return None
        if name == "LITERAL":
            return chr(arg)
        if name == "RANGE":
            return chr(arg[0])
        if name == "CATEGORY" and str(arg) in _CATEGORY:
            return _CATEGORY[str(arg)]
    return None
