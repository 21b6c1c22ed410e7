"""Whether an unclosed 3.11 f-string can still be closed into one Python accepts.

Python 3.11 reads an f-string as one string token and parses its body
afterwards: literal text (where `{{` and `}}` stand for braces and a lone `}`
is an error) and replacement fields `{expr=!c:spec}`. The end of `expr` is
found by scanning characters, not tokens: brackets and quoted strings are
tracked, a backslash or `#` anywhere is an error, and at bracket depth 0 the
first `!`, `:`, `=` or `}` ends it (`!=`, `==`, `<=`, `>=` excepted). The
expression is then parsed as `(expr)`; a format spec is literal text with
fields of its own, one level deep at most.

This module follows that scan over a body cut short and says whether some
continuation closes it validly. Closed fields are checked by parsing
`(expr)`; the field the body ends inside is asked of `expr_live`, the
caller's prefix check for Python source, as the text `(` + expr: a field's
expression must be completable as a parenthesised expression, and, since a
`:` at depth 0 would end it, must hold no `lambda` at depth 0.
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Callable
from functools import lru_cache

from genlm_lab.control.constraint.python_syntax.escapes import completable, decodes

__all__ = ["fstring_live"]

_OPEN, _DEAD = "open", "dead"
_PAIRS = {"(": ")", "[": "]", "{": "}"}
_TWO_CHAR = frozenset({"!=", "==", "<=", ">="})


@lru_cache(maxsize=1 << 14)
def _expr_ok(expr: str) -> bool:
    """Whether a field's expression parses as CPython parses it: `(expr)`."""
    if not expr.strip(" \t\n\f"):
        return False  # "f-string: empty expression not allowed"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            ast.parse(f"({expr})", mode="eval")
        except (SyntaxError, ValueError):
            return False
    return True


def _ident(c: str) -> bool:
    return c.isalnum() or c == "_" or c >= "\x80"


def _literal(s: str, i: int, raw: bool, level: int) -> tuple[str, int]:
    """Scan literal text from `i`: ("expr", j) at a field's `{`, ("close", j) at a spec's
    closing `}`, or (_OPEN | _DEAD, j) when the body ends or breaks first."""
    n = len(s)
    j = i
    while j < n:
        c = s[j]
        if c == "\\" and not raw:
            if j + 1 == n:
                break
            c = s[j + 1]
            if c == "N" and j + 2 < n and s[j + 2] == "{":
                close = s.find("}", j + 3)
                if close < 0:
                    break
                j = close + 1
                continue
            j += 2
            if c != "{":
                continue
            j -= 1  # an escaped "{" still opens a field (after a warning)
        if c in "{}":
            if level == 0 and j + 1 < n and s[j + 1] == c:
                j += 2  # a doubled brace
                continue
            if level == 0 and j + 1 == n:
                break  # may yet be doubled
            chunk = s[i:j]
            if not raw and not decodes(chunk, False):
                return _DEAD, j
            if c == "}":
                return ("close", j) if level > 0 else (_DEAD, j)
            return "expr", j
        j += 1
    chunk = s[i:]
    return (_OPEN if raw or completable(chunk, False) else _DEAD), n


def _field(
    s: str, j: int, raw: bool, level: int, expr_live: Callable[[str], bool]
) -> tuple[str, int]:
    """Scan the field whose `{` is at `j`: ("ok", after its `}`), or (_OPEN | _DEAD, _)."""
    if level >= 2:
        return _DEAD, j  # "f-string: expressions nested too deeply"
    n = len(s)
    start = k = j + 1
    stack: list[str] = []
    quote = ""
    pending = False  # the body ends on a "!" or "=" that may yet be "!=" or "=="
    while k < n:
        c = s[k]
        if c == "\\":
            return _DEAD, k
        if quote:
            if s.startswith(quote, k):
                k += len(quote)
                quote = ""
            else:
                k += 1
            continue
        if c in "'\"":
            quote = c * 3 if s.startswith(c * 3, k) else c
            k += len(quote)
            continue
        if c in _PAIRS:
            stack.append(_PAIRS[c])
        elif c == "#":
            return _DEAD, k
        elif not stack and c in "!:}=<>":
            if s[k : k + 2] in _TWO_CHAR:
                k += 2
                continue
            if c in "<>" or (k + 1 == n and c in "!="):
                pending = c in "!="
                k += 1
                continue
            break
        elif c in ")]}":
            if not stack or stack.pop() != c:
                return _DEAD, k
        elif not stack and s.startswith("lambda", k) and (k == start or not _ident(s[k - 1])):
            if k + 6 < n and not _ident(s[k + 6]):
                return _DEAD, k  # its ":" would end the field
        k += 1
    expr = s[start:k]
    if k == n:
        return (_OPEN if _open_expr_live(expr, pending, expr_live) else _DEAD), n
    if not _expr_ok(expr):
        return _DEAD, k
    if s[k] == "=":
        k += 1
        while k < n and s[k] in " \t\n\r\f\v":
            k += 1
    if k < n and s[k] == "!":
        if k + 1 >= n:
            return _OPEN, n
        if s[k + 1] not in "sra":
            return _DEAD, k
        k += 2
    if k < n and s[k] == ":":
        status, k = _parse(s, k + 1, raw, level + 1, expr_live)
        if status != "ok":
            return status, k
    if k >= n:
        return _OPEN, n
    return ("ok", k + 1) if s[k] == "}" else (_DEAD, k)


def _open_expr_live(expr: str, pending: bool, expr_live: Callable[[str], bool]) -> bool:
    """Whether a field's expression cut short by the body's end can still be closed."""
    if pending:
        head = expr[:-1]  # "!" may be "!=" or a conversion, "=" may be "==" or `=` debugging
        return _expr_ok(head) or expr_live("(" + expr + "=")
    return expr_live("(" + expr)


def _parse(
    s: str, i: int, raw: bool, level: int, expr_live: Callable[[str], bool]
) -> tuple[str, int]:
    """Scan literal text and fields from `i` up to the body's end (level 0) or a spec's `}`."""
    while True:
        status, j = _literal(s, i, raw, level)
        if status == "close":
            return "ok", j
        if status != "expr":
            return status, j
        status, i = _field(s, j, raw, level, expr_live)
        if status != "ok":
            return status, i


def fstring_live(body: str, raw: bool, expr_live: Callable[[str], bool]) -> bool:
    """Whether an f-string whose body so far is `body` can still be closed validly.

    Args:
        body: the characters after the opening quote(s), the closing quote not yet typed.
        raw: an `rf`/`fr` string (no escapes in its literal text).
        expr_live: prefix check for Python source, asked about `(` + a field's expression.
    """
    status, _ = _parse(body, 0, raw, 0, expr_live)
    return status == _OPEN
