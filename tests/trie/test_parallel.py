"""ParallelTokenCharacterTrie: the sparse path gives the numba trie's masses, on CPU and CUDA."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from _trie_strategies import brute_force, random_weights, vocabularies
from hypothesis import given, settings
from hypothesis import strategies as st

from genlm_lab.trie import ParallelTokenCharacterTrie, TokenCharacterTrie
from genlm_lab.trie._sparse import reachability_pairs

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@settings(max_examples=30, deadline=None)
@given(vocab=vocabularies(), seed=st.integers(0, 2**32 - 1), batch=st.sampled_from([1, 3, 10]))
def test_sparse_and_numba_agree_single_and_batched(vocab, seed, batch):
    seq = TokenCharacterTrie(vocab)
    par = ParallelTokenCharacterTrie(vocab, device="cpu")
    assert par.children == seq.children  # same nodes, same numbering
    ws = random_weights(seed, len(vocab), batch)
    np.testing.assert_allclose(par.batch_weight_sum(ws), seq.batch_weight_sum(ws), atol=1e-5)
    np.testing.assert_allclose(par.batch_weight_max(ws), seq.batch_weight_max(ws), atol=1e-5)
    sums, maxs = brute_force(vocab, ws[0], seq)
    np.testing.assert_allclose(par.weight_sum(ws[0]), sums, atol=1e-5)
    np.testing.assert_allclose(par.weight_max(ws[0]), maxs, atol=1e-5)


@settings(max_examples=30, deadline=None)
@given(vocab=vocabularies())
def test_reachability_pairs_are_exactly_token_ancestors(vocab):
    trie = TokenCharacterTrie(vocab)
    nodes, tokens = reachability_pairs(trie.parent, trie.token_id_to_leaf[:, 1])
    got = set(zip(nodes.tolist(), tokens.tolist(), strict=True))
    want = set()
    for t in range(len(vocab)):
        x = int(trie.token_id_to_leaf[t, 1])
        while x >= 0:
            want.add((x, t))
            x = int(trie.parent[x])
    assert got == want and len(got) == len(nodes)


@pytest.mark.parametrize("device", DEVICES)
def test_bad_weights_raise_value_error_on_sparse_path(device):
    par = ParallelTokenCharacterTrie([b"a", b"ab", b"b"], device=device)
    with pytest.raises(ValueError, match="negative value"):
        par.weight_sum(torch.tensor([0.1, -1.0, 0.2]))
    with pytest.raises(ValueError, match="NaN at token id 2"):
        par.batch_weight_max([np.array([0.1, 0.2, np.nan])])
    with pytest.raises(ValueError, match="shape"):
        par.weight_sum(np.ones(4))


def test_bad_device_raises_value_error():
    with pytest.raises(ValueError, match="device 'tpu'"):
        ParallelTokenCharacterTrie([b"a"], device="tpu")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA is not available"):
            ParallelTokenCharacterTrie([b"a"], device="cuda")


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_matches_cpu_on_large_batches():
    rng = np.random.default_rng(0)
    vocab = [bytes(rng.integers(97, 100, size=rng.integers(1, 8))) for _ in range(3000)]
    seq = TokenCharacterTrie(vocab)
    par = ParallelTokenCharacterTrie(vocab, device="cuda")
    ws = rng.dirichlet(np.ones(len(vocab)), size=130).astype(np.float32)
    np.testing.assert_allclose(
        par.batch_weight_sum(torch.from_numpy(ws).cuda()), seq.batch_weight_sum(ws), atol=1e-5
    )
    np.testing.assert_allclose(par.batch_weight_max(ws), seq.batch_weight_max(ws), atol=1e-6)


def test_repr_and_html_name_the_sparse_kernel_and_sizes():
    trie = ParallelTokenCharacterTrie([b"a", b"ab", b"b"], device="cpu")
    for text in (repr(trie), trie._repr_html_()):
        assert "ParallelTokenCharacterTrie" in text and "sparse" in text
        assert "3 tokens" in text and f"{len(trie.children)} nodes" in text


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_results_are_float64_host_arrays_that_later_calls_leave_alone():
    par = ParallelTokenCharacterTrie([b"a", b"ab", b"b"], device="cuda")
    first = par.batch_weight_sum(np.array([[0.1, 0.2, 0.3]]))
    kept = first.copy()
    par.batch_weight_sum(np.array([[0.5, 0.25, 0.125]]))
    par.batch_weight_max(np.array([[0.5, 0.25, 0.125]]))
    assert first.dtype == np.float64 and isinstance(first, np.ndarray)
    np.testing.assert_array_equal(first, kept)  # not a view of a reused buffer
    np.testing.assert_allclose(first[0, par.root], 0.6, rtol=1e-6)
