"""The Harmony turn as one regular expression: the reference the token-by-token reader must match.

A token sequence is drawn as a string: each special as a private-use character,
EOS as another, every other token as its bytes read as Latin-1. `TURN` is every
complete turn, written as a whole: the messages of each ordered choice of
distinct channels, each with its header, content and the closer Harmony gives
it, the turn ending in a final message (closed by `<|return|>` or EOS) or after a
`<|call|>`. A sequence is a prefix of some turn iff its string partially
matches `TURN`; a turn may end after it iff its string with EOS matches.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import regex

from genlm_lab.control import EndOfSequence

CHAR = {
    "start": "\ue000",
    "channel": "\ue001",
    "message": "\ue002",
    "end": "\ue003",
    "call": "\ue004",
    "return": "\ue005",
    "constrain": "\ue006",
}
EOS_CHAR = "\ue00f"


def draw(tokens: Sequence[Any], kind_of: Callable[[Any], str | None]) -> str:
    """The string a token sequence stands for (see the module's docstring)."""
    out = []
    for token in tokens:
        if isinstance(token, EndOfSequence):
            out.append(EOS_CHAR)
        else:
            kind = kind_of(token)
            out.append(CHAR[kind] if kind else bytes(token).decode("latin-1"))
    return "".join(out)


def _turn() -> Any:
    s, c, m, e, k, r, x = (CHAR[n] for n in CHAR)
    name = "[A-Za-z0-9_.\\-]+"
    to = f" to={name}"
    start = f"(?:{s}assistant)?"
    fmt = f"(?: json| ?{x}[A-Za-z0-9_\\-]+)?"
    content = f"[^{s}{c}{m}{e}{k}{r}{EOS_CHAR}]*"

    def plain(ch: str) -> str:
        return f"{start}{c}{ch}{fmt}{m}{content}"

    def call(ch: str) -> str:
        return f"{start}(?:{to}{c}{ch}(?:{to})?|{c}{ch}{to}){fmt}{m}{content}{k}"

    def middle(ch: str) -> str:
        return f"(?:{call(ch)}|{plain(ch)}{e})" if ch != "final" else call(ch)

    def last(ch: str) -> str:
        ends = [f"{call(ch)}{EOS_CHAR}"]
        if ch == "final":
            ends.append(f"{plain(ch)}(?:{EOS_CHAR}|{r}{EOS_CHAR})")
        return "(?:" + "|".join(ends) + ")"

    turns = [
        "".join(middle(ch) for ch in order[:-1]) + last(order[-1])
        for n in (1, 2, 3)
        for order in itertools.permutations(("analysis", "commentary", "final"), n)
    ]
    return regex.compile("(?:" + "|".join(turns) + ")")


TURN = _turn()


def live(text: str) -> bool:
    """Whether some complete turn starts with `text`."""
    return TURN.fullmatch(text, partial=True) is not None


def complete(text: str) -> bool:
    """Whether `text` followed by EOS is a complete turn."""
    return TURN.fullmatch(text + EOS_CHAR) is not None
