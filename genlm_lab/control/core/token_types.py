"""Token types: what a potential's tokens are (`Atomic(bytes)`, `Sequence(Atomic(int))`, ...).

A potential's `token_type` says what one token is, so that code combining
potentials can check that their vocabularies fit (a byte-level regex reads
ints, an LLM reads byte strings) and that a context is a sequence of them.
Bytes subclasses (`Token`) count as bytes. The names follow
genlm-control's `genlm.control.typing`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["Atomic", "Sequence", "TokenType", "infer_type", "infer_vocabulary_type"]


class TokenType:
    """What a value is; `check` tests one value, `convert` coerces one."""

    def check(self, value: Any) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError

    def convert(self, value: Any) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def is_iterable_of(self, element_type: TokenType) -> bool:
        """Whether iterating a value of this type yields values of `element_type`."""
        return False


def _base(kind: type) -> type:
    """Bytes subclasses (`Token`) are bytes; other classes stand for themselves."""
    return bytes if issubclass(kind, bytes) else kind


class Atomic(TokenType):
    """One value of a Python type: `Atomic(bytes)`, `Atomic(int)`, `Atomic(str)`."""

    def __init__(self, kind: type) -> None:
        if not isinstance(kind, type):
            raise ValueError(f"Atomic takes a Python type, got {kind!r}")
        self.type = _base(kind)

    def check(self, value: Any) -> bool:
        if self.type is int and isinstance(value, bool):
            return False
        return isinstance(value, self.type)

    def convert(self, value: Any) -> Any:
        return value if self.check(value) else self.type(value)

    def is_iterable_of(self, element_type: TokenType) -> bool:
        if self.type is bytes:
            return element_type == Atomic(int)  # iterating bytes yields ints
        if self.type is str:
            return element_type == Atomic(str)  # and a str yields one-character strs
        return False

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Atomic) and other.type is self.type

    def __hash__(self) -> int:
        return hash(("Atomic", self.type))

    def __repr__(self) -> str:
        return f"Atomic({self.type.__name__})"


class Sequence(TokenType):
    """A list or tuple of values of one type: `Sequence(Atomic(int))`."""

    def __init__(self, element_type: TokenType) -> None:
        if not isinstance(element_type, TokenType):
            raise ValueError(f"Sequence takes a TokenType, got {element_type!r}")
        self.element_type = element_type

    def check(self, value: Any) -> bool:
        return isinstance(value, (list, tuple)) and all(self.element_type.check(v) for v in value)

    def convert(self, value: Iterable[Any]) -> tuple:
        return tuple(self.element_type.convert(v) for v in value)

    def is_iterable_of(self, element_type: TokenType) -> bool:
        return element_type == self.element_type

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and other.element_type == self.element_type

    def __hash__(self) -> int:
        return hash(("Sequence", self.element_type))

    def __repr__(self) -> str:
        return f"Sequence({self.element_type!r})"


def infer_type(value: Any) -> TokenType:
    """The type of one value: lists and tuples are `Sequence`s of one element type.

    Raises:
        ValueError: for an empty sequence or one whose elements differ in type.
    """
    if isinstance(value, (list, tuple)):
        if not value:
            raise ValueError("cannot infer the type of an empty sequence")
        first = infer_type(value[0])
        for v in value[1:]:
            if infer_type(v) != first:
                raise ValueError(
                    f"the sequence mixes types: {first!r} and {infer_type(v)!r} ({v!r:.40})"
                )
        return Sequence(first)
    return Atomic(type(value))


def infer_vocabulary_type(vocabulary: Iterable[Any]) -> TokenType:
    """The type every token of a vocabulary has.

    Raises:
        ValueError: for an empty vocabulary or tokens of different types.
    """
    tokens = list(vocabulary)
    if not tokens:
        raise ValueError("cannot infer the token type of an empty vocabulary")
    first = infer_type(tokens[0])
    for token in tokens[1:]:
        if not first.check(token):
            raise ValueError(
                f"the vocabulary mixes token types: {first!r} and {infer_type(token)!r} "
                f"({token!r:.40})"
            )
    return first
