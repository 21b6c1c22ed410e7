"""Parser combinators that read JSON text as it streams in (genlm-control's names).

A `Parser` reads from an `Input` and returns a value, or raises
`ParseError` (the text cannot continue into what it accepts) or
`Incomplete` (the text ended before it could tell). `a // b` tries `a`,
then `b` from the same place: the first to succeed wins, and if none does
the alternation is `Incomplete` when one of them was. That is limited
backtracking: an alternative that succeeds on a prefix of what a later one
would read wins, so alternatives should start differently (JSON types do,
except integers and numbers: an integer reader refuses a fraction early).

The leaves: literals (`ConstParser`, `FixedSetParser`), regular
expressions (`RegexParser`), numbers (`FloatParser`, `IntegerParser`,
which wait until the text shows where the number ends) and strings
(`STRING_LITERAL_PARSER`; `StringLiteralMatchingPatternParser` also checks
a schema `pattern` on the unfinished string, so a prefix no completion can
match is refused before the closing quote).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

import regex

from genlm_lab.control.constraint.json.stream.text_input import (
    Incomplete,
    Input,
    ParseError,
    TrivialSource,
)

__all__ = [
    "BOOL_PARSER",
    "FLOAT_PARSER",
    "INTEGER_PARSER",
    "NULL_PARSER",
    "STRING_LITERAL_PARSER",
    "WHITESPACE_PARSER",
    "AltParser",
    "ConstParser",
    "FilterParser",
    "FixedSetParser",
    "FloatParser",
    "IntegerParser",
    "MapParser",
    "Parser",
    "RegexParser",
    "StringLiteralMatchingPatternParser",
]

T = TypeVar("T")
S = TypeVar("S")

#: A JSON number.
_NUMBER = regex.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
#: The start of a number no integer reader accepts: a fraction or a negative exponent.
_NOT_INTEGER = regex.compile(r"-?(?:0|[1-9][0-9]*)(?:\.|[eE]-)")
#: A JSON string literal: no raw control character, only JSON's escapes.
_ESCAPE = r'\\["\\/bfnrt]|\\u[0-9a-fA-F]{4}'
STRING_REGEX = rf'"(?:[^"\\\x00-\x1f]|{_ESCAPE})*"'
_STRING = regex.compile(STRING_REGEX)
#: An unfinished literal: its finished characters, then maybe an unfinished escape.
_OPEN_STRING = regex.compile(rf'"((?:[^"\\\x00-\x1f]|{_ESCAPE})*)(\\(?:u[0-9a-fA-F]{{0,3}})?)?')


class Parser(Generic[T]):
    """Reads a value from an `Input`; combine with `//`, `.map`, `.filter`."""

    async def parse(self, input: Input) -> T:
        """Read one value at `input`'s position.

        Raises:
            ParseError: the text cannot continue into a value. Incomplete: it ended too soon.
        """
        raise NotImplementedError(f"{type(self).__name__} does not implement parse()")

    async def parse_string(self, text: str) -> T:
        """Read one value from the start of `text` (what follows it is left unread)."""
        return await Input(TrivialSource(text)).parse(self)

    def __floordiv__(self, other: Parser[S]) -> Parser[T | S]:
        return AltParser(self, other)

    def map(self, apply: Callable[[T], S]) -> Parser[S]:
        """This parser, its value passed through `apply`."""
        return MapParser(self, apply)

    def filter(self, predicate: Callable[[T], bool]) -> Parser[T]:
        """This parser, failing (ParseError) on values `predicate` refuses."""
        return FilterParser(self, predicate)

    def drop_result(self) -> Parser[None]:
        """This parser, returning None."""
        return self.map(_none)


def _none(_: Any) -> None:
    return None


class MapParser(Parser[T]):
    """`base`'s value passed through `apply`."""

    def __init__(self, base: Parser[S], apply: Callable[[S], T]) -> None:
        self.base = base
        self.apply = apply

    async def parse(self, input: Input) -> T:
        return self.apply(await input.parse(self.base))

    def __repr__(self) -> str:
        return f"{self.base!r}.map({getattr(self.apply, '__name__', self.apply)})"


class FilterParser(Parser[T]):
    """`base`, failing on values `predicate` refuses."""

    def __init__(self, base: Parser[T], predicate: Callable[[T], bool]) -> None:
        self.base = base
        self.predicate = predicate

    async def parse(self, input: Input) -> T:
        value = await input.parse(self.base)
        if not self.predicate(value):
            raise ParseError(f"{value!r} fails the filter of {self!r}")
        return value

    def __repr__(self) -> str:
        return f"{self.base!r}.filter({getattr(self.predicate, '__name__', self.predicate)})"


class AltParser(Parser[Any]):
    """The first of `parsers` that succeeds from the same position (`a // b // c`)."""

    def __init__(self, *parsers: Parser[Any]) -> None:
        self.parsers: list[Parser[Any]] = []
        for parser in parsers:
            self.parsers += parser.parsers if isinstance(parser, AltParser) else [parser]

    async def parse(self, input: Input) -> Any:
        unfinished = []
        for parser in self.parsers:
            try:
                return await input.parse(parser)
            except Incomplete:
                unfinished.append(parser)
            except ParseError:
                pass
        if unfinished:
            raise Incomplete(f"the text ended before {unfinished!r} could finish")
        raise ParseError(f"none of {self.parsers!r} reads the text at {input.index}")

    def __repr__(self) -> str:
        return " // ".join(map(repr, self.parsers))


class ConstParser(Parser[Any]):
    """Exactly the JSON of `value` (as `json.dumps` writes it), after optional whitespace."""

    def __init__(self, value: Any) -> None:
        self.value = value
        self.literal = json.dumps(value)

    async def parse(self, input: Input) -> Any:
        await input.skip_whitespace()
        await input.expect(self.literal)
        return self.value

    def __repr__(self) -> str:
        return f"ConstParser({self.value!r})"


class RegexParser(Parser[str]):
    """The text matched by `pattern` (its group `group`) at the read position."""

    def __init__(self, pattern: str, group: int = 0, options: int = regex.UNICODE) -> None:
        self.pattern = regex.compile(pattern, options)
        self.group = group

    async def parse(self, input: Input) -> str:
        return await input.read_pattern(self.pattern, self.group)

    def __repr__(self) -> str:
        return f"RegexParser({self.pattern.pattern!r})"


async def _number_text(input: Input, refuse: Any = None) -> str:
    """The number at the read position, once the text shows where it ends (not read).

    While all the unread text could still be (the start of) one number, it
    waits for more; at the end of the text an unfinished number is
    Incomplete. `refuse` fails the number as soon as it matches.
    """
    await input.wait_for(1)
    while True:
        if refuse is not None and input.lookahead(refuse, partial=False) is not None:
            raise ParseError(f"{input.peek(20)!r} is not what {refuse.pattern!r} allows")
        whole = input.lookahead(_NUMBER, whole=True)
        if whole is None:
            break  # a character that no number has ends it
        if not await input.advance_input():
            if whole.partial:
                raise Incomplete(f"the text ended inside the number {input.peek()!r}")
            break
    found = input.lookahead(_NUMBER, partial=False)
    if found is None:
        raise ParseError(f"no number at {input.index}: {input.peek(20)!r}")
    return found.group()


class FloatParser(Parser[float]):
    """A JSON number (`json.loads` of it: an int when written without fraction or exponent)."""

    async def parse(self, input: Input) -> float:
        text = await _number_text(input)
        await input.read(len(text))
        return json.loads(text)

    def __repr__(self) -> str:
        return "FloatParser()"


class IntegerParser(Parser[int]):
    """A JSON number without a fraction and without a negative exponent (`1e5` is one)."""

    async def parse(self, input: Input) -> int:
        text = await _number_text(input, refuse=_NOT_INTEGER)
        await input.read(len(text))
        return json.loads(text)

    def __repr__(self) -> str:
        return "IntegerParser()"


def _decode_string(literal: str) -> str:
    try:
        return json.loads(literal)
    except json.JSONDecodeError as error:  # not reached for what _STRING matched
        raise ParseError(f"{literal[:40]!r} is not a JSON string: {error.msg}") from None


def _check_surrogates(text: str, finished: bool) -> str:
    """`text` without a trailing half surrogate pair (the other half may follow, if unfinished).

    Raises:
        ParseError: for a lone surrogate, which UTF-8 cannot hold.
    """
    if not finished and text and "\ud800" <= text[-1] <= "\udbff":
        text = text[:-1]
    if any("\ud800" <= c <= "\udfff" for c in text):
        raise ParseError("the string holds half of a surrogate pair")
    return text


class _StringLiteral(Parser[str]):
    async def parse(self, input: Input) -> str:
        literal = await input.read_pattern(_STRING)
        return _check_surrogates(_decode_string(literal), finished=True)

    def __repr__(self) -> str:
        return "STRING_LITERAL_PARSER"


class StringLiteralMatchingPatternParser(Parser[str]):
    """A JSON string in which `pattern` matches (searched, as JSON Schema's `pattern` is).

    An unfinished string is refused as soon as no continuation of it can
    match (the `regex` module's partial search).
    """

    def __init__(self, pattern: str) -> None:
        self.pattern = regex.compile(pattern, regex.UNICODE)

    async def parse(self, input: Input) -> str:
        while True:
            found = await input.get_partial_pattern(_STRING)
            if found is None:
                raise ParseError(f"no string at {input.index}: {input.peek(20)!r}")
            literal = found.group()
            if not found.partial:
                text = _check_surrogates(_decode_string(literal), finished=True)
                if self.pattern.search(text) is None:
                    raise ParseError(f"{text[:40]!r} does not match {self.pattern.pattern!r}")
                await input.read(len(literal))
                return text
            body = _OPEN_STRING.fullmatch(literal).group(1)
            text = _check_surrogates(_decode_string(f'"{body}"'), finished=False)
            if self.pattern.search(text, partial=True) is None:
                raise ParseError(
                    f"no string starting {text[:40]!r} matches {self.pattern.pattern!r}"
                )
            if not await input.advance_input():
                raise Incomplete("the text ended inside a string")

    def __repr__(self) -> str:
        return f"StringLiteralMatchingPatternParser({self.pattern.pattern!r})"


class FixedSetParser(Parser[str]):
    """The longest of `values` that the text starts with.

    While the text read so far could still grow into a longer value, it
    waits for more.

    Raises:
        ValueError: if `values` is empty.
    """

    def __init__(self, values: Iterable[str]) -> None:
        self.values = list(dict.fromkeys(values))
        if not self.values:
            raise ValueError("FixedSetParser needs at least one value to match")
        self._longest = max(map(len, self.values))

    async def parse(self, input: Input) -> str:
        while True:
            seen = input.peek(self._longest + 1)
            growing = any(len(v) > len(seen) and v.startswith(seen) for v in self.values)
            if growing and await input.advance_input():
                continue
            best = max((v for v in self.values if seen.startswith(v)), key=len, default=None)
            if best is not None:
                await input.read(len(best))
                return best
            if growing:
                raise Incomplete(f"the text ended inside one of {self.values[:5]!r}")
            raise ParseError(f"{seen!r} starts none of {self.values[:5]!r}")

    def __repr__(self) -> str:
        return f"FixedSetParser({self.values!r})"


class _Whitespace(Parser[str]):
    async def parse(self, input: Input) -> str:
        return await input.read_whitespace()

    def __repr__(self) -> str:
        return "WHITESPACE_PARSER"


FLOAT_PARSER = FloatParser()
INTEGER_PARSER = IntegerParser()
STRING_LITERAL_PARSER: Parser[str] = _StringLiteral()
NULL_PARSER: Parser[None] = RegexParser("null").drop_result()
BOOL_PARSER: Parser[bool] = RegexParser("true|false").map(json.loads)
#: Whitespace between values: JSON's four kinds only (a U+3000 is a ParseError).
WHITESPACE_PARSER: Parser[str] = _Whitespace()
