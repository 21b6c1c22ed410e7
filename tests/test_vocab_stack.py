"""The whole stack on every vocabulary of the tokenizer panel, each checked against brute force.

For each real tokenizer (`tests/tokenizer_panel.py`), a tiny random LLaMA with
that vocabulary is saved as a local model directory (config, safetensors,
tokenizer files) and loaded as users load theirs, `load_model_by_name(path)`.
Then: trie masses equal a sum over tokens by prefix; the byte beam's logZ is
at least the canonical tokenization's log-prob and, on a short text, equals
the exact sum over every tokenization; a regex and a JSON-schema mask coerced
onto the vocabulary equal a walk over every token's bytes; an SMC run ends in
texts the regex accepts; and the views render that data. The big vocabularies
(over ~100k tokens) are marked slow.
"""

from __future__ import annotations

import asyncio
import math
from collections import defaultdict

import numpy as np
import pytest
import regex
import torch
from tokenizer_panel import copy_panel_tokenizer, panel_params, release_vocabulary_caches

from genlm_lab.backend import load_model_by_name, tiny
from genlm_lab.backend.models import _cached_tokenizer
from genlm_lab.bytes import BeamParams, ByteBeamState
from genlm_lab.bytes.lm_state import StatefulTokenizedLM
from genlm_lab.control import SMC, BoolFSA, Coerced, JsonSchema, PromptedLLM, direct_token_sampler
from genlm_lab.trie import TokenCharacterTrie
from genlm_lab.widgets import (
    ParticleView,
    beam_data,
    beam_html,
    mask_data_of,
    mask_html,
    particles_html,
    trie_data,
    trie_html,
)

PROSE = "The cat sat on the mat, then 42 dogs ran."
SHORT = b"the ca"  # short enough to enumerate every tokenization
DIGITS = r"[0-9]+( [a-z]+)?"
DIGITS_ALPHABET = b"0123456789 abcdefghijklmnopqrstuvwxyz"  # every byte DIGITS can match
# The whole stack on real vocabularies: make test runs it, make test-quick leaves it out.
pytestmark = pytest.mark.integration

SCHEMA = {
    "type": "object",
    "properties": {"n": {"type": "integer"}},
    "required": ["n"],
    "additionalProperties": False,
}


def run(coro):
    return asyncio.run(coro)


@pytest.fixture(scope="module", params=panel_params(big_marks=(pytest.mark.slow,)))
def lm(request, tmp_path_factory):
    """A 2-layer LLaMA of hidden size 16 with a panel tokenizer, std-0.3 weights, loaded by path.

    The directory gets the tokenizer's files, then `tiny_llama` sized by that
    tokenizer: ids can run past len(tokenizer) (vocabularies with holes) and a
    BOS-less model (Qwen) names its <|endoftext|> as its config's BOS. The
    tokenizer is the one `load_model_by_name` reads from the directory (cached
    per directory), so a 262k vocabulary's is parsed once, not twice. The view
    checks compare float32 trie masses summed over up to 262k tokens, hence their
    1e-4 relative tolerance. The per-vocabulary caches are emptied between
    vocabularies, so that a test process holds one of them at a time, and the
    log-prob cache keeps 128 vectors rather than 1,024 (1 GB at 262k tokens).
    """
    directory = copy_panel_tokenizer(request.param, tmp_path_factory.mktemp(request.param))
    tiny.tiny_llama(_cached_tokenizer(str(directory))).save_pretrained(directory)
    yield load_model_by_name(
        str(directory), backend="hf", llm_opts={"device": "cpu", "max_cache_logprobs": 128}
    )
    release_vocabulary_caches()


@pytest.fixture(scope="module")
def trie(lm):
    """The vocabulary's character trie, built once per vocabulary (the tests only read it)."""
    return TokenCharacterTrie(lm.byte_vocab)


def start_ids(lm) -> list[int]:
    """The context every layer starts from: [BOS], or nothing for a model without one."""
    return list(StatefulTokenizedLM.initial(lm).context)


def probs_after(lm, text: str) -> np.ndarray:
    ids = start_ids(lm) + lm.tokenizer.encode(text, add_special_tokens=False)
    return lm.next_token_logprobs_sync(ids).double().exp().numpy()


# ---------------------------------------------------------------- trie


def prefix_sums(words: list[bytes], weights: np.ndarray, prefixes: list[bytes]) -> np.ndarray:
    """Each prefix's sum of `weights` over the words that start with it, by sorting and ranges.

    Hex spelling keeps byte order (each byte is two of the characters 0-9a-f, in order)
    and holds no NUL, which numpy's fixed-width strings would drop. The words starting
    with P are then one range of the sorted spellings: from P's hex up to P's hex
    followed by "g"s (above every hex digit); `np.add.reduceat` sums each range.
    """
    spelled = np.array([w.hex().encode() for w in words])
    order = np.argsort(spelled, kind="stable")
    spelled = spelled[order]
    keys = np.array([q.hex().encode() for q in prefixes])
    keys = keys.astype(f"S{max(keys.itemsize, spelled.itemsize) + 1}")
    lo = np.searchsorted(spelled, keys)
    ends = keys.view(np.uint8).reshape(len(keys), -1).copy()
    ends[ends == 0] = ord("g")
    hi = np.searchsorted(spelled, ends.view(keys.dtype).ravel())
    bounds = np.empty(2 * len(prefixes), dtype=np.int64)
    bounds[0::2], bounds[1::2] = lo, hi
    sums = np.add.reduceat(np.append(weights[order], 0.0), bounds)[0::2]
    return np.where(hi > lo, sums, 0.0)


def test_prefix_sums_is_a_sum_over_words_by_prefix():
    words = [b"ab", b"a", b"", b"b\xff", b"ab\x00", b"abc", b"b"]
    weights = np.arange(1.0, 8.0)
    prefixes = [b"", b"a", b"ab", b"abc", b"b", b"b\xff", b"c", b"ab\x00", b"\xff"]
    want = [
        sum(w for x, w in zip(words, weights, strict=True) if x.startswith(q)) for q in prefixes
    ]
    np.testing.assert_array_equal(prefix_sums(words, weights, prefixes), want)


def test_trie_masses_equal_sums_over_tokens_by_prefix(lm, trie):
    p = probs_after(lm, "The")
    mass = trie.weight_sum(p)
    is_leaf = np.zeros(trie.n_nodes, dtype=bool)
    is_leaf[list(trie.leaf2token_id)] = True
    inner = np.flatnonzero(~is_leaf)
    got = mass[inner]
    words = [bytes(token) for token in lm.byte_vocab]
    want = prefix_sums(words, p, [trie.node2prefix[n] for n in inner])
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    leaf_nodes = np.fromiter(trie.leaf2token_id.keys(), dtype=np.int64)
    token_ids = np.fromiter(trie.leaf2token_id.values(), dtype=np.int64)
    np.testing.assert_allclose(mass[leaf_nodes], p[token_ids], rtol=1e-12, atol=1e-15)
    # the root holds every token's mass; a float32 softmax over 100k+ ids sums to 1 within ~2e-5
    assert mass[trie.root] == pytest.approx(float(np.sum(p, dtype=np.float64)), rel=1e-9)
    assert mass[trie.root] == pytest.approx(1.0, abs=1e-4)


# ---------------------------------------------------------------- byte beam


async def canonical_logprob(lm, text: str) -> tuple[bytes, float]:
    """The bytes of the tokenizer's own encoding of `text` and that token sequence's log-prob."""
    ids = lm.tokenizer.encode(text, add_special_tokens=False)
    ctx, total = start_ids(lm), 0.0
    for t in ids:
        total += float((await lm.next_token_logprobs(ctx))[t])
        ctx = ctx + [t]
    return b"".join(bytes(lm.byte_vocab[t]) for t in ids), total


async def exact_prefix_logprob(lm, text: bytes) -> float:
    """log P(the byte string starts with `text`), summed over every tokenization.

    Each token sequence is counted at its shortest prefix whose bytes cover
    `text`: complete tokens spelling text[:j] (j < len), then one token whose
    bytes start with text[j:].
    """
    exact_at = defaultdict(list)  # byte offset -> ids spelling text[offset:offset + len]
    covers = defaultdict(list)  # byte offset -> ids whose bytes start with text[offset:]
    offsets = defaultdict(list)  # byte -> the offsets j where text[j] is that byte
    for j, c in enumerate(text):
        offsets[c].append(j)
    for i, t in enumerate(lm.byte_vocab):
        # both tests below need a nonempty token whose first byte is text[j]
        for j in offsets.get(t[0], ()) if len(t) > 0 else ():
            b = bytes(t)
            if b.startswith(text[j:]):
                covers[j].append(i)
            elif text.startswith(b, j):
                exact_at[j].append(i)
    terms = []
    stack = [(0, start_ids(lm), 0.0)]
    while stack:
        j, ctx, lp = stack.pop()
        row = (await lm.next_token_logprobs(ctx)).double()
        if covers[j]:
            terms.append(lp + float(torch.logsumexp(row[covers[j]], 0)))
        for i in exact_at[j]:
            stack.append((j + len(lm.byte_vocab[i]), ctx + [i], lp + float(row[i])))
    return float(torch.logsumexp(torch.tensor(terms, dtype=torch.float64), 0))


async def test_beam_logZ_bounds_the_canonical_tokenization(lm):
    data, canonical = await canonical_logprob(lm, PROSE)
    beam = await ByteBeamState.initial(lm, BeamParams(K=5))
    beam = await beam.prefill(data)
    assert math.isfinite(beam.logZ)
    assert beam.logZ >= canonical - 1e-4


async def test_wide_beam_is_exact_on_a_short_text(lm):
    exact = await exact_prefix_logprob(lm, SHORT)
    beam = await ByteBeamState.initial(lm, BeamParams(K=1000))
    beam = await beam.prefill(SHORT)
    assert beam.logZ == pytest.approx(exact, abs=1e-4)
    html = beam_html(beam_data(beam.history, SHORT))
    assert html.count("<tr class='genlm-") == len(beam.history[-1].to_dict()["candidates"])


# ---------------------------------------------------------------- control


def regex_alive(pattern, data: bytes) -> bool:
    return pattern.fullmatch(data, partial=True) is not None


def in_alphabet(vocab, special: set[int]) -> list[int]:
    """The non-special indices whose bytes all fall in DIGITS_ALPHABET.

    A match of DIGITS spends each byte on one of its classes, so a token holding
    any other byte is dead after every context: only these need the regex.
    """
    return [
        i
        for i, t in enumerate(vocab)
        if i not in special and not bytes(t).translate(None, DIGITS_ALPHABET)
    ]


def test_regex_mask_equals_every_tokens_bytes_walked(lm):
    llm = PromptedLLM(lm)
    coerced = BoolFSA.from_regex(DIGITS).coerce(llm, f=b"".join)
    pattern = regex.compile(DIGITS.encode())
    special = set(llm.special_indices())
    by_bytes = {}
    for t in llm.vocab:
        by_bytes.setdefault(bytes(t), t)
    four, space = by_bytes[b"4"], by_bytes[b" "]  # every vocabulary spells these
    candidates = in_alphabet(llm.vocab, special)
    for context in ([], [four], [four, four], [four, space]):
        prefix = b"".join(bytes(t) for t in context)
        mask = coerced.allowed(context)
        outside = set(range(256)) - set(DIGITS_ALPHABET)
        assert not any(regex_alive(pattern, prefix + bytes([c])) for c in outside)
        want = np.zeros(len(llm.vocab), dtype=bool)
        for i in candidates:
            want[i] = regex_alive(pattern, prefix + bytes(llm.vocab[i]))
        assert want.any()
        np.testing.assert_array_equal(mask[:-1], want)
        assert mask[-1] == (pattern.fullmatch(prefix) is not None)


def test_json_mask_equals_the_byte_level_walk_of_every_token(lm):
    llm = PromptedLLM(lm)
    schema = JsonSchema(SCHEMA)
    fast = schema.coerce(llm, f=b"".join)
    slow = Coerced(schema, llm.vocab, f=b"".join)  # walks the byte trie, byte by byte
    special = set(llm.special_indices())
    by_bytes = {}
    for t in llm.vocab:
        by_bytes.setdefault(bytes(t), t)
    spelled = [by_bytes[b] for b in (b"{", b'"', b"n")]  # every vocabulary spells these
    assert len(spelled) == 3
    for k in range(len(spelled) + 1):
        context = spelled[:k]
        got = run(fast.logw_next(context)).weights[:-1] == 0
        want = run(slow.logw_next(context)).weights[:-1] == 0
        want[list(special)] = False
        assert want.any()
        np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------- SMC and views


async def test_smc_ends_in_accepted_texts_and_the_views_show_them(lm, trie):
    llm = PromptedLLM(lm, prompt_ids=start_ids(lm))
    constraint = BoolFSA.from_regex(DIGITS).coerce(llm, f=b"".join)
    seqs = await SMC(direct_token_sampler(llm * constraint))(
        n_particles=4, ess_threshold=0.5, max_tokens=6, seed=0
    )
    pattern = regex.compile(DIGITS.encode())
    alive = [(ctx, w) for ctx, w in seqs if w > -math.inf]
    assert alive, "every particle died"
    for ctx, _ in alive:
        text = b"".join(bytes(t) for t in ctx if isinstance(t, bytes))
        assert pattern.fullmatch(text) is not None, text
    data = ParticleView.from_record(seqs.record.to_json()).view_data()
    assert sorted(p["text"] for p in data["particles"]) == sorted(seqs.texts())
    html = particles_html(data)
    assert all(
        f"<tr class='genlm-{p['state']}' data-index='{p['index']}'>" in html
        for p in data["particles"]
    )

    # the mask view of the first step: what the brute force allows, and its mass
    p = probs_after(lm, "")
    special = set(llm.special_indices())
    allowed = [
        i for i in in_alphabet(llm.vocab, special) if regex_alive(pattern, bytes(llm.vocab[i]))
    ]
    mdata, _ = await mask_data_of(llm * constraint, [], top_k=5)
    assert mdata["n_allowed"] == len(allowed)
    want_mass = sum(p[int(llm.vocab[i].token_id)] for i in allowed)
    assert mdata["allowed_mass"] == pytest.approx(want_mass, rel=1e-4)
    assert "<table" in mask_html(mdata)

    # the trie view under b"a": its mass, and its heaviest children
    tdata = trie_data(trie, p, b"a", depth=1, top_k=3, draw=False)
    root, *children = tdata["nodes"]
    assert root["prob"] == pytest.approx(
        sum(w for t, w in zip(lm.byte_vocab, p, strict=True) if bytes(t).startswith(b"a")), rel=1e-4
    )  # the view sums float32 masses over up to 262k ids: relative error ~1e-5 on peaked models
    by_byte: dict[bytes, float] = defaultdict(float)
    for t, w in zip(lm.byte_vocab, p, strict=True):
        if bytes(t).startswith(b"a") and len(bytes(t)) > 1:
            by_byte[bytes(t)[:2]] += w
    heaviest = sorted(by_byte.values(), reverse=True)[: len(children)]
    assert [c["prob"] for c in children] == pytest.approx(heaviest, rel=1e-4)
    html = trie_html(tdata)
    assert all(c["label"] in html for c in children)
