"""What constraints raise and warn: one module, so every family raises the same classes.

`InvalidGrammar` is raised when a regex, Lark grammar or JSON schema cannot
be compiled (by llguidance, Python's `regex` module or the JSON reader);
`FinishWarning` says a JSON prefix the mask keeps alive could not be finished,
so a token budget cannot tell whether it ends in time.
"""

from __future__ import annotations

__all__ = ["FinishWarning", "InvalidGrammar"]


class InvalidGrammar(ValueError):
    """A regex, Lark grammar or JSON schema that cannot be compiled; the message names where."""


class FinishWarning(UserWarning):
    """A document prefix the mask keeps alive that `JsonSchema.finish` cannot complete: a
    budget cannot tell whether it ends in time (said once per path and keyword)."""
