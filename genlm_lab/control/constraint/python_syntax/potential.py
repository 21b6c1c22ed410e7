"""`PythonParser`: Python source as a constraint, genlm-control's name and verdicts.

`prefix(x)` is 0 iff some continuation of the bytes `x` is a program
`ast.parse` accepts (Python 3.11); `complete(x)` iff `ast.parse` accepts `x`.
genlm-control (main) answers with Lark's Python grammar over a lexer of its
own, an approximation of the language; here the verdicts come from CPython's
own tokenizer and parser (`decide`, `probe`), so a prefix of valid code is
never cut and a dead one is dead for the interpreter too. Tokens are bytes:
a byte-level vocabulary by default (coerce it onto a model's tokens), or a
model's own byte-string tokens as genlm-control takes them (`from_llm`).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from typing import Any

from genlm_lab.control.constraint.python_syntax.decide import Syntax
from genlm_lab.control.core.constant import EndOfSequence
from genlm_lab.control.potential.base import Potential

__all__ = ["PythonParser"]


class PythonParser(Potential):
    """Python 3.11 syntax as a constraint over bytes: live iff some continuation parses.

    Args:
        vocabulary: the tokens; by default the 256 bytes (as ints). A model's
            byte-string tokens work too (genlm-control's form).
        eos: the end-of-sequence marker, by default `EOS`.

    Raises:
        RuntimeError: on an interpreter other than CPython 3.11, whose grammar
            (and f-string rules) this potential follows.
        ValueError: for tokens that are not bytes (or byte values).
    """

    is_boolean = True

    def __init__(
        self, vocabulary: Sequence[Any] | None = None, eos: EndOfSequence | None = None
    ) -> None:
        if sys.version_info[:2] != (3, 11) or sys.implementation.name != "cpython":
            raise RuntimeError(
                "PythonParser follows CPython 3.11's grammar and f-string rules; this is "
                f"{sys.implementation.name} {sys.version.split()[0]}"
            )
        vocabulary = list(range(256)) if vocabulary is None else list(vocabulary)
        wrong = next((t for t in vocabulary if not _is_bytes_token(t)), None)
        if wrong is not None:
            raise ValueError(f"PythonParser's tokens are bytes or byte values, got {wrong!r:.40}")
        super().__init__(vocabulary, eos=eos)
        self._syntax = Syntax()

    @classmethod
    def from_llm(cls, llm: Any) -> PythonParser:
        """A `PythonParser` over a `PromptedLLM`'s byte-string tokens and EOS."""
        return cls(list(llm.vocab), eos=llm.eos)

    def _bytes(self, context: Sequence[Any]) -> bytes:
        tokens = [t for t in context if not isinstance(t, EndOfSequence)]
        if self._bytewise:
            return bytes(self.encode(tokens))
        self.encode(tokens)  # names a token outside the vocabulary
        return b"".join(bytes([t]) if isinstance(t, int) else bytes(t) for t in tokens)

    async def prefix(self, context: Sequence[Any]) -> float:
        """0 if some continuation of the context's bytes parses as Python, else -inf."""
        return 0.0 if self._syntax.live_bytes(self._bytes(context)) else -math.inf

    async def complete(self, context: Sequence[Any]) -> float:
        """0 if the context's bytes are UTF-8 that `ast.parse` accepts, else -inf."""
        return 0.0 if self._syntax.complete_bytes(self._bytes(context)) else -math.inf

    def clear_cache(self) -> None:
        """Drop the kept scan states (the parser's verdicts are kept per process)."""
        self._syntax = Syntax()

    def spawn(self) -> PythonParser:
        """A fresh instance with the same vocabulary (for worker processes)."""
        return PythonParser(self.vocab, eos=self.eos)

    def __repr__(self) -> str:
        return f"PythonParser(vocab_size={len(self.vocab)})"


def _is_bytes_token(token: Any) -> bool:
    if isinstance(token, int):
        return 0 <= token < 256
    return isinstance(token, (bytes, bytearray))
