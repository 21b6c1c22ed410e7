"""TokenCharacterTrie: structure and masses against brute force over the vocabulary."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from _trie_strategies import brute_force, random_weights, vocabularies
from hypothesis import given, settings
from hypothesis import strategies as st

from genlm_lab.tokenization import Token
from genlm_lab.trie import TokenCharacterTrie, subtrie_data

SETTINGS = settings(max_examples=40, deadline=None)


@SETTINGS
@given(vocab=vocabularies(), seed=st.integers(0, 2**32 - 1))
def test_weight_sum_and_max_equal_brute_force(vocab, seed):
    trie = TokenCharacterTrie(vocab)
    ws = random_weights(seed, len(vocab))
    sums, maxs = brute_force(vocab, ws, trie)
    np.testing.assert_allclose(trie.weight_sum(ws), sums, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(trie.weight_max(ws), maxs)
    assert trie.weight_sum(ws)[trie.root] == pytest.approx(ws.sum())


@SETTINGS
@given(
    vocab=vocabularies(),
    seed=st.integers(0, 2**32 - 1),
    batch=st.sampled_from([1, 2, 5, 9, 12]),  # small batches push, larger ones pull
)
def test_batched_rows_equal_single_calls(vocab, seed, batch):
    trie = TokenCharacterTrie(vocab)
    ws = random_weights(seed, len(vocab), batch)
    sums, maxs = trie.batch_weight_sum(ws), trie.batch_weight_max(list(ws))
    assert sums.shape == maxs.shape == (batch, len(trie.children))
    for b in range(batch):
        np.testing.assert_allclose(sums[b], trie.weight_sum(ws[b]), rtol=1e-12)
        np.testing.assert_array_equal(maxs[b], trie.weight_max(ws[b]))


@SETTINGS
@given(vocab=vocabularies())
def test_structure_is_a_preorder_trie_with_one_leaf_per_token(vocab):
    trie = TokenCharacterTrie(vocab)
    n = len(trie.children)
    assert trie.root == 0 and trie.parent[0] == -1
    leaves = sorted(trie.leaf2token_id)
    assert sorted(trie.leaf2token_id[leaf] for leaf in leaves) == list(range(len(vocab)))
    assert len(leaves) == len(vocab)  # duplicates keep separate leaves
    for token_id, word in enumerate(vocab):
        leaf = int(trie.token_id_to_leaf[token_id, 1])
        assert trie.token_id_to_leaf[token_id, 0] == token_id
        assert trie.node2prefix[leaf] == word
        assert trie.children[leaf] == {}
    internal_prefixes = [trie.node2prefix[x] for x in range(n) if x not in trie.leaf2token_id]
    assert len(set(internal_prefixes)) == len(internal_prefixes)
    want = {w[:k] for w in vocab for k in range(len(w) + 1)}
    assert set(internal_prefixes) == want
    for x in range(n):
        for key, child in trie.children[x].items():
            assert trie.parent[child] == x < child  # topological (pre-order) numbering
            assert trie.depth[child] == trie.depth[x] + 1
            if isinstance(key, tuple):
                assert key == (None, trie.leaf2token_id[child])
            else:
                assert trie.node2prefix[child] == trie.node2prefix[x] + bytes([key])


def test_duplicate_tokens_keep_separate_leaves_and_word2leaf():
    vocab = [Token(0, b"ab"), Token(1, b"ab"), Token(2, b"a")]
    trie = TokenCharacterTrie(vocab)
    leaf0, leaf1 = trie.word2leaf[vocab[0]], trie.word2leaf[vocab[1]]
    assert leaf0 != leaf1
    assert trie.leaf2word[leaf1] is vocab[1]
    ws = np.array([0.25, 0.5, 0.125])
    mass = trie.weight_sum(ws)
    assert mass[leaf0] == 0.25 and mass[leaf1] == 0.5
    assert mass[trie.find(b"ab")] == 0.75 and mass[trie.find(b"a")] == 0.875


def test_accepts_torch_float32_and_numpy_float32():
    vocab = [b"a", b"ab", b"b"]
    trie = TokenCharacterTrie(vocab)
    ws = np.array([0.2, 0.3, 0.5], dtype=np.float32)
    want = trie.weight_sum(ws.astype(np.float64))
    np.testing.assert_allclose(trie.weight_sum(ws), want, rtol=1e-6)
    np.testing.assert_allclose(trie.weight_sum(torch.from_numpy(ws)), want, rtol=1e-6)
    np.testing.assert_allclose(trie.batch_weight_sum(torch.from_numpy(ws)[None]), want[None], 1e-6)


def test_weight_max_allows_negative_log_weights():
    trie = TokenCharacterTrie([b"a", b"ab", b"b"])
    logw = np.log(np.array([0.2, 0.3, 0.5]))
    out = trie.weight_max(logw)
    assert out[trie.root] == logw.max()
    assert out[trie.find(b"a")] == logw[1]


@pytest.mark.parametrize(
    "ws, match",
    [
        (np.ones(2), r"shape \(2,\).*vocab = 3"),
        (np.ones((1, 3)), r"shape \(1, 3\)"),
        (np.array([0.1, np.nan, 0.2]), "NaN at token id 1"),
        (np.array([0.1, -0.5, 0.2]), "negative value -0.5 at token id 1"),
    ],
)
def test_bad_weights_raise_one_clear_value_error(ws, match):
    trie = TokenCharacterTrie([b"a", b"ab", b"b"])
    with pytest.raises(ValueError, match=match):
        trie.weight_sum(ws)


def test_bad_batched_weights_name_the_row():
    trie = TokenCharacterTrie([b"a", b"ab", b"b"])
    ws = np.ones((3, 3))
    ws[2, 1] = np.nan
    with pytest.raises(ValueError, match=r"NaN at token id 1 \(batch row 2\)"):
        trie.batch_weight_max(ws)
    with pytest.raises(ValueError, match="shape"):
        trie.batch_weight_sum(np.ones((2, 4)))
    with pytest.raises(ValueError, match="empty"):
        trie.batch_weight_sum([])


@pytest.mark.parametrize("vocab, match", [([], "empty"), ([b"a", "b"], "entry 1 is str")])
def test_bad_vocabulary_raises_value_error(vocab, match):
    with pytest.raises(ValueError, match=match):
        TokenCharacterTrie(vocab)


@pytest.mark.parametrize("batch", [3, 12])
def test_batched_results_stay_valid_while_held(batch):
    """Batched outputs come from a reuse pool: a result (or a row of it) still held
    must never be overwritten by later calls."""
    vocab = [b"a", b"ab", b"abc", b"b", b"ba"]
    trie = TokenCharacterTrie(vocab)
    ws = [random_weights(seed, len(vocab), batch) for seed in range(6)]
    held = [trie.batch_weight_sum(ws[0]), trie.batch_weight_max(ws[1])]
    row = trie.batch_weight_sum(ws[2])[1]
    for w in ws[3:]:
        trie.batch_weight_sum(w)  # dropped at once: its buffer may be reused
    np.testing.assert_allclose(held[0], [trie.weight_sum(w) for w in ws[0]], rtol=1e-12)
    np.testing.assert_array_equal(held[1], [trie.weight_max(w) for w in ws[1]])
    np.testing.assert_allclose(row, trie.weight_sum(ws[2][1]), rtol=1e-12)


def test_word2leaf_finds_token_entries_by_their_plain_bytes():
    # a Token hashes by its id, so word2leaf[b"ab"] raised KeyError for an LM's byte_vocab
    vocab = [Token(0, b"ab"), Token(1, b"ab"), Token(2, b"a")]
    trie = TokenCharacterTrie(vocab)
    assert trie.word2leaf[b"ab"] == trie.word2leaf[vocab[0]] != trie.word2leaf[vocab[1]]
    assert trie.word2leaf[b"a"] == trie.word2leaf[vocab[2]]
    for leaf, t in trie.leaf2token_id.items():
        assert trie.word2leaf[vocab[t]] == leaf


def test_find_takes_text_as_utf8():
    trie = TokenCharacterTrie([b"ab", "é".encode(), b"a"])
    assert trie.find("ab") == trie.find(b"ab") is not None
    assert trie.find("é") == trie.find("é".encode()) is not None
    assert trie.find("z") is None


@pytest.mark.parametrize("bad", [1, 97, True, None, 1.5])
def test_find_refuses_a_non_prefix_instead_of_reading_it_as_zero_bytes(bad):
    # find(1) looked up bytes(1) == b"\x00" (a token of every byte-level vocabulary)
    trie = TokenCharacterTrie([b"\x00", b"\x00\x00", b"a"])
    with pytest.raises(ValueError, match="prefix"):
        trie.find(bad)
    with pytest.raises(ValueError, match="prefix"):
        subtrie_data(trie, prefix=bad)
    assert trie.find(bytearray(b"a")) == trie.find(b"a") == trie.find("a") is not None


def test_repr_and_html_give_the_sizes_and_stay_small():
    vocab = [bytes([a, b]) for a in range(97, 123) for b in range(97, 123)] + [b"<x>", b"&"]
    trie = TokenCharacterTrie(vocab)
    n_nodes = len(trie.children)
    text, html = repr(trie), trie._repr_html_()
    assert f"{len(vocab)} tokens" in text and f"{n_nodes} nodes" in text
    assert f"{len(vocab):,} tokens" in html and f"{n_nodes:,} nodes" in html
    assert "numba" in html and len(html) < 400  # no token or node is listed
    assert "<x>" not in html
