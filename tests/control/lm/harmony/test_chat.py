"""HarmonyChat on gpt-oss's own vocabulary, against OpenAI's Harmony parser and main's examples.

The token ids of the specials and channel names, and the channels of random
turns cut at every token, are compared with openai-harmony's (which reads the
same vocabulary); genlm-control main's shipped examples (real gpt-oss output)
segment into the channels they list. Bad input is refused by name.
"""

from __future__ import annotations

import json
import random

import pytest

from genlm_lab.control import EOS
from genlm_lab.control.lm.harmony import HarmonyChat
from genlm_lab.errors import HarmonyFormatError
from tests.control.lm.harmony._chats import random_turn
from tests.control.lm.harmony._gptoss import EXAMPLES, parse_with_openai_harmony
from tests.control.lm.harmony._toy import toy_tokenizer

SPECIALS = ["<|start|>", "<|channel|>", "<|message|>", "<|end|>", "<|call|>", "<|return|>"]


def test_specials_and_channel_names_are_openai_harmonys_tokens(gptoss_chat, openai_encoding):
    chat, enc = gptoss_chat, openai_encoding
    ours = {
        t: [chat.specials[n].token_id]
        for n, t in zip(
            ["start", "channel", "message", "end", "call", "return"], SPECIALS, strict=True
        )
    }
    ours["<|constrain|>"] = [chat.constrain_token.token_id]
    ours |= {
        "analysis": [t.token_id for t in chat.analysis_tokens],
        "commentary": [t.token_id for t in chat.commentary_tokens],
        "final": [t.token_id for t in chat.final_tokens],
    }
    theirs = {text: enc.encode(text, allowed_special="all") for text in ours}
    assert ours == theirs
    # the closers are openai-harmony's stop tokens; EOS (<|return|>) alone leaves the vocabulary
    assert set(enc.stop_tokens()) == {
        chat.end_token.token_id,
        chat.call_token.token_id,
        chat.return_token.token_id,
    }
    assert len(chat.potential_vocab) == len(chat.token_maps.decode) - 1
    assert chat.return_token not in set(chat.potential_vocab)


def _content_text(chat: HarmonyChat, content: list) -> str:
    return b"".join(bytes(t) for t in content).decode("utf-8")


def test_channels_of_every_cut_of_random_turns_agree_with_openai_harmony(
    gptoss_chat, openai_encoding
):
    chat, enc, rng = gptoss_chat, openai_encoding, random.Random(1)
    disagree, cuts = [], 0
    for _ in range(60):
        ids = enc.encode(random_turn(rng, loose_formats=False), allowed_special="all")
        if not chat.validate_harmony_format(chat.decode_tokens(ids)):
            continue  # a wrong closer: openai-harmony reads it anyway
        for k in range(1, len(ids) + 1):
            tokens = chat.decode_tokens(ids[:k])
            reading = chat.read(tokens)
            try:
                ours_done = [
                    (m.channel, m.recipient, _content_text(chat, tokens[m.start : m.stop]))
                    for m in reading.messages
                    if m.stop is not None
                ]
                open_ = reading.open_message()
                ours_open = (
                    None
                    if open_ is None
                    else (open_.channel, _content_text(chat, tokens[open_.start :]))
                )
            except UnicodeDecodeError:
                continue  # cut inside a character: openai-harmony holds its bytes back
            cuts += 1
            if (ours_done, ours_open) != parse_with_openai_harmony(enc, ids[:k]):
                disagree.append(enc.decode(ids[:k]))
    assert disagree == []
    assert cuts > 450


@pytest.mark.skipif(
    not EXAMPLES.is_file(),
    reason=f"genlm-control main's examples are not at {EXAMPLES} (scripts/conformance_main.py says how to save them)",
)
def test_main_examples_segment_into_the_channels_they_list(gptoss_chat, openai_encoding):
    chat, tokenizer = gptoss_chat, gptoss_chat.tokenizer
    samples = json.loads(EXAMPLES.read_text(encoding="utf-8"))["samples"]
    wrong = []
    for sample in samples:
        found = chat.extract_harmony_channels_from_string(sample["full_response"])
        got = {
            c: v
            and {
                "content": tokenizer.decode(chat.encode_tokens(v["content"])),
                "is_prefix": v["is_prefix"],
            }
            for c, v in found.items()
        }
        want = {c: sample["channels"].get(c) for c in found}
        if got != want:
            wrong.append(sample["sample_id"])
    assert wrong == []
    assert len(samples) == 10


def test_a_trailing_eos_closes_the_final_channel_and_content_is_cut_at_the_closer(gptoss_chat):
    chat = gptoss_chat
    tokens = chat.decode_tokens(
        chat.tokenizer.encode(
            "<|channel|>analysis<|message|>a b<|end|><|start|>assistant<|channel|>final<|message|>yes"
        )
    )
    message_at = [i for i, t in enumerate(tokens) if t == chat.message_token]
    first = chat.extract_channel_content(tokens, message_at[0])
    assert _content_text(chat, first["content"]) == "a b" and first["is_prefix"] is False
    assert chat.extract_channel_content(tokens, message_at[1])["is_prefix"] is True
    assert chat.extract_channel_content(tokens, len(tokens)) is None
    with pytest.raises(HarmonyFormatError, match="is not <\\|message\\|>"):
        chat.extract_channel_content(tokens, 0)
    ended = chat.extract_harmony_channels_from_tokens([*tokens, EOS])
    assert ended["final"] == {"content": tokens[message_at[1] + 1 :], "is_prefix": False}
    assert ended["commentary"] is None


def test_bad_chats_raise_what_genlm_control_raises_and_validate_says_false(gptoss_chat):
    chat = gptoss_chat
    bad = [
        "<|channel|>analysis<|end|>aaabbb<|end|>",
        "<|channel|>astronomy<|message|>aaabbb<|end|>",
        "<|channel|>final<|message|>x<|end|>",
        "<|channel|>analysis<|message|>x<|end|><|start|>assistant<|channel|>analysis",
    ]
    for text in bad:
        with pytest.raises(
            AssertionError, match="no part of a Harmony chat"
        ):  # main raises AssertionError
            chat.extract_harmony_channels_from_string(text)
    assert [chat.validate_harmony_format(t) for t in bad] == [False] * 4
    assert chat.validate_harmony_format(
        "<|channel|>commentary to=functions.f <|constrain|>json<|message|>{}<|call|>"
    )
    with pytest.raises(TypeError, match="string or a list of tokens"):
        chat.validate_harmony_format(b"<|channel|>")


def test_token_ids_round_trip_and_bad_ids_and_tokens_are_named(gptoss_chat):
    chat = gptoss_chat
    ids = chat.tokenizer.encode("<|channel|>final<|message|>Hé ☃")
    tokens = chat.decode_tokens(ids)
    assert chat.encode_tokens(tokens) == ids
    assert (
        chat.encode_tokens([bytes(t) for t in tokens]) == ids
    )  # by bytes: the first id that spells them
    with pytest.raises(ValueError, match="not an id of this vocabulary"):
        chat.decode_tokens([len(chat.token_maps.decode)])
    with pytest.raises(ValueError, match="not an id of this vocabulary"):
        chat.decode_tokens([1.5])
    with pytest.raises(ValueError, match="in no token's bytes"):
        chat.encode_tokens([b"\xff\xfe not one token"])
    with pytest.raises(TypeError, match="token 0 is a int"):
        chat.encode_tokens([3])


def test_tokenizers_without_the_harmony_specials_are_refused_by_name():
    with pytest.raises(TypeError, match="encode and decode; object has no encode or decode"):
        HarmonyChat(object())
    with pytest.raises(ValueError, match=r"<\|start\|>, <\|channel\|>.* more than one token"):
        HarmonyChat(toy_tokenizer(with_specials=False))
