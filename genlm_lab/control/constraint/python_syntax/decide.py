"""Live or dead, complete or not: the Python-syntax verdicts on text and on bytes.

A text is live when some continuation makes it a program `ast.parse` accepts.
`Syntax.live` settles how the text ends (`lexer`), turns that end into the
few texts ending at a token boundary that stand for every way it can go on
(`sources`), and asks CPython's parser about each (`probe`): live when one
of them is. Strings are the parser's blind spot at the end of a text, so an
unclosed string's body is checked here (`escapes`, `fstring`) and closed
strings that may still be concatenated are checked one by one.

Bytes are read as UTF-8. A text ending inside a multi-byte character is live
when one of three characters that the missing bytes can spell keeps it live:
one that may start an identifier, one that may only continue one, and one
that may do neither. Python tells characters apart by no other property
outside strings and comments, and inside them all characters are alike.
"""

from __future__ import annotations

import keyword
import re
from functools import lru_cache

from genlm_lab.control.constraint.python_syntax.escapes import completable
from genlm_lab.control.constraint.python_syntax.fstring import fstring_live
from genlm_lab.control.constraint.python_syntax.lexer import STRING_PREFIXES, Lexer, Tail
from genlm_lab.control.constraint.python_syntax.probe import asks_past_end, parses, string_ok
from genlm_lab.util.utf8 import char_range, split_utf8

__all__ = ["Syntax"]

_KEYWORDS = tuple(keyword.kwlist + keyword.softkwlist)
_OPERATORS = """( ) [ ] { } : , ; + - * / | & < > = . % ~ ^ @ == != <> <= >= << >> ** // -> := ...
    += -= *= /= %= &= |= ^= @= <<= >>= **= //=""".split()
_LETTERS = re.compile(r"[A-Za-z_]*\Z")
_NUMBER_ENDS = ("", "0", ".", "j", "0j")


def _normal(text: str) -> str:
    """Newlines as the tokenizer reads a string: `\\r\\n` and a lone `\\r` are `\\n`."""
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def _kind(literal_prefix: str) -> str:
    return "bytes" if "b" in literal_prefix.lower() else "text"


def _prefix_of(literal: str) -> str:
    return literal[: len(literal) - len(literal.lstrip("bBrRuUfF"))]


def _word_ends(word: str) -> list[tuple[str, str | None]]:
    """Continuations of a trailing word that reach every token class it can become."""
    if word[0].isdigit() or word[0] == ".":
        ends = [(end, None) for end in _NUMBER_ENDS]
        letters = _LETTERS.search(word).group()
        tails = {letters[i:] for i in range(len(letters))}
    else:
        ends = [("", None), ("_", None)]
        tails = {word}
        ends += [  # the word may grow into a longer prefix: "r" into "rb"
            (p[len(word) :] + "''", _kind(p))
            for p in STRING_PREFIXES
            if p and p.startswith(word.lower())
        ]
    for tail in tails:
        ends.extend((k[len(tail) :], None) for k in _KEYWORDS if k.startswith(tail) and k != tail)
    return ends


class Syntax:
    """Prefix and complete verdicts for Python 3.11 source, as text or as UTF-8 bytes."""

    def __init__(self) -> None:
        self._lexer = Lexer()

    # ------------------------------------------------------------------ text
    def complete(self, text: str) -> bool:
        """Whether `ast.parse` accepts the text (warnings ignored)."""
        return parses(_normal(text))

    def live(self, text: str) -> bool:
        """Whether some continuation of the text is a program `ast.parse` accepts."""
        text = _normal(text)
        if "\0" in text:
            return False  # CPython reads no source with a null character in it
        tail = self._lexer.tail(text)
        run_kinds = {_kind(_prefix_of(s)) for s in tail.run}
        if len(run_kinds) > 1 or not all(string_ok(s) for s in tail.run):
            return False
        for source, kind in self.sources(text, tail):
            if kind is not None and run_kinds and kind not in run_kinds:
                continue  # "cannot mix bytes and nonbytes literals"
            if asks_past_end(source):
                return True
        return False

    def sources(self, text: str, tail: Tail) -> list[tuple[str, str | None]]:
        """Texts ending at a token boundary that stand for every way `text` can go on,
        each with the kind of string it ends with (None: not a string)."""
        kind = tail.kind
        if kind == "line":
            return [(text[: tail.start] + tail.indent, None)]
        if kind == "clean":
            return [(text, None)]
        if kind == "backslash":
            return [(text + "\n", None)]
        if kind == "comment":  # a comment ends at a newline; what follows is as after one
            after = text[: tail.start] + "\n"
            return [(after + (tail.indent if tail.depth == 0 else ""), None)]
        if kind == "word":
            word = text[tail.start :]
            return [(text + end, cls) for end, cls in _word_ends(word)]
        if kind == "op":
            op = text[tail.start :]
            ends = [o[len(op) :] for o in _OPERATORS if o.startswith(op)]
            ends += ["0", "0j"] if op == "." else []
            return [(text + end, None) for end in ends]
        if kind == "string" and self._string_live(text, tail):
            cls = _kind(tail.prefix)
            return [(text[: tail.start] + ("b''" if cls == "bytes" else "''"), cls)]
        return []

    def _string_live(self, text: str, tail: Tail) -> bool:
        """Whether the unclosed string literal ending `text` can still be closed validly."""
        letters = tail.prefix.lower()
        body = text[tail.start + len(tail.prefix) + len(tail.quote) :]
        if "b" in letters and not body.isascii():
            return False  # "bytes can only contain ASCII literal characters"
        if "f" in letters:
            return fstring_live(body, "r" in letters, self.live)
        return "r" in letters or completable(body, "b" in letters)

    # ----------------------------------------------------------------- bytes
    def live_bytes(self, data: bytes) -> bool:
        """`live` of UTF-8 bytes that may end inside a character (False if not UTF-8)."""
        split = split_utf8(data)
        if split is None:
            return False
        text, rest = split
        if not rest:
            return self.live(text)
        return any(self.live(text + c) for c in _stand_ins(rest))

    def complete_bytes(self, data: bytes) -> bool:
        """`complete` of bytes: False unless they are whole UTF-8."""
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return False
        return self.complete(text)


@lru_cache(maxsize=4096)
def _stand_ins(rest: bytes) -> tuple[str, ...]:
    """One character of each kind Python tells apart that UTF-8 bytes `rest` can begin."""
    found: dict[str, str] = {}
    for point in char_range(rest):
        if 0xD800 <= point <= 0xDFFF:
            continue
        c = chr(point)
        kind = "start" if c.isidentifier() else "continue" if ("a" + c).isidentifier() else "other"
        found.setdefault(kind, c)
        if len(found) == 3:
            break
    return tuple(found.values())
