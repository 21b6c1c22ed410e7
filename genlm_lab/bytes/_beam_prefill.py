"""Reading known text into a byte beam at once (`prefill`), and the trie mode it reads in.

Mixed into `ByteBeamState`. While prefilling, EOS tokens are ordinary tokens
(`TrieMode.WITHOUT_EOS`); the known bytes ahead join each batched forward
(`expect`, see `genlm_lab.bytes.lookahead`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from genlm_lab.bytes.base import byte_bar
from genlm_lab.bytes.lookahead import DEFAULT_DEPTH
from genlm_lab.bytes.probs import EOS
from genlm_lab.bytes.trie import TrieMode

if TYPE_CHECKING:
    from genlm_lab.bytes.beam import ByteBeamState


def check_byte(b: Any) -> int:
    if isinstance(b, bool) or not hasattr(b, "__index__"):
        raise ValueError(f"a beam reads one byte as an int 0..255 (or EOS=257), got {b!r}")
    b = int(b)
    if not (0 <= b <= 255 or b == EOS):
        raise ValueError(f"byte {b} is outside 0..255 (use 257 for EOS)")
    return b


class PrefillMixin:
    """`prefill(bytes)` and `with_mode(mode)`."""

    def with_mode(self, mode: TrieMode) -> ByteBeamState:
        """The same beam, materializing future masses in `mode`."""
        beam = self._derive([s.with_mode(mode) for s in self.states], self._rows, self.position)
        return self._share_history(beam)

    async def prefill(
        self, bs: bytes, lookahead: int = DEFAULT_DEPTH, progress: bool | None = None
    ) -> ByteBeamState:
        """The beam after reading `bs`, EOS tokens read as ordinary tokens meanwhile.

        Args:
            bs: bytes (or text, UTF-8 encoded) to read.
            lookahead: bytes ahead whose extensions join each batched forward
                (see `expect`; 0 turns it off); the result is the same for
                every value, only the number of forwards changes.
            progress: a bar over the bytes (None: in a notebook, for more
                than a few dozen bytes).

        Raises:
            EmptyBeamError: if a byte of `bs` cannot be read (naming it and why).
        """
        if isinstance(bs, str):
            bs = bs.encode("utf-8")
        if not hasattr(bs, "__iter__"):
            raise ValueError(f"prefill reads bytes, text or byte ints, got {bs!r}")
        data = [check_byte(b) for b in bs]  # all checked before any LM call
        if EOS in data:
            raise ValueError(
                f"prefill reads bytes 0..255, got EOS ({EOS}) at position {data.index(EOS)}: "
                "EOS tokens are ordinary tokens while prefilling; end with `beam << 257` after"
            )
        beam = self.with_mode(TrieMode.WITHOUT_EOS)
        if lookahead and beam._ahead is None:  # a lookahead given by `expect` is kept
            beam = beam.expect(bytes(data), lookahead)
        with byte_bar(len(data), "prefill", progress) as bar:
            for b in data:
                beam = await (beam.prune() << b)
                bar.update(1)
        beam._raise_if_empty()  # reading text that cannot be read is an error here
        return beam.with_mode(TrieMode.WITH_EOS)
