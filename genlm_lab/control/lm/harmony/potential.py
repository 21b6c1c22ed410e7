"""`HarmonyPotential`: a constraint on some channels of a gpt-oss turn, the others left free.

genlm-control's name and arguments. A base potential weighs the content of
each constrained channel: a closed message's content as complete, the open
one's as a prefix; the weight of a turn is their product (0 in log space
where none is constrained). Tokens that would break the Harmony format
(`grammar`) weigh zero, so `llm * HarmonyPotential(...)` only writes chats;
genlm-control's leaves them to the model and raises at the next call.

Next-token weights are `prefix(x + t) - prefix(x)` exactly: in a constrained
channel, the base's row, with the base's EOS weight moved to the token that
closes the message (`<|end|>` for analysis and commentary, EOS, which stands
for `<|return|>`, for final, `<|call|>` for a tool call); opening a
constrained message costs the base's weight of the empty content.
"""

from __future__ import annotations

import asyncio
import math
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from genlm_lab.control.core.constant import EOS, EndOfSequence
from genlm_lab.control.core.weights import LazyWeights
from genlm_lab.control.errors import HarmonyFormatError
from genlm_lab.control.lm.harmony.chat import HarmonyChat
from genlm_lab.control.lm.harmony.grammar import (
    CHANNELS,
    CONSTRAIN_MARK,
    Reading,
    channel_pattern,
    closer_of,
    role_pattern,
)
from genlm_lab.control.potential.base import Potential

__all__ = ["HarmonyPotential", "VALID_CHANNELS"]

VALID_CHANNELS = frozenset(CHANNELS)
_MASKS = 64  # header masks kept (one per header text seen; a few per message)


def _channels(constrained_channels: Any) -> list[str]:
    if isinstance(constrained_channels, str) or not constrained_channels:
        raise ValueError(
            f"constrained_channels must be a non-empty list of channels among "
            f"{sorted(VALID_CHANNELS)}, got {constrained_channels!r}"
        )
    channels = list(constrained_channels)
    invalid = [c for c in channels if c not in VALID_CHANNELS]
    if invalid:
        raise ValueError(
            f"Invalid channel names: {invalid}. Must be among {sorted(VALID_CHANNELS)}."
        )
    return channels


class HarmonyPotential(Potential):
    """The Harmony format with a base potential on the content of some of its channels.

    Args:
        base_potential: weighs a constrained channel's content (a list of this
            tokenizer's tokens): e.g. a constraint coerced onto
            `HarmonyChat(tokenizer).potential_vocab` with `prune=False`.
        llm_tokenizer: the language model's tokenizer (gpt-oss's), or a
            `HarmonyChat` built on it.
        constrained_channels: the channels the base weighs, among `analysis`,
            `commentary` and `final`.

    Attributes:
        base_potential, harmony_chat, constrained_channels: as given.

    Raises:
        ValueError: for an empty or unknown channel list, or a base with tokens
            this tokenizer does not have.
    """

    def __init__(
        self, base_potential: Potential, llm_tokenizer: Any, constrained_channels: Sequence[str]
    ) -> None:
        self.constrained_channels = _channels(constrained_channels)
        chat = (
            llm_tokenizer if isinstance(llm_tokenizer, HarmonyChat) else HarmonyChat(llm_tokenizer)
        )
        self.base_potential = base_potential
        self.harmony_chat = chat
        super().__init__(chat.potential_vocab)
        where = [self.lookup.get(t) for t in base_potential.vocab]
        missing = [
            t
            for t, i in zip(base_potential.vocab, where, strict=True)
            if i is None or i == len(self.vocab)
        ]
        if missing:
            raise ValueError(
                f"{len(missing)} tokens of the base potential are no tokens of this tokenizer "
                f"(first {missing[0]!r:.40}): coerce it onto harmony_chat.potential_vocab"
            )
        self._base_index = np.array(where, dtype=np.int64)
        self._special = {name: self.lookup.get(t) for name, t in chat.specials.items()}
        self._masks: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()

    # ------------------------------------------------------------ weights
    def _read(self, context: Sequence[Any]) -> Reading | None:
        try:
            return self.harmony_chat.read(context)
        except HarmonyFormatError:
            return None

    async def _weigh(self, context: Sequence[Any], reading: Reading) -> float:
        """Sum of the base's weights of the constrained messages' contents."""
        calls = []
        for m in reading.messages:
            if m.channel not in self.constrained_channels:
                continue
            content = list(context[m.start : len(context) if m.stop is None else m.stop])
            if any(t not in self.base_potential.lookup for t in content):
                return -math.inf  # a token the base has no weight for
            method = self.base_potential.prefix if m.stop is None else self.base_potential.complete
            calls.append(method(content))
        return float(sum(await asyncio.gather(*calls))) if calls else 0.0

    async def prefix(self, context: Sequence[Any]) -> float:
        """The constrained channels' weight (closed ones complete), or -inf off the format."""
        reading = self._read(context)
        return -math.inf if reading is None else await self._weigh(context, reading)

    async def complete(self, context: Sequence[Any]) -> float:
        """The weight of the turn ending here (EOS closes a final message), or -inf."""
        context = list(context)
        if context and isinstance(context[-1], EndOfSequence):
            context = context[:-1]
        reading = self._read([*context, EOS])
        return -math.inf if reading is None else await self._weigh(context, reading)

    async def logw_next(self, context: Sequence[Any]) -> LazyWeights:
        """`prefix(x + t) - prefix(x)` for every token t, and `complete(x) - prefix(x)` for EOS.

        Raises:
            ValueError: if `context` starts no Harmony chat, or its open
                constrained channel has weight zero under the base.
        """
        context = list(context)
        try:
            reading = self.harmony_chat.read(context)
        except HarmonyFormatError as err:
            raise ValueError(
                f"Context has weight zero under `prefix` of {self.name}: {err}"
            ) from None
        row = self.alloc_logws()
        if reading.state == "content":
            await self._content_row(context, reading, row)
        elif reading.state == "over":
            row[-1] = 0.0  # after <|return|>, the end
        else:
            await self._header_row(reading, row)
        return self.make_lazy_weights(row)

    async def _content_row(self, context: list[Any], reading: Reading, row: np.ndarray) -> None:
        message = reading.messages[-1]
        content = context[message.start :]
        if message.channel in self.constrained_channels:
            if await self.base_potential.prefix(content) == -math.inf:
                raise ValueError(
                    f"Context {content!r:.80} of the {message.channel} channel has weight zero "
                    f"under `prefix` of {self.base_potential.name}"
                )
            base = np.asarray((await self.base_potential.logw_next(content)).weights)
            row[self._base_index] = base[:-1]
            end = float(base[-1])
        else:
            row[:-1] = 0.0
            end = 0.0
        for name in ("start", "channel", "message", "end", "call", "return"):
            if self._special[name] is not None:
                row[self._special[name]] = -math.inf
        closer = closer_of(message)
        if self._special[closer] is not None:
            row[self._special[closer]] = end
        if closer == "return":
            row[-1] = end

    async def _header_row(self, reading: Reading, row: np.ndarray) -> None:
        special = self._special
        if reading.state == "between":
            if reading.last_closer == "call":
                row[-1] = 0.0  # a tool call may end the turn
            if not reading.unused():
                return
            for name in ("start", "channel"):
                if special[name] is not None:
                    row[special[name]] = 0.0
            row[self._mask(role_pattern(False), "")] = 0.0
        elif reading.state == "role":
            pattern = role_pattern(reading.started)
            row[self._mask(pattern, reading.text)] = 0.0
            if pattern.fullmatch(reading.text) and special["channel"] is not None:
                row[special["channel"]] = 0.0
        else:
            pattern = channel_pattern(reading.unused(), reading.recipient is not None)
            row[self._mask(pattern, reading.text)] = 0.0
            marked = reading.text + CONSTRAIN_MARK
            if special["constrain"] is not None and pattern.fullmatch(marked, partial=True):
                row[special["constrain"]] = 0.0
            found = pattern.fullmatch(reading.text)
            if found and special["message"] is not None:
                opened = found.group("channel") in self.constrained_channels
                row[special["message"]] = await self.base_potential.prefix([]) if opened else 0.0

    def _mask(self, pattern: Any, text: str) -> np.ndarray:
        """Indices of the text tokens that keep header `text` a prefix of `pattern` (cached)."""
        key = (pattern.pattern, text)
        if key in self._masks:
            self._masks.move_to_end(key)
            return self._masks[key]
        found = np.array(
            [
                i
                for i, s in self.harmony_chat.header_candidates
                if pattern.fullmatch(text + s, partial=True)
            ],
            dtype=np.int64,
        )
        self._masks[key] = found
        if len(self._masks) > _MASKS:
            self._masks.popitem(last=False)
        return found

    def __repr__(self) -> str:
        return (
            f"HarmonyPotential({self.base_potential!r}, channels={self.constrained_channels}, "
            f"{len(self.vocab)} tokens)"
        )
