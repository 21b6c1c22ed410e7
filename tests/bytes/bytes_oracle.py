"""Exact answers for byte-level beams over a `ToyLM`, by recursive enumeration.

A generation is a token sequence; its byte string is the concatenation of its
non-EOS tokens, and it stops at the first EOS token. These functions sum, over
all token sequences, the probability that the byte string starts with (or is
exactly) a given text. Every recursive call consumes at least one byte of the
text (tokens are non-empty), so the recursion depth is at most len(text).
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np

from genlm_lab.backend.toy import ToyLM


def token_probs(lm: ToyLM, context: tuple[int, ...]) -> np.ndarray:
    return np.exp(lm.next_token_logprobs_sync(context).double().numpy())


def make_oracle(lm: ToyLM, eos_ids: tuple[int, ...] = ()):
    """(prefix_prob, end_prob) functions of (context, text) for this LM.

    prefix_prob: P(the byte string starts with text).
    end_prob: P(the byte string is exactly text and then EOS is generated).
    """
    vocab = [bytes(t) for t in lm.byte_vocab]
    eos = set(eos_ids)

    @cache
    def probs(context):
        return token_probs(lm, context)

    @cache
    def prefix_prob(context: tuple[int, ...], text: bytes) -> float:
        if not text:
            return 1.0
        p = probs(context)
        total = 0.0
        for t, tok in enumerate(vocab):
            if t in eos:
                continue
            if text.startswith(tok):
                total += p[t] * prefix_prob(context + (t,), text[len(tok) :])
            elif tok.startswith(text):
                total += p[t]
        return total

    @cache
    def end_prob(context: tuple[int, ...], text: bytes) -> float:
        p = probs(context)
        if not text:
            return float(sum(p[t] for t in eos))
        total = 0.0
        for t, tok in enumerate(vocab):
            if t not in eos and text.startswith(tok):
                total += p[t] * end_prob(context + (t,), text[len(tok) :])
        return total

    return prefix_prob, end_prob


def log(x: float) -> float:
    return math.log(x) if x > 0 else -math.inf
