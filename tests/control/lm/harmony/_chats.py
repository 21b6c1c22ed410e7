"""Random Harmony turns as text (most well formed, some not), and token mutants of them."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

CONTENTS = ["ab", "aab", "aabaa", "b", "", "x <|constrain|> y", "<|endoftext|>", "{}", "é☃"]
RECIPIENTS = ["functions.f", "functions.get"]


def random_turn(rng: random.Random, loose_formats: bool = True) -> str:
    """A turn of one to three messages in Harmony's shapes, now and then with a wrong closer.

    With `loose_formats=False`, a format (` json`, `<|constrain|>json`) comes only with a
    recipient, as Harmony writes tool calls (openai-harmony 0.0.8 reads a format after
    a channel with no recipient, `final <|constrain|>json`, as the recipient).
    """
    channels = rng.sample(["analysis", "commentary", "final"], rng.randint(1, 3))
    parts = []
    for i, channel in enumerate(channels):
        head = "<|start|>assistant" if i or rng.random() < 0.3 else ""
        recipient = rng.choice(RECIPIENTS) if rng.random() < 0.3 else None
        where = rng.choice(["role", "channel"])
        if recipient and where == "role":
            head += f" to={recipient}"
        head += f"<|channel|>{channel}"
        if recipient and where == "channel":
            head += f" to={recipient}"
        if loose_formats or recipient:
            head += rng.choice(["", "", " json", " <|constrain|>json", "<|constrain|>json"])
        if recipient:
            closer = "<|call|>"
        elif channel == "final":
            closer = "<|return|>"
        else:
            closer = "<|end|>"
        if rng.random() < 0.1:
            closer = rng.choice(["<|end|>", "<|call|>", "<|return|>"])
        parts.append(f"{head}<|message|>{rng.choice(CONTENTS)}{closer}")
    return "".join(parts)


def mutants(
    tokens: Sequence[Any], vocab: Sequence[Any], specials: Sequence[Any], rng: random.Random, n: int
) -> list[list[Any]]:
    """`n` copies of `tokens` with one token inserted, deleted or replaced (specials half the time)."""
    out = []
    for _ in range(n):
        i = rng.randrange(len(tokens) + 1)
        new = rng.choice(specials) if rng.random() < 0.5 else rng.choice(vocab)
        kind = rng.choice("idr")
        if kind == "i":
            out.append([*tokens[:i], new, *tokens[i:]])
        elif kind == "d":
            out.append([*tokens[:i], *tokens[i + 1 :]])
        else:
            out.append([*tokens[:i], new, *tokens[i + 1 :]])
    return out
