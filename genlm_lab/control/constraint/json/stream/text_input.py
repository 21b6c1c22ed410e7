"""`Input`: the text of a JSON document as it arrives, with a read position.

The streaming parsers (`stream.parsers`) read a document while it is still
being written. `Input` keeps the text received so far and where the parser
stands in it; a read that needs characters not received yet pulls the next
piece from the source and waits for it. Two outcomes end a parse early:
`ParseError`, the text received cannot continue into anything the parser
accepts, and `Incomplete`, the source ended before the parser could decide.
A parser run on a prefix of a good document therefore never raises
`ParseError`; on a live stream it waits instead of raising `Incomplete`.

Sources: `TrivialSource` hands over one string, `StringSource` decodes a
stream of byte blocks as UTF-8 (`chunk_to_complete_utf8` does the same for
a plain iterable), cutting only between characters.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import regex

from genlm_lab.control.errors import Incomplete, ParseError
from genlm_lab.control.potential import AsyncSource

__all__ = [
    "Incomplete",
    "Input",
    "ParseError",
    "StringSource",
    "TrivialSource",
    "chunk_to_complete_utf8",
]

#: A run of whitespace as Python's `regex` counts it; only JSON's four kinds may be in it.
_SPACES = regex.compile(r"\s*")
_JSON_SPACE = frozenset(" \t\n\r")


class TrivialSource(AsyncSource):
    """A source of one piece of text: `value`, then the end."""

    def __init__(self, value: str) -> None:
        self.value = value
        self._given = False

    async def more(self) -> str:
        if self._given:
            raise StopAsyncIteration
        self._given = True
        return self.value


def _utf8_decoder() -> codecs.IncrementalDecoder:
    return codecs.getincrementaldecoder("utf-8")("strict")


def chunk_to_complete_utf8(byte_blocks: Iterable[bytes]) -> Iterator[bytes]:
    """The bytes of `byte_blocks` again, in non-empty blocks that each decode as UTF-8.

    A character split between blocks is held back until its last byte came.

    Raises:
        UnicodeDecodeError: as soon as a block holds bytes that no UTF-8 text
            has there, or at the end if the last character is unfinished.
    """
    decoder = _utf8_decoder()
    for block in byte_blocks:
        text = decoder.decode(bytes(block))
        if text:
            yield text.encode("utf-8")
    decoder.decode(b"", final=True)


class StringSource(AsyncSource):
    """Text decoded from a source of byte blocks, one or more whole characters at a time.

    Bytes of an unfinished character wait for the next block; a stream that
    ends inside a character ends without them (its prefix is still fine).
    A byte that cannot be UTF-8 raises `UnicodeDecodeError` from `more()`.
    """

    def __init__(self, byte_source: AsyncSource) -> None:
        self.byte_source = byte_source
        self._decoder = _utf8_decoder()

    async def more(self) -> str:
        while True:
            text = self._decoder.decode(bytes(await self.byte_source.more()))
            if text:
                return text


class Input:
    """The text received from `incoming` so far, and the position of the next read.

    Reads wait for (pull) more text when they need it, and raise `Incomplete`
    once the source has ended. The position only moves forward, except
    inside `preserving_index()` (restored on an error) and
    `resetting_index()` (always restored): alternatives and look-aheads.
    """

    def __init__(self, incoming: AsyncSource) -> None:
        self._source = incoming
        self._ended = False
        self._text = ""
        self._index = 0

    @property
    def index(self) -> int:
        """How many characters have been read."""
        return self._index

    @index.setter
    def index(self, value: int) -> None:
        if value < self._index:
            raise ValueError(
                f"Input.index moves forward only ({self._index} -> {value}); "
                "look ahead inside resetting_index() instead"
            )
        self._index = value

    @property
    def text(self) -> str:
        """All the text received so far."""
        return self._text

    def __repr__(self) -> str:
        read, rest = self._text[: self._index], self._text[self._index :]
        return f"Input({read!r} | {rest!r}{'' if self._ended else ' ...'})"

    async def advance_input(self) -> bool:
        """Receive the next piece of text; False once the source has ended."""
        if self._ended:
            return False
        try:
            piece = await self._source.more()
        except StopAsyncIteration:
            self._ended = True
            return False
        self._text += piece
        return True

    async def wait_for(self, n: int) -> None:
        """Receive text until `n` unread characters are there.

        Raises:
            Incomplete: if the source ends first.
        """
        while len(self._text) - self._index < n:
            if not await self.advance_input():
                raise Incomplete(f"the text ended after {len(self._text)} characters")

    def peek(self, n: int | None = None) -> str:
        """The unread text received so far (at most `n` characters), without reading it."""
        end = None if n is None else self._index + n
        return self._text[self._index : end]

    def lookahead(self, pattern: Any, *, whole: bool = False, partial: bool = True) -> Any:
        """`pattern` matched at the read position against the text received so far.

        `whole` asks the match to reach the end of that text; `partial` lets
        it stop there unfinished (`match.partial`). Nothing is read or awaited.
        """
        match = pattern.fullmatch if whole else pattern.match
        return match(self._text, self._index, partial=partial)

    async def current_char(self) -> str:
        """The next character, not read."""
        await self.wait_for(1)
        return self._text[self._index]

    async def read(self, n: int) -> str:
        """The next `n` characters, read."""
        await self.wait_for(n)
        start = self._index
        self._index += n
        return self._text[start : self._index]

    async def expect(self, expected: str) -> None:
        """Read `expected`, one character at a time, so a wrong one fails before the rest came.

        Raises:
            ParseError: at the first character that differs.
        """
        for want in expected:
            got = await self.read(1)
            if got != want:
                raise ParseError(f"expected {want!r} at {self._index - 1}, got {got!r}")

    async def read_pattern(self, pattern: Any, group: int = 0) -> str:
        """Read the match of `pattern` at the read position; its group `group`.

        A match that reaches the end of the text received and could go on
        waits for more text (the `regex` module prefers a finished match).

        Raises:
            ParseError: if the text cannot match. Incomplete: if it ended mid-match.
        """
        await self.wait_for(1)
        while True:
            found = self.lookahead(pattern)
            if found is None or found.group(group) is None:
                raise ParseError(f"{pattern.pattern!r} does not match at {self._index}")
            if not found.partial:
                self._index = found.end()
                return found.group(group)
            if not await self.advance_input():
                raise Incomplete(f"the text ended inside a match of {pattern.pattern!r}")

    async def get_partial_pattern(self, pattern: Any) -> Any:
        """`pattern` matched (or partly matched) on the unread text; nothing is read."""
        await self.wait_for(1)
        return self.lookahead(pattern)

    async def read_whitespace(self) -> str:
        """Read the run of whitespace at the read position (maybe empty).

        A run that reaches the end of the text received waits for more, so
        whitespace split between pieces is read as one run.

        Raises:
            ParseError: if the run holds whitespace JSON does not allow
                between values (U+3000, a form feed, ...).
        """
        while True:
            found = self.lookahead(_SPACES, partial=False)
            if found.end() < len(self._text) or not await self.advance_input():
                break
        run = found.group()
        if not _JSON_SPACE.issuperset(run):
            bad = next(c for c in run if c not in _JSON_SPACE)
            raise ParseError(f"{bad!r} at {self._index + run.index(bad)} is not JSON whitespace")
        self._index = found.end()
        return run

    async def skip_whitespace(self) -> None:
        """Read the whitespace at the read position, if any (a non-JSON space raises ParseError)."""
        await self.read_whitespace()

    @contextmanager
    def preserving_index(self) -> Iterator[None]:
        """Put the read position back if the block raises."""
        start = self._index
        try:
            yield
        except BaseException:
            self._index = start
            raise

    @contextmanager
    def resetting_index(self) -> Iterator[None]:
        """Put the read position back when the block ends, however it ends."""
        start = self._index
        try:
            yield
        finally:
            self._index = start

    async def parse(self, parser: Any) -> Any:
        """Run `parser` (a `parsers.Parser`) here; on an error the read position stays where it was."""
        with self.preserving_index():
            return await parser.parse(self)
