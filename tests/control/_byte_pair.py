"""A toy pair of language models with different tokenizers, and their exact byte-level laws.

Both write texts over the bytes "a" and "b" but tokenize them differently and
end on different EOS tokens, which is what a byte-level ensemble is for. The
exact probabilities come from `tests/bytes/bytes_oracle.py`, which sums over
every token sequence (no beam), so they are independent of `ByteBeamState`.
"""

from __future__ import annotations

import itertools
import math

from genlm_lab.backend import ToyLM
from genlm_lab.control.potential.logops import convert_to_weighted_logop
from tests.bytes.bytes_oracle import make_oracle

VOCAB_1 = [b"a", b"b", b"ab", b"$"]  # EOS "$"
VOCAB_2 = [b"a", b"b", b"ba", b"bb", b"<e>"]  # EOS "<e>"
K = 64  # wider than any beam of these models up to a few bytes: no candidate is pruned


def toy_pair() -> tuple[ToyLM, ToyLM]:
    return ToyLM(VOCAB_1, eos=b"$", seed=1), ToyLM(VOCAB_2, eos=b"<e>", seed=2)


def oracles(lm1: ToyLM, lm2: ToyLM) -> list:
    """`(prefix_prob, end_prob)` of each model, as functions of a text (bytes)."""
    out = []
    for lm in (lm1, lm2):
        prefix, end = make_oracle(lm, (len(lm.byte_vocab) - 1,))
        out.append((lambda text, f=prefix: f((), text), lambda text, f=end: f((), text)))
    return out


def texts(max_bytes: int) -> list[bytes]:
    """Every text over "a" and "b" of at most `max_bytes` bytes (the only bytes either model writes)."""
    return [bytes(t) for n in range(max_bytes + 1) for t in itertools.product(b"ab", repeat=n)]


def log(x: float) -> float:
    return math.log(x) if x > 0 else -math.inf


def exact_target(lm1: ToyLM, lm2: ToyLM, op: str, a: float, max_bytes: int) -> dict[bytes, float]:
    """The ensemble's unnormalised weight `op(P_1(x EOS), P_2(x EOS))` of every text x."""
    mean = convert_to_weighted_logop(op, a)
    (_, end1), (_, end2) = oracles(lm1, lm2)
    return {x: math.exp(mean(log(end1(x)), log(end2(x)))) for x in texts(max_bytes)}


def cut_target(lm1: ToyLM, lm2: ToyLM, op: str, a: float, max_bytes: int) -> dict[bytes, float]:
    """The wrong target of a run that cuts texts at `max_bytes` without weighing the EOS it
    forces there (texts of that length weighed as prefixes): what the tests must tell apart."""
    mean = convert_to_weighted_logop(op, a)
    (pre1, end1), (pre2, end2) = oracles(lm1, lm2)
    out = {}
    for x in texts(max_bytes):
        p1, p2 = (pre1(x), pre2(x)) if len(x) == max_bytes else (end1(x), end2(x))
        out[x] = math.exp(mean(log(p1), log(p2)))
    return out
