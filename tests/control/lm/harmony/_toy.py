"""A toy tokenizer that writes the Harmony format, for exact tests over its whole vocabulary.

A byte-level BPE of a few hundred tokens trained here on Harmony headers, with
the seven Harmony specials as single tokens and `<|return|>` as EOS (as in
gpt-oss's o200k_harmony), plus one special the format gives no role
(`<|endoftext|>`). Small enough that every token of every next-token row can
be checked against `prefix` differences.
"""

from __future__ import annotations

from functools import cache
from typing import Any

HARMONY_SPECIALS = [
    "<|start|>",
    "<|channel|>",
    "<|message|>",
    "<|end|>",
    "<|call|>",
    "<|return|>",
    "<|constrain|>",
]
_CORPUS = [
    "assistant analysis commentary final",
    "assistant to=functions.f analysis to=functions.get json",
    "commentary to=functions.f json final ab aab aaab abab",
]


@cache
def toy_tokenizer(with_specials: bool = True, eos: str = "<|return|>") -> Any:
    """The toy tokenizer (cached: treat it as read-only); without the Harmony specials if
    asked (its EOS is then `<|endoftext|>`), or with another EOS (`<|return|>` then
    stays in the vocabulary)."""
    from transformers import PreTrainedTokenizerFast

    if with_specials and eos != "<|return|>":
        return PreTrainedTokenizerFast(tokenizer_object=_trained(True), eos_token=eos)
    return PreTrainedTokenizerFast(
        tokenizer_object=_trained(with_specials),
        eos_token="<|return|>" if with_specials else "<|endoftext|>",
    )


@cache
def _trained(with_specials: bool) -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    specials = [*HARMONY_SPECIALS, "<|endoftext|>"] if with_specials else ["<|endoftext|>"]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=256 + len(specials) + 40,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_CORPUS * 20, trainer)
    return tok
