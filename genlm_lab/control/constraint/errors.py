"""What constraints raise and warn: one module, so every family raises the same classes.

`InvalidGrammar` is raised when a regex, Lark grammar or JSON schema cannot
be compiled (by llguidance, Python's `regex` module or the JSON reader);
`FinishWarning` says a JSON prefix the mask keeps alive could not be finished,
so a token budget cannot tell whether it ends in time. Both are defined with
the rest of `control`'s errors, in `genlm_lab.control.errors`.
"""

from __future__ import annotations

from genlm_lab.control.errors import FinishWarning, InvalidGrammar, InvalidSchema

__all__ = ["FinishWarning", "InvalidGrammar", "InvalidSchema"]
