"""The Harmony grammar read token by token agrees with the whole turn written as one regex.

For every prefix of random turns and of one-token mutants of them (toy
tokenizer): `read` succeeds iff some complete turn starts with the prefix, and
the turn may end there iff the prefix with EOS is a complete turn
(`_reference.TURN`, written independently of the reader).
"""

from __future__ import annotations

import random

import pytest

from genlm_lab.control import EOS
from genlm_lab.control.lm.harmony import HarmonyChat
from genlm_lab.errors import HarmonyFormatError
from tests.control.lm.harmony import _reference as ref
from tests.control.lm.harmony._chats import mutants, random_turn
from tests.control.lm.harmony._toy import toy_tokenizer


@pytest.fixture(scope="module")
def chat() -> HarmonyChat:
    return HarmonyChat(toy_tokenizer())


def _reads(chat: HarmonyChat, tokens: list) -> bool:
    try:
        chat.read(tokens)
    except HarmonyFormatError:
        return False
    return True


def _sequences(chat: HarmonyChat, seed: int, turns: int, each: int) -> list[tuple[list, int]]:
    """Random turns, `each` mutants of each, and each turn cut after every closer then
    followed by every special (what may come after a message is where turns end); each
    with the length of its shortest prefix not already among an earlier one's."""
    rng = random.Random(seed)
    specials = list(chat.specials.values())
    closers = {"end", "call", "return"}
    out = []
    for _ in range(turns):
        tokens = chat.decode_tokens(chat.tokenizer.encode(random_turn(rng)))
        out.append((tokens, 0))
        out += [(m, 0) for m in mutants(tokens, chat.potential_vocab, specials, rng, each)]
        cuts = [k + 1 for k, t in enumerate(tokens) if chat.kind_of(t) in closers]
        out += [([*tokens[:k], s], k + 1) for k in cuts for s in specials]
    return out


def test_every_prefix_reads_iff_a_turn_starts_with_it_and_ends_iff_complete(chat):
    disagree = []
    counts = {"live": 0, "dead": 0, "complete": 0}
    for tokens, first in _sequences(chat, seed=0, turns=60, each=3):
        for k in range(first, len(tokens) + 1):
            prefix = tokens[:k]
            text = ref.draw(prefix, chat.kind_of)
            live, ends = ref.live(text), ref.complete(text)
            if _reads(chat, prefix) != live or _reads(chat, [*prefix, EOS]) != ends:
                disagree.append((text, live, ends))
            counts["live" if live else "dead"] += 1
            counts["complete"] += ends
            if not live:
                break  # every longer prefix is dead too
    assert disagree == []
    # both verdicts, and turns that end, are well represented
    assert counts["live"] > 2000 and counts["dead"] > 100 and counts["complete"] > 40


def test_the_reader_names_the_token_no_turn_goes_on_with(chat):
    tokens = chat.decode_tokens(chat.tokenizer.encode("<|channel|>final<|message|>ab<|end|>"))
    where = rf"token {len(tokens) - 1} \(b'<\|end\|>'\)"
    with pytest.raises(HarmonyFormatError, match=where + r".*ends with <\|return\|>"):
        chat.read(tokens)
    with pytest.raises(HarmonyFormatError, match="EOS at position 0 is not the last"):
        chat.read([EOS, *tokens])
    assert issubclass(HarmonyFormatError, ValueError) and issubclass(
        HarmonyFormatError, AssertionError
    )
