"""Where a Python 3.11 text stops: the token it ends inside, the line it ends on.

The prefix check asks CPython's own parser about the text (`probe`), but only
about a text that ends at a token boundary: a parser fed `x = 1` cannot know
that `1` may yet grow into `1j` or `10`. This scanner walks the text with the
tokenizer's rules for what hides what (strings, comments, line continuations,
brackets, logical lines and their indentation) and reports how the text ends:

- `line`: at the start of a logical line (after a newline outside brackets),
  perhaps with some indentation typed; `indent` is the indentation of the
  last logical line, the innermost block's level.
- `clean`: after whitespace or a token no character can extend.
- `word`: inside a run of identifier characters, a number, or a number with a
  keyword glued to it (`1if`); `op`: an operator that may still grow (`=` to
  `==`); `string`: inside an unclosed string literal; `comment`;
  `backslash`: a line continuation waiting for its newline; `dead`: a
  string broken by a newline or a backslash before something other than a
  newline, which no extension mends.

Besides, `run` holds the closed string literals that end the text with
nothing between them but whitespace: Python concatenates them, so the next
string joins them and must be of the same kind (text or bytes).

Lexical errors in the middle of the text (`0b2`, `$`) are left to CPython's
tokenizer, which the probe runs over the whole text. States are kept per text
(`Lexer`) so that a text one token longer is scanned from its last boundary.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from dataclasses import dataclass

__all__ = ["Lexer", "Tail", "STRING_PREFIXES"]

# Prefix letters a string literal may have in 3.11 (any case): b, r, u, f and the pairs.
STRING_PREFIXES = frozenset({"", "b", "r", "u", "f", "br", "rb", "fr", "rf"})

_OPERATORS = sorted(
    """( ) [ ] { } : , ; + - * / | & < > = . % ~ ^ @ == != <> <= >= << >> ** // -> := ...
    += -= *= /= %= &= |= ^= @= <<= >>= **= //=""".split(),
    key=len,
    reverse=True,
)
_OP_PREFIXES = frozenset(op[:k] for op in _OPERATORS for k in range(1, len(op)))
_SPACE = re.compile(r"[ \t\f]*")
_WORD = re.compile(r"[A-Za-z0-9_\u0080-\U0010ffff]*")
_NUMBER = re.compile(
    r"0[xXoObB][0-9a-fA-F_]*|(?:[0-9][0-9_]*)?(?:\.[0-9_]*)?(?:[eE][+-]?[0-9][0-9_]*)?[jJ]?"
)
# A number (or a number and glued letters) that runs to the end of the text may still grow.
_OPEN_NUMBER = re.compile(r"(?:[0-9]|\.[0-9])(?:[eE][+-]|[0-9A-Za-z_.\u0080-\U0010ffff])*")
_CHECKPOINTS = 4096  # texts whose scan state is kept
_RESUME_WINDOW = 256  # how far back a scan looks for a kept state


@dataclass(frozen=True)
class Tail:
    """How a text ends; see the module docstring for the kinds.

    Attributes:
        kind: "line", "clean", "word", "op", "string", "comment", "backslash" or "dead".
        start: where the trailing piece starts (the line's first character for
            "line", the token's for "word", "op", "string" and "comment").
        depth: open brackets.
        indent: indentation of the last logical line outside brackets.
        run: closed string literals ending the text, adjacent to each other.
        prefix: an open string's prefix letters; quote: its quote (1 or 3 characters).
    """

    kind: str
    start: int
    depth: int
    indent: str
    run: tuple[str, ...] = ()
    prefix: str = ""
    quote: str = ""


@dataclass(frozen=True)
class _State:
    """A scan resumable at `pos`: outside any token, `bol` at a logical line's start."""

    pos: int
    depth: int
    bol: bool
    line: int  # start of the current physical line (for "line" tails)
    indent: str
    run: tuple[str, ...]


_START = _State(0, 0, True, 0, "", ())


class Lexer:
    """Scans texts to their tails, keeping states so a longer text resumes from a shorter one.

    A text's kept state is the one at the start of its trailing piece (token,
    line or comment): a longer text that starts with it is scanned from there.
    """

    def __init__(self) -> None:
        self._states: OrderedDict[str, _State] = OrderedDict()

    def tail(self, text: str) -> Tail:
        """How `text` ends (a text free of carriage returns)."""
        state = _START
        for k in range(len(text), max(-1, len(text) - _RESUME_WINDOW), -1):
            kept = self._states.get(text[:k])
            if kept is not None:
                state = kept
                self._states.move_to_end(text[:k])
                break
        tail, last = _scan(text, state)
        if last is not None and last.pos > state.pos:
            # Kept under the whole text: what precedes `last.pos` was followed by the
            # trailing piece, so no continuation of this text changes it.
            self._states[text] = last
            if len(self._states) > _CHECKPOINTS:
                self._states.popitem(last=False)
        return tail


def _string_end(text: str, pos: int, quote: str) -> int | None:
    """Index after the literal whose body starts at `pos`; -1 if a newline breaks a
    single-quoted one; None if the text ends inside it."""
    n = len(text)
    q = quote[0]
    i = pos
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "\n" and len(quote) == 1:
            return -1
        if c == q and text.startswith(quote, i):
            return i + len(quote)
        i += 1
    return None


def _scan(text: str, s: _State) -> tuple[Tail, _State | None]:
    """The tail of `text` scanned from state `s`, and the last boundary state seen."""
    n = len(text)
    pos, depth, bol, line, indent, run = s.pos, s.depth, s.bol, s.line, s.indent, s.run
    last: _State | None = None
    while True:
        if bol and depth == 0:
            last = _State(pos, depth, True, line, indent, run)
            end = _SPACE.match(text, pos).end()
            if end == n:
                return Tail("line", line, depth, indent, run), last
            if text[end] in "#\n":  # a blank line leaves the indentation as it was
                newline = text.find("\n", end)
                if newline < 0:
                    return Tail("comment", end, depth, indent, run), last
                pos = line = newline + 1
                continue
            indent = text[pos:end].rsplit("\f", 1)[-1]
            bol, pos = False, end
        else:
            pos = _SPACE.match(text, pos).end()
        if pos == n:
            return Tail("clean", pos, depth, indent, run), last
        last = _State(pos, depth, False, line, indent, run)
        c = text[pos]
        if c == "#":
            newline = text.find("\n", pos)
            if newline < 0:
                return Tail("comment", pos, depth, indent, run), last
            pos = newline
            continue
        if c == "\\":
            if pos + 1 == n:
                return Tail("backslash", pos, depth, indent, run), last
            if text[pos + 1] != "\n":
                return Tail("dead", pos, depth, indent, run), last
            pos += 2
            continue
        if c == "\n":
            pos += 1
            if depth == 0:
                bol, line, run = True, pos, ()
            continue
        if c.isalpha() or c == "_" or c >= "\x80":
            end = _WORD.match(text, pos).end()
            word = text[pos:end]
            if end < n and text[end] in "'\"" and word.lower() in STRING_PREFIXES:
                c, prefix, pos = text[end], word, end
            else:
                if end == n:
                    return Tail("word", pos, depth, indent, run), last
                pos, run = end, ()
                continue
        else:
            prefix = ""
        if c in "'\"":
            quote = c * 3 if text.startswith(c * 3, pos) else c
            body = pos + len(quote)
            end = _string_end(text, body, quote)
            start = pos - len(prefix)
            if end is None:
                return Tail("string", start, depth, indent, run, prefix, quote), last
            if end < 0:
                return Tail("dead", start, depth, indent, run), last
            run = (*run, text[start:end])
            pos = end
            continue
        if c.isdigit() or (c == "." and pos + 1 < n and text[pos + 1].isdigit()):
            opened = _OPEN_NUMBER.match(text, pos)
            if opened.end() == n:
                return Tail("word", pos, depth, indent, run), last
            pos, run = max(_NUMBER.match(text, pos).end(), pos + 1), ()
            continue
        op = next((o for o in _OPERATORS if text.startswith(o, pos)), None)
        if text[pos:] in _OP_PREFIXES or (op is not None and pos + len(op) == n):
            return Tail("op", pos, depth, indent, run), last  # may still grow: `=` to `==`
        if op is None:  # a character no token starts with: CPython's tokenizer rejects it
            pos, run = pos + 1, ()
            continue
        depth = depth + 1 if op in "([{" else max(depth - 1, 0) if op in ")]}" else depth
        pos, run = pos + len(op), ()
