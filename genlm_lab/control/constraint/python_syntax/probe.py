"""Ask CPython's own parser whether a text's tokens are the start of some program.

`compile()` with the flag `codeop` uses, `PyCF_ALLOW_INCOMPLETE_INPUT`, says
"incomplete input" when parsing failed *and* the tokenizer had reached the
end of the source. Fed the text followed by a line continuation and nothing
else (`text + "\\\\\\n"`), the tokenizer reaches that end exactly when the
parser asks for a token after the text's last one: the continuation adds no
token and stops the tokenizer from reading past the last token early (which
is what makes `codeop` call `1 2` incomplete). So:

- if the parser never asks past the text's last token, its verdict (failure)
  does not depend on what follows: no continuation parses, the text is dead;
- if it asks, some path of the grammar matched every token: the tokens are a
  viable start (Python's PEG grammar reads as a context-free one here).

Two things the caller must settle first (`decide`): the text must end at a
token boundary (a parser reading `x = 1` would not know `1` may become
`1j`), and a string literal that closes the text is not yet checked by the
parser (the run of strings it may concatenate with is still open), so its
validity is asked of `string_ok`.
"""

from __future__ import annotations

import ast
import warnings
from functools import lru_cache

__all__ = ["asks_past_end", "parses", "string_ok"]

_ALLOW_INCOMPLETE_INPUT = 0x4000  # PyCF_ALLOW_INCOMPLETE_INPUT, as `codeop` spells it
_FLAGS = ast.PyCF_ONLY_AST | _ALLOW_INCOMPLETE_INPUT
_PROBES = 1 << 12  # probe verdicts kept (keys are whole texts)


def _incomplete(error: SyntaxError) -> bool:
    """Whether a SyntaxError is CPython's "incomplete input" (a subclass of its own from 3.13)."""
    return error.msg == "incomplete input" or type(error).__name__ == "_IncompleteInputError"


@lru_cache(maxsize=_PROBES)
def asks_past_end(source: str) -> bool:
    """Whether CPython's parser asks for a token after the last one of `source`.

    `source` must end at a token boundary (not inside a token, string or comment).
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            compile(source + "\\\n", "<prefix>", "exec", _FLAGS, dont_inherit=True)
        except SyntaxError as error:
            return _incomplete(error)
        except (ValueError, MemoryError, RecursionError):  # a null byte; nesting too deep
            return False
    return True


@lru_cache(maxsize=_PROBES)
def parses(source: str) -> bool:
    """Whether `ast.parse` accepts `source` (warnings, such as invalid escapes, ignored)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            ast.parse(source)
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            return False
    return True


@lru_cache(maxsize=_PROBES)
def string_ok(literal: str) -> bool:
    """Whether one closed string literal (prefix and quotes included) is valid on its own."""
    return parses("(" + literal + "\n)")
