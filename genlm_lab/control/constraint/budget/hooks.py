"""`BudgetHooks`: what a constraint family tells a token budget about its language.

A budget (`fit_check_for`) asks each byte-level constraint, through these
hooks on the constraint's own class, what it knows; it never looks a family
up by name. Each family answers in one place:

- `exact_dfa`: its language as a byte automaton, where exactly known (an
  explicit automaton, a plain regex). The count is then exact.
- `superset_regex`: a regex holding every text of the constraint (a regex
  itself, a regular grammar's regular superset). Its count is a lower bound.
- `closing`: how its texts close (`Closing`: a JSON document ends in the
  byte that closes its first value), which decides the last token exactly.
- `finish(prefix)` and `unfinishable` (optional, not defined here): a short
  completion of a prefix, whose token count guides SMC (`FinishGuide`), and
  where no completion was found. `finish_reuses` says when a token leaves the
  finish as it was (the guide then skips walking one); `finish_still_completes`
  checks that (`WithinBudget`).

The defaults know nothing, which is always sound: a budget then falls back on
its search over the constraint's masks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from genlm_lab.control.constraint.regular.dfa import ByteDfa

__all__ = ["QUOTE_BREAKERS", "BudgetHooks", "Closing", "OwnBudget"]

#: The bytes a double-quoted string cannot hold raw (a quote, a backslash, control bytes),
#: in JSON and in the C-like strings most grammars write: a token without them is plain
#: string content.
QUOTE_BREAKERS = frozenset(b'"\\') | frozenset(range(0x20))


@dataclass(frozen=True)
class Closing:
    """How every complete text of a constraint ends, where its family knows.

    Attributes:
        necessary: a cheap test every complete text passes (a JSON document parses),
            asked before the constraint's own completion check.
        closer: `text -> (byte, n) | None`: every complete text that extends `text`
            ends in `byte` (maybe then whitespace) and adds at least `n` bytes of
            `closing_bytes`; None where nothing is known.
        closing_bytes: the bytes that close something open (`"]}` in JSON).
    """

    necessary: Callable[[bytes], bool]
    closer: Callable[[bytes], tuple[int, int] | None]
    closing_bytes: bytes


class OwnBudget:
    """A potential that holds a constraint (`inner`, over tokens) to a token budget of its
    own (`WithinBudget`): a budget checks and guides it as it would `inner` itself."""

    inner: Any


class BudgetHooks:
    """What a constraint's family knows about how its texts end (see the module docstring)."""

    def exact_dfa(self) -> ByteDfa | None:
        """The constraint's language as a byte automaton, where exactly known; else None."""
        return None

    def superset_regex(self) -> str | None:
        """A regex (Python's syntax) matching every text of the constraint, or None."""
        return None

    def closing(self) -> Closing | None:
        """How the constraint's texts close, or None where nothing is known."""
        return None

    def finish_reuses(self, finish: bytes | None, token: bytes) -> bool:
        """Whether appending `token` to a prefix whose finish is `finish` (None: no finish
        found) keeps that finish, so the guide need not walk a new one.

        By default: a token of plain string content (no `QUOTE_BREAKERS` byte) inside a
        double-quoted string, where the finish begins by closing the quote, or where there
        is no finish at all.
        """
        inside = finish is None or finish[:1] == b'"'
        return inside and QUOTE_BREAKERS.isdisjoint(token)

    def finish_still_completes(self, text: bytes, finish: bytes) -> bool:
        """Whether `finish`, found for a prefix of `text` and closing the string that `text`
        only wrote more of, still completes `text` (checked, not guessed); False: unknown."""
        return False
