"""The Harmony chat format, read token by token: what gpt-oss writes after `<|start|>assistant`.

A turn is a run of messages. Each is an optional `<|start|>assistant` (the
first one's is in the prompt), a header, `<|message|>`, the content, and a
closer. The header names the channel (`analysis`, `commentary` or `final`,
each at most once a turn), may name a recipient (` to=functions.get_weather`,
before `<|channel|>` or after the channel's name) and a format (` json`, or a
word after `<|constrain|>`), with single spaces, as Harmony writes them. The closer is the one Harmony gives the message:
a message to a recipient (a tool call) ends with `<|call|>`, a `final` one
with `<|return|>`, the others with `<|end|>`. The turn is over after
`<|return|>` or a `<|call|>`; the end of the token sequence (EOS) stands for
`<|return|>` when it closes a `final` message. Content may hold any token but
`<|start|>`, `<|channel|>` and `<|message|>`. `<|end|>` asks for another
message, so the last channel left, unless `final`, must be a tool call.

`read` follows a token sequence through that grammar and raises
`HarmonyFormatError`, naming the token, at the first one no chat can go on
with; so a sequence it reads is a prefix of some chat. Header text is
matched with the `regex` module's partial matching; it is ASCII, so a token
with other bytes can be no part of a header.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import regex

from genlm_lab.control.core.constant import EndOfSequence
from genlm_lab.control.errors import HarmonyFormatError

__all__ = [
    "CHANNELS",
    "CONSTRAIN_MARK",
    "HEADER_ALPHABET",
    "SPECIAL_TEXTS",
    "Message",
    "Reading",
    "channel_pattern",
    "closer_of",
    "read",
    "role_pattern",
]

CHANNELS = ("analysis", "commentary", "final")
#: special name -> its text in the o200k_harmony vocabulary.
SPECIAL_TEXTS = {
    "start": "<|start|>",
    "channel": "<|channel|>",
    "message": "<|message|>",
    "end": "<|end|>",
    "call": "<|call|>",
    "return": "<|return|>",
    "constrain": "<|constrain|>",
}
#: `<|constrain|>` as it stands in header text (ordinary header bytes are ASCII).
CONSTRAIN_MARK = "\u00a7"
#: Every character header text can hold, besides `CONSTRAIN_MARK`.
HEADER_ALPHABET = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-= ")
_NAME = "[A-Za-z0-9_.\\-]+"
_FORMAT = "[A-Za-z0-9_\\-]+"


@lru_cache(maxsize=2)
def role_pattern(started: bool) -> Any:
    """Header text before `<|channel|>`: `assistant` after `<|start|>`, then an optional recipient."""
    head = "assistant" if started else ""
    return regex.compile(f"{head}(?: to=(?P<to>{_NAME}))?")


@lru_cache(maxsize=16)
def channel_pattern(channels: frozenset[str], has_recipient: bool = False) -> Any:
    """Header text between `<|channel|>` and `<|message|>`, for a channel among `channels`.

    The last channel left, unless it is `final`, must take a recipient (here or
    in the role part, `has_recipient`): its message cannot end with `<|end|>`,
    which asks for another, so it must be a tool call.
    """
    fmt = f"(?: json| ?{CONSTRAIN_MARK}{_FORMAT})?"
    branches = []
    for channel in sorted(channels):
        to = f" to=(?P<to>{_NAME})"
        if channel == "final" or len(channels) > 1 or has_recipient:
            to = f"(?:{to})?"
        branches.append(f"(?P<channel>{channel}){to}{fmt}")
    return regex.compile("|".join(branches) or "(?!)")


@dataclass
class Message:
    """One message of a chat: its channel, recipient and where its content lies.

    Attributes:
        channel: `analysis`, `commentary` or `final`.
        recipient: who the message is for (a tool call), or None.
        start: index of the content's first token in the sequence read.
        stop: index of its closer (None while the message is open).
        closer: `end`, `call`, `return` or `eos`, or None while open.
    """

    channel: str
    recipient: str | None
    start: int
    stop: int | None = None
    closer: str | None = None


def closer_of(message: Message) -> str:
    """The special that ends `message`: `call` for a tool call, `return` for `final`, else `end`."""
    if message.recipient is not None:
        return "call"
    return "return" if message.channel == "final" else "end"


@dataclass
class Reading:
    """Where a token sequence stands in a chat.

    Attributes:
        messages: the messages whose header is complete, in order.
        state: `between` (before a message), `role` (in the text before
            `<|channel|>`), `header` (after it), `content` (in the last
            message's content) or `over` (the turn has ended).
        text: the open header's text so far (role or channel part).
        started: whether the open header began with `<|start|>`.
        recipient: the recipient the open header's role part named.
        last_closer: the closer of the last closed message, if any.
    """

    messages: list[Message] = field(default_factory=list)
    state: str = "between"
    text: str = ""
    started: bool = False
    recipient: str | None = None
    last_closer: str | None = None

    def unused(self) -> frozenset[str]:
        """The channels no message of the turn has used yet."""
        return frozenset(CHANNELS) - {m.channel for m in self.messages}

    def open_message(self) -> Message | None:
        """The message whose content the sequence ends in, if any."""
        return self.messages[-1] if self.state == "content" else None


def _fail(pos: int, token: Any, why: str) -> HarmonyFormatError:
    return HarmonyFormatError(
        f"token {pos} ({bytes(token)!r:.40}) is no part of a Harmony chat: {why}"
    )


def _header_text(token: Any, pos: int) -> str:
    data = bytes(token)
    text = data.decode("latin-1")
    if not set(text) <= HEADER_ALPHABET:
        raise _fail(pos, token, "a message header holds ASCII letters, digits and '_.-= ' only")
    return text


def _step(r: Reading, pos: int, token: Any, kind: str | None) -> None:
    """Advance `r` by one token (`kind`: its special's name, `eos`, or None for text)."""
    if r.state == "content":
        if kind in ("start", "channel", "message"):
            raise _fail(pos, token, f"{SPECIAL_TEXTS[kind]} inside a message's content")
        if kind in ("end", "call", "return", "eos"):
            message = r.messages[-1]
            want = closer_of(message)
            if want != kind and not (kind == "eos" and want == "return"):
                raise _fail(
                    pos, token, f"this {message.channel} message ends with {SPECIAL_TEXTS[want]}"
                )
            message.stop, message.closer = pos, kind
            r.state = "over" if kind in ("return", "eos") else "between"
            r.last_closer = kind
        return
    if r.state == "over":
        if kind == "eos" and r.last_closer == "return":
            return
        raise _fail(pos, token, "the turn is over")
    if kind == "eos":
        if r.state == "between" and r.last_closer == "call":
            r.state = "over"
            return
        raise _fail(pos, token, "the turn ends in a final message or after a <|call|>")
    if r.state == "between":
        if not r.unused():
            raise _fail(pos, token, "every channel has had its message")
        if kind == "start":
            r.state, r.text, r.started = "role", "", True
            return
        r.state, r.text, r.started = "role", "", False
        if kind is None:
            r.text = _header_text(token, pos)
            if not role_pattern(False).fullmatch(r.text, partial=True):
                raise _fail(pos, token, "a header begins 'assistant' or ' to=NAME'")
            return
    if r.state == "role":
        if kind is None:
            r.text += _header_text(token, pos)
            if not role_pattern(r.started).fullmatch(r.text, partial=True):
                raise _fail(pos, token, "a header's role part is 'assistant' then ' to=NAME'")
            return
        found = role_pattern(r.started).fullmatch(r.text) if kind == "channel" else None
        if found is None:
            raise _fail(pos, token, f"expected the role part's text or <|channel|> in {r.text!r}")
        r.state, r.text, r.recipient = "header", "", found.group("to")
        return
    # r.state == "header"
    pattern = channel_pattern(r.unused(), r.recipient is not None)
    if kind is None or kind == "constrain":
        r.text += CONSTRAIN_MARK if kind == "constrain" else _header_text(token, pos)
        if not pattern.fullmatch(r.text, partial=True):
            raise _fail(pos, token, f"no unused channel's header starts {r.text!r}")
        return
    found = pattern.fullmatch(r.text) if kind == "message" else None
    if found is None:
        raise _fail(pos, token, f"expected a channel header or <|message|> after {r.text!r}")
    recipient = found.group("to") or r.recipient
    r.messages.append(Message(found.group("channel"), recipient, pos + 1))
    r.state, r.text, r.recipient = "content", "", None


def read(tokens: Sequence[Any], kinds: Mapping[Any, str]) -> Reading:
    """Follow `tokens` (a trailing EOS ends the turn) through the Harmony grammar.

    Args:
        tokens: the turn's tokens (`Token`s or bytes), perhaps ending with EOS.
        kinds: special token -> its name in `SPECIAL_TEXTS`.

    Raises:
        HarmonyFormatError: naming the first token no chat goes on with.
    """
    r = Reading()
    for pos, token in enumerate(tokens):
        if isinstance(token, EndOfSequence):
            if pos != len(tokens) - 1:
                raise HarmonyFormatError(f"EOS at position {pos} is not the last token")
            _step(r, pos, b"", "eos")
        else:
            _step(r, pos, token, kinds.get(token))
    return r
