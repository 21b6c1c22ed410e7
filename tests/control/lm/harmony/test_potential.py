"""HarmonyPotential: exact next-token weights, the base's weights per channel, bad input.

On the toy tokenizer every token of every next-token row along a turn is
checked against `prefix` differences (and EOS against `complete`). On gpt-oss's
vocabulary, genlm-control main's tests with a weighted grammar over `a` and
`b`, whose weights have a closed form (`a^n b a^n` weighs 0.9^n 0.1; a prefix
`a^k` weighs 0.9^k, `a^k b a^j` with j <= k weighs 0.9^k 0.1): the turn's
weight is the sum of its constrained channels', and the next-token rows equal
the closed form's ratios on all 200k tokens, the closing mass on the token
that closes each channel.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from genlm_lab.control import (
    EOS,
    SMC,
    WCFG,
    BoolFSA,
    Coerced,
    HarmonyChat,
    HarmonyPotential,
    Potential,
    PromptedLLM,
    direct_token_sampler,
)
from tests.control.lm.harmony._gptoss import parse_with_openai_harmony
from tests.control.lm.harmony._toy import toy_tokenizer


def grammar(p: float) -> str:
    """`a^n b a^n` with weight p^n 0.1: a total of 0.1 / (1 - p), 1 for p = 0.9."""
    return f"{p}: S -> a S a\n0.1: S -> b"


def closed_form(text: str, whole: bool, p: float = 0.9) -> float:
    """log weight of `text` in `grammar(p)`: as a whole string, or summed over its completions."""
    found = re.fullmatch("(a*)(?:(b)(a*))?", text)
    if found is None:
        return -math.inf
    k, has_b, j = len(found.group(1)), found.group(2), len(found.group(3) or "")
    if not has_b:
        return -math.inf if whole else k * math.log(p) + math.log(0.1 / (1 - p))
    if j > k or (whole and j != k):
        return -math.inf
    return k * math.log(p) + math.log(0.1)


def grammar_on(chat: HarmonyChat, p: float = 0.9) -> Coerced:
    """The grammar over the chat's tokens (each token its bytes; prune=False keeps them all)."""
    return Coerced(WCFG.from_string(grammar(p)), chat.potential_vocab, f=b"".join, prune=False)


def tokens_of(chat: HarmonyChat, text: str) -> list:
    return chat.decode_tokens(chat.tokenizer.encode(text, add_special_tokens=False))


@pytest.fixture(scope="module")
def toy() -> HarmonyChat:
    return HarmonyChat(toy_tokenizer())


@pytest.fixture(scope="module")
def gptoss_grammar(gptoss_chat) -> Coerced:
    return grammar_on(gptoss_chat)


TURN = (
    "<|channel|>analysis<|message|>aabaa<|end|><|start|>assistant to=functions.f<|channel|>"
    "commentary <|constrain|>json<|message|>{}<|call|><|start|>assistant<|channel|>final<|message|>aba"
)


async def test_every_next_token_weight_along_a_turn_is_a_prefix_difference(toy):
    # EOS is <|return|> (gpt-oss's), then <|endoftext|>: <|return|> a token that ends the turn
    other_eos = HarmonyChat(toy_tokenizer(eos="<|endoftext|>"))
    states, turns = set(), 0
    for chat, ending in ((toy, ""), (other_eos, "<|return|>")):
        # p = 0.5: the empty text weighs 0.2, what opening a constrained message costs
        harmony = HarmonyPotential(grammar_on(chat, 0.5), chat, ["analysis", "final"])
        tokens = tokens_of(chat, TURN + ending)
        for k in range(len(tokens) + 1):
            await harmony.assert_logw_next_consistency(tokens[:k])  # every token and EOS
            states.add(chat.read(tokens[:k]).state)
        await harmony.assert_autoreg_fact(tokens)
        complete = await harmony.complete(tokens)
        assert complete == pytest.approx(
            closed_form("aabaa", True, 0.5) + closed_form("aba", True, 0.5)
        )
        turns += 1
    assert states == {"between", "role", "header", "content", "over"} and turns == 2


async def test_a_turn_weighs_what_its_constrained_channels_weigh(gptoss_chat, gptoss_grammar):
    texts = {"analysis": "aaaabaaaa", "commentary": "aba", "final": "aaa"}
    turn = tokens_of(
        gptoss_chat,
        f"<|channel|>analysis<|message|>{texts['analysis']}<|end|><|start|>assistant"
        f"<|channel|>commentary<|message|>{texts['commentary']}<|end|><|start|>assistant"
        f"<|channel|>final<|message|>{texts['final']}",
    )
    checked = 0
    for channels in (["analysis"], ["commentary"], ["final"], ["analysis", "commentary", "final"]):
        harmony = HarmonyPotential(gptoss_grammar, gptoss_chat, channels)
        # closed messages weigh as complete strings, the open one as a prefix; EOS closes it
        prefix = sum(closed_form(texts[c], c != "final") for c in channels)
        complete = sum(closed_form(texts[c], True) for c in channels)
        assert await harmony.prefix(turn) == pytest.approx(prefix)
        # final "aaa" is no whole string: -inf where final is constrained
        assert await harmony.complete(turn) == pytest.approx(complete)
        checked += 1
    assert checked == 4


async def test_next_token_rows_are_the_grammars_ratios_on_every_token(gptoss_chat, gptoss_grammar):
    harmony = HarmonyPotential(gptoss_grammar, gptoss_chat, ["analysis", "commentary", "final"])
    end = harmony.lookup[gptoss_chat.end_token]
    rows = 0
    for text in ("aaa", "aaabaaa"):
        before = closed_form(text, False)
        grown = [closed_form(text + bytes(t).decode("latin-1"), False) for t in harmony.vocab]
        for channel in ("analysis", "commentary", "final"):
            context = tokens_of(gptoss_chat, f"<|channel|>{channel}<|message|>{text}")
            row = (await harmony.logw_next(context)).weights
            want = np.array([*grown, -math.inf]) - before
            # the string's end: on <|end|> in analysis and commentary, on EOS (<|return|>) in final
            closer = -1 if channel == "final" else end
            want[closer] = closed_form(text, True) - before
            assert np.array_equal(np.isfinite(row), np.isfinite(want))
            assert np.allclose(row[np.isfinite(row)], want[np.isfinite(want)])
            rows += 1
    # after a whole string, the closer is all that is left
    assert np.logaddexp.reduce(row) == pytest.approx(0.0) and row[closer] == pytest.approx(0.0)
    assert rows == 6


async def test_tokens_that_break_the_format_weigh_zero_in_a_free_channel(
    gptoss_chat, gptoss_grammar
):
    harmony = HarmonyPotential(gptoss_grammar, gptoss_chat, ["final"])
    context = tokens_of(gptoss_chat, "<|channel|>analysis<|message|>free text")
    row = await harmony.logw_next(context)
    chat = gptoss_chat
    assert [
        row[t] for t in (chat.start_token, chat.channel_token, chat.message_token, chat.call_token)
    ] == [-math.inf] * 4
    assert row[chat.end_token] == 0.0 and row[EOS] == -math.inf  # analysis ends with <|end|>
    assert np.count_nonzero(row.weights == 0.0) == len(harmony.vocab) - 4  # the rest is free
    broken = [*context, chat.start_token]
    assert await harmony.prefix(broken) == -math.inf and await harmony.complete(broken) == -math.inf


async def test_bad_input_is_refused_by_name(toy):
    base = grammar_on(toy)
    with pytest.raises(ValueError, match="non-empty"):
        HarmonyPotential(base, toy, [])
    with pytest.raises(ValueError, match="non-empty"):
        HarmonyPotential(base, toy, "final")
    with pytest.raises(ValueError, match="Invalid channel names: \\['invalid'\\]"):
        HarmonyPotential(base, toy, ["final", "invalid"])
    with pytest.raises(ValueError, match="2 tokens of the base potential are no tokens"):
        HarmonyPotential(
            WCFG.from_string(grammar(0.9)), toy, ["final"]
        )  # its tokens are bytes 97, 98
    harmony = HarmonyPotential(base, toy, ["final"])
    with pytest.raises(ValueError, match="weight zero under `prefix`.*no part of a Harmony chat"):
        await harmony.logw_next(tokens_of(toy, "<|message|>"))
    with pytest.raises(ValueError, match="final channel has weight zero"):
        await harmony.logw_next(tokens_of(toy, "<|channel|>final<|message|>bb"))


class Nudge(Potential):
    """A unigram preference: `gain` more log-weight for each favoured token and for EOS."""

    def __init__(self, vocabulary: list, favoured: list, gain: float) -> None:
        super().__init__(vocabulary)
        self.row = np.zeros(len(self.vocab_eos))
        self.row[[*(self.lookup[t] for t in favoured), -1]] = gain

    async def prefix(self, context: list) -> float:
        return float(sum(self.row[self.lookup[t]] for t in context))

    async def complete(self, context: list) -> float:
        return await self.prefix(context) + self.row[-1]

    async def logw_next(self, context: list):
        return self.make_lazy_weights(self.row.copy())


@pytest.mark.slow  # a 200k-row model, llguidance's tables of the vocabulary: ~4 s
async def test_smc_on_a_tiny_random_gpt_oss_writes_turns_openai_harmony_reads(
    gptoss_chat, openai_encoding
):
    from genlm_lab.backend.hf import AsyncTransformer
    from genlm_lab.backend.tiny import tiny_llama

    chat, tokenizer = gptoss_chat, gptoss_chat.tokenizer
    model = AsyncTransformer(
        tiny_llama(tokenizer), tokenizer, byte_vocab=chat.token_maps.decode, max_cache_logprobs=64
    )
    llm = PromptedLLM(model)
    llm.set_prompt_from_str("<|start|>user<|message|>Say ab.<|end|><|start|>assistant")
    final_ab = BoolFSA.from_regex("(ab)+").coerce(llm, f=b"".join, prune=False)
    harmony = HarmonyPotential(final_ab, chat, ["final"])
    assert harmony.vocab == llm.vocab  # both leave out EOS, <|return|>
    # random weights wander; a strong unigram nudge toward one turn's tokens keeps runs short
    nudge = Nudge(llm.vocab, tokens_of(chat, "<|channel|>final<|message|>ab"), gain=60.0)
    sequences = await SMC(direct_token_sampler(llm * nudge * harmony))(
        n_particles=4, ess_threshold=0.5, max_tokens=8
    )
    read = []
    for context, weight in zip(sequences.contexts, sequences.log_weights, strict=True):
        assert weight > -math.inf and context[-1] is EOS
        ids = chat.encode_tokens(context[:-1]) + [chat.return_token.token_id]  # EOS is <|return|>
        read.append(parse_with_openai_harmony(openai_encoding, ids))
    texts = [done[-1][2] for done, open_ in read if open_ is None and done[-1][0] == "final"]
    assert len(texts) == 4 and all(re.fullmatch("(ab)+", t) for t in texts)
