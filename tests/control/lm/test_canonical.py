"""CanonicalTokenization allows a token pair exactly when the tokenizer itself produces it.

The reference is always the tokenizer's own code (the `tokenizers` library):
its BPE model on the joined pieces where no pre-tokenizer splits text, and
its full `encode` of texts around the pair where one does (SmolLM2's GPT-2
regex): a pair is canonical iff some text `p + a + b + c` encodes to the
tokens of `p`, then `a`, `b`.
"""

from __future__ import annotations

import asyncio
import math
import random

import numpy as np
import pytest
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

from genlm_lab.backend import load_model_by_name
from genlm_lab.backend.models import load_tokenizer
from genlm_lab.control import CanonicalTokenization, PromptedLLM
from genlm_lab.control.lm import canonical as canonical_module
from genlm_lab.control.lm.canonical import FastCanonicalityFilterBPE, _extract_bpe_merges
from genlm_lab.tokenization import Token

CORPUS = [
    "the cat sat on the mat; the dog's bone isn't there.\n",
    "  indented  text,\twith tabs\n\nand blank lines... that's it!\n",
    "tokenization tokenizes tokens: token, tokens, tokenized (tokenizer's).\n",
    "aaa aaaa aaaaa bbb abab ababab 123 1234 12345 x=1+2*3\n",
] * 20

LEFT_CONTEXTS = ["", "!", "x", " ", "\n", "1", "),"]
RIGHT_CONTEXTS = ["", "x", "\n", " ", "!", "1"]


def run(coro):
    return asyncio.run(coro)


def small_tokenizer(use_regex: bool) -> PreTrainedTokenizerFast:
    """A byte-level BPE of ~360 tokens trained here, with or without GPT-2's regex."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=use_regex)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=360,
        special_tokens=["<eos>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(CORPUS, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<eos>")


@pytest.fixture(scope="module")
def smol():
    tokenizer = load_tokenizer("default")
    return tokenizer, FastCanonicalityFilterBPE.from_tokenizer(tokenizer)


def text_of(f: FastCanonicalityFilterBPE, i: int) -> str | None:
    try:
        return bytes(f._decode[i]).decode("utf-8")
    except UnicodeDecodeError:
        return None


def occurs(tokenizer, pairs, texts) -> list[bool]:
    """For each pair: does some `p + a + b + c` encode to tokens(p), a, b, ...?"""
    prefix_ids = {
        p: tokenizer(p, add_special_tokens=False)["input_ids"] if p else [] for p in LEFT_CONTEXTS
    }
    combos = [(p, c) for p in LEFT_CONTEXTS for c in RIGHT_CONTEXTS]
    batch = [p + ta + tb + c for ta, tb in texts for p, c in combos]
    encoded = tokenizer(batch, add_special_tokens=False)["input_ids"]
    out = []
    for k, (a, b) in enumerate(pairs):
        rows = encoded[k * len(combos) : (k + 1) * len(combos)]
        found = False
        for (p, _), ids in zip(combos, rows, strict=True):
            n = len(prefix_ids[p])
            found |= ids[:n] == prefix_ids[p] and ids[n : n + 2] == [a, b]
        out.append(found)
    return out


def check_pairs(tokenizer, f, pairs):
    """The filter (pair test and mask row) against `occurs`; returns how many were checked."""
    pairs = [(a, b) for a, b in pairs if text_of(f, a) is not None and text_of(f, b) is not None]
    texts = [(text_of(f, a), text_of(f, b)) for a, b in pairs]
    expected = occurs(tokenizer, pairs, texts)
    wrong = [
        (f._decode[a], f._decode[b], want)
        for (a, b), want in zip(pairs, expected, strict=True)
        if f.allows(f._decode[a], f._decode[b]) != want or bool(f((None, f._decode[a]))[b]) != want
    ]
    assert not wrong, wrong[:10]
    return len(pairs)


@pytest.mark.slow
def test_smollm2_random_pairs_are_allowed_iff_the_tokenizer_produces_them(smol):
    tokenizer, f = smol
    rng = random.Random(0)
    special = set(range(17))  # SmolLM2's added tokens: split off before BPE
    pairs = []
    while len(pairs) < 500:
        a, b = rng.randrange(f.V), rng.randrange(f.V)
        if a not in special and b not in special:
            pairs.append((a, b))
    assert check_pairs(tokenizer, f, pairs) > 400


def test_smollm2_pairs_at_pre_tokenizer_boundaries(smol):
    """Whitespace runs, apostrophes and punctuation, where merges alone get it wrong."""
    tokenizer, f = smol
    vocab = tokenizer.get_vocab()
    edgy = [vocab[p] for p in ["Ġ", "ĠĠ", "ĠĠĠĠ", "Ċ", "ĊĊ", "ĉ", ".", "'", ".'", "),", "Ġ("]]
    rng = random.Random(1)
    others = edgy + [vocab[p] for p in ["'s", "'t", "s", "Ġs", "the", "Ġthe", "!", "1"]]
    others += [rng.randrange(17, f.V) for _ in range(40)]
    pairs = [(a, b) for a in edgy for b in others]
    assert check_pairs(tokenizer, f, pairs) > 500
    # the GPT-2 overrides genlm-control hard-codes follow from the regex: "\n" "\n" before a word
    nl = f._decode[vocab["Ċ"]]
    assert f.allows(nl, nl) and tokenizer.encode("\n\nA")[:2] == [vocab["Ċ"]] * 2


@pytest.mark.parametrize("use_regex", [False, True])
def test_small_tokenizer_every_pair(use_regex):
    """All pairs of a small trained BPE: exactly its own BPE model's verdict (no regex) or encode's."""
    tokenizer = small_tokenizer(use_regex)
    f = FastCanonicalityFilterBPE.from_tokenizer(tokenizer)
    assert (f.boundaries is not None) == use_regex and f.derivations.well_formed
    model = tokenizer.backend_tokenizer.model
    pieces = tokenizer.convert_ids_to_tokens(list(range(f.V)))
    eos = tokenizer.eos_token_id
    if not use_regex:
        for a in range(f.V):
            mask = f((None, f._decode[a]))
            for b in range(f.V):
                if eos in (a, b):
                    continue
                want = [t.id for t in model.tokenize(pieces[a] + pieces[b])] == [a, b]
                assert mask[b] == want, (pieces[a], pieces[b])
                assert f.allows(f._decode[a], f._decode[b]) == want
        return
    rng = random.Random(2)
    pairs = [(a, b) for a in range(f.V) for b in range(f.V) if eos not in (a, b)]
    assert check_pairs(tokenizer, f, rng.sample(pairs, 3000)) > 1000


def test_derivations_follow_bpe_even_when_merges_disagree():
    """A token two merges could make, and one BPE never makes: as the tokenizer's model says."""
    vocab = {c: i for i, c in enumerate("abc")}
    vocab |= {"bc": 3, "ab": 4, "abc": 5, "ca": 6, "bca": 7}
    merges = [("b", "c"), ("a", "b"), ("ab", "c"), ("a", "bc"), ("c", "a"), ("b", "ca")]
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    hf = PreTrainedTokenizerFast(tokenizer_object=tok)
    f = FastCanonicalityFilterBPE(
        _extract_bpe_merges(hf),
        {k.encode(): v for k, v in vocab.items()},
        [Token(v, k.encode()) for k, v in sorted(vocab.items(), key=lambda kv: kv[1])],
        [None] * 256,
        [],
        vocab=vocab,
    )
    pieces = sorted(vocab, key=vocab.get)
    for piece, i in vocab.items():
        assert f.derivations.canonical[i] == ([t.id for t in tok.model.tokenize(piece)] == [i])
    assert not f.derivations.canonical[7] and f.derivations.right[5] == 3  # "bca"; a + bc
    for a in range(len(pieces)):
        for b in range(len(pieces)):
            want = [t.id for t in tok.model.tokenize(pieces[a] + pieces[b])] == [a, b]
            assert f.allows(f._decode[a], f._decode[b]) == want, (pieces[a], pieces[b])
            assert f((None, f._decode[a]))[b] == want


@pytest.mark.slow
def test_potential_weights_match_the_filter_and_tokenizations_are_canonical():
    llm = PromptedLLM(load_model_by_name("tiny-random", backend="mock"))
    potential = CanonicalTokenization.from_llm(llm)
    f = potential.canonicality_filter
    assert len(potential.vocab_eos) == f.V + 1
    for text in ["Hello,  world!\n\nIt's 2024.", "def f(x):\n    return x's", "  a\t\tb"]:
        tokens = llm.tokenize(text)
        assert run(potential.complete(tokens)) == 0.0
        for i in range(len(tokens)):
            w = run(potential.logw_next(tokens[:i]))
            assert w[tokens[i]] == 0.0 and w[potential.eos] == 0.0
            if i:
                row = np.array(w.weights[:-1]) == 0.0
                assert np.array_equal(row, f((None, tokens[i - 1])))
    split = [Token(llm.tokenize("To")[0].token_id, b"To")] + llm.tokenize("ken")
    assert run(potential.prefix(split)) == -math.inf
    with pytest.raises(ValueError, match="non-canonical"):
        run(potential.logw_next(split))


def test_bad_inputs_raise_clear_errors(smol, monkeypatch):
    tokenizer, f = smol
    with pytest.raises(TypeError, match="instance of PromptedLLM"):
        CanonicalTokenization.from_llm(object())
    with pytest.raises(KeyError, match="not found"):
        f((None, b"@@@ no such token @@@"))
    with pytest.raises(ValueError, match="Could not determine BPE merges"):
        _extract_bpe_merges(object())
    wordpiece = Tokenizer(models.WordPiece({"[UNK]": 0, "a": 1, "##b": 2}, unk_token="[UNK]"))
    with pytest.raises(ValueError):
        FastCanonicalityFilterBPE.from_tokenizer(
            PreTrainedTokenizerFast(tokenizer_object=wordpiece), [0]
        )
    duplicated = [Token(0, b"a"), Token(1, b"b"), Token(2, b"a")]
    monkeypatch.setattr(canonical_module, "decode_vocab", lambda tok: (duplicated, None))
    with pytest.raises(ValueError, match="Duplicate byte sequences"):
        FastCanonicalityFilterBPE.from_tokenizer(tokenizer, [0])
