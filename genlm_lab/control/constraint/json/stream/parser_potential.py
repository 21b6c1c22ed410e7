"""`ParserPotential`: a streaming parser (`stream.parsers`) run as a constraint over bytes.

The bytes of a context are decoded as UTF-8 and fed to the parser as they
come (an `AsyncStreamingPotential`): a prefix keeps weight 1 while the
parser waits for more and drops to 0 when it raises; a complete document is
one the parser reads whole, with nothing but whitespace after it.
"""

from __future__ import annotations

import math

from genlm_lab.control.constraint.json.stream.parsers import Parser
from genlm_lab.control.constraint.json.stream.text_input import Incomplete, Input, StringSource
from genlm_lab.control.potential import AsyncSource, AsyncStreamingPotential

__all__ = ["ParserPotential"]


class ParserPotential(AsyncStreamingPotential):
    """The documents `parser` reads whole, as a constraint over the 256 byte values."""

    is_boolean = True

    def __init__(self, parser: Parser) -> None:
        super().__init__(vocabulary=list(range(256)))
        self.parser = parser

    async def calculate_score_from_stream(self, stream: AsyncSource) -> float:
        """0.0 for one document and trailing whitespace; -inf for more; raises otherwise."""
        text = Input(StringSource(stream))
        await text.parse(self.parser)
        await text.skip_whitespace()
        try:
            await text.read(1)
        except Incomplete:
            return 0.0
        return -math.inf

    def spawn(self) -> ParserPotential:
        return ParserPotential(self.parser)

    def __repr__(self) -> str:
        return f"ParserPotential({self.parser!r})"
