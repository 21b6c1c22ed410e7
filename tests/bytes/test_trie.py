"""TokenByteTrie: EOS modes, atomic tokens, EOT keys, and the async batcher."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from genlm_lab.bytes import EOS, AsyncTokenByteTrie, TokenByteTrie, TrieMode
from genlm_lab.tokenization import Token

KERNELS = ["numba", "sparse"]


@st.composite
def vocab_with_specials(draw):
    """Small vocabularies plus a choice of EOS and atomic token ids."""
    stems = draw(st.lists(st.binary(min_size=1, max_size=3), min_size=1, max_size=3))
    vocab = []
    for _ in range(draw(st.integers(1, 30))):
        if vocab and draw(st.booleans()) and draw(st.booleans()):
            vocab.append(draw(st.sampled_from(vocab)))
        else:
            vocab.append(draw(st.sampled_from(stems)) + draw(st.binary(max_size=4)))
    ids = st.integers(0, len(vocab) - 1)
    eos = draw(st.sets(ids, max_size=3))
    atomic = draw(st.sets(ids, max_size=3))
    return vocab, sorted(eos), sorted(atomic)


def brute_force(vocab, ws, eos, atomic, mode):
    """Mass of each byte prefix (non-atomic tokens only), each atomic edge, and EOS."""
    eos_set = set(eos) if mode is TrieMode.WITH_EOS else set()
    prefix_mass, atomic_mass = {}, {}
    for t, w in enumerate(vocab):
        if t in eos_set:
            continue
        if t in atomic:
            atomic_mass[w] = atomic_mass.get(w, 0.0) + ws[t]
            continue
        for k in range(len(w) + 1):
            prefix_mass[w[:k]] = prefix_mass.get(w[:k], 0.0) + ws[t]
    eos_mass = sum(ws[t] for t in eos_set)
    return prefix_mass, atomic_mass, eos_mass


@settings(max_examples=40, deadline=None)
@given(
    spec=vocab_with_specials(),
    seed=st.integers(0, 2**32 - 1),
    mode=st.sampled_from(list(TrieMode)),
    kernel=st.sampled_from(KERNELS),
)
def test_masses_match_brute_force_in_both_modes(spec, seed, mode, kernel):
    vocab, eos, atomic = spec
    trie = TokenByteTrie(
        vocab, device="cpu", eos_byte_strings=eos, atomic_byte_strings=atomic, kernel=kernel
    )
    ws = np.random.default_rng(seed).exponential(size=len(vocab))
    mass = trie.weight_sum(ws, mode)
    prefix_mass, atomic_mass, eos_mass = brute_force(vocab, ws, eos, set(atomic), mode)
    assert mass[trie.root] == pytest.approx(ws.sum())  # total mass conserved
    assert mass[trie.eos_node] == pytest.approx(eos_mass, abs=1e-12)
    assert trie.children[trie.root][EOS] == trie.eos_node
    for prefix, want in prefix_mass.items():
        if prefix:
            assert mass[trie.find(prefix)] == pytest.approx(want)
    for word, want in atomic_mass.items():
        assert mass[trie.children[trie.root][word]] == pytest.approx(want)
    for t in range(len(vocab)):
        leaf = int(trie.token_id_to_leaf[t, 1])
        own = 0.0 if (mode is TrieMode.WITH_EOS and t in eos) else ws[t]
        assert mass[leaf] == pytest.approx(own)


@settings(max_examples=20, deadline=None)
@given(spec=vocab_with_specials(), seed=st.integers(0, 2**32 - 1), batch=st.sampled_from([3, 10]))
def test_numba_and_sparse_kernels_agree_batched(spec, seed, batch):
    vocab, eos, atomic = spec
    a = TokenByteTrie(
        vocab, device="cpu", eos_byte_strings=eos, atomic_byte_strings=atomic, kernel="numba"
    )
    b = TokenByteTrie(
        vocab, device="cpu", eos_byte_strings=eos, atomic_byte_strings=atomic, kernel="sparse"
    )
    ws = np.random.default_rng(seed).random((batch, len(vocab)))
    for mode in TrieMode:
        np.testing.assert_allclose(
            a.batch_weight_sum(ws, mode), b.batch_weight_sum(ws, mode), atol=1e-5
        )
        np.testing.assert_allclose(
            a.batch_weight_max(ws, mode), b.batch_weight_max(ws, mode), atol=1e-5
        )


@pytest.mark.gpu
@settings(max_examples=20, deadline=None)
@given(spec=vocab_with_specials(), seed=st.integers(0, 2**32 - 1), batch=st.sampled_from([1, 7]))
def test_cuda_sparse_masses_equal_the_cpu_numba_masses(spec, seed, batch):
    vocab, eos, atomic = spec
    opts = {"eos_byte_strings": eos, "atomic_byte_strings": atomic}
    cpu = TokenByteTrie(vocab, device="cpu", kernel="numba", **opts)
    gpu = TokenByteTrie(vocab, device="cuda", **opts)
    assert gpu.kernel == "sparse" and gpu.children == cpu.children
    ws = np.random.default_rng(seed).random((batch, len(vocab)))
    for mode in TrieMode:
        for weights in (ws, torch.from_numpy(ws).cuda()):  # host arrays and device tensors
            np.testing.assert_allclose(
                gpu.batch_weight_sum(weights, mode), cpu.batch_weight_sum(ws, mode), atol=1e-5
            )
            np.testing.assert_allclose(
                gpu.batch_weight_max(weights, mode), cpu.batch_weight_max(ws, mode), atol=1e-5
            )


def test_eot_edges_and_duplicates():
    vocab = [Token(0, b"ab"), Token(1, b"a"), Token(2, b"ab")]
    trie = TokenByteTrie(vocab, device="cpu")
    node_ab = trie.find(b"ab")
    # genlm-bytes 0.2's keys: every end-of-token edge is (eot_sentinel, token id)
    assert trie.leaf2token_id[trie.children[node_ab][(None, 0)]] == 0
    assert trie.leaf2token_id[trie.children[node_ab][(None, 2)]] == 2
    assert None not in trie.children[node_ab]
    assert sorted(trie.eot_children(node_ab)) == sorted(
        (t, int(trie.token_id_to_leaf[t, 1])) for t in (0, 2)
    )
    # genlm-bytes' form: byte values as a list, the EOS node spelled [257]
    assert trie.node2prefix[trie.eos_node] == [257]
    assert trie.node2prefix[node_ab] == [ord("a"), ord("b")]


def test_custom_eot_key_and_atomic_edge():
    trie = TokenByteTrie(
        [b"<s>", b"<", b"s"], atomic_byte_strings=[b"<s>"], eot_token=256, device="cpu"
    )
    atomic_node = trie.children[trie.root][b"<s>"]
    assert trie.leaf2token_id[trie.children[atomic_node][(256, 0)]] == 0
    assert b"<s>"[0] in trie.children[trie.root]  # the byte '<' edge belongs to token 1 only
    mass = trie.weight_sum(np.array([0.5, 0.25, 0.25]))
    assert mass[trie.find(b"<")] == 0.25 and mass[atomic_node] == 0.5


@pytest.mark.parametrize("kernel", KERNELS)
def test_weight_max_with_eos_gives_minus_inf_where_no_token_is_below(kernel):
    trie = TokenByteTrie([b"a", b"<e>"], eos_byte_strings=[b"<e>"], device="cpu", kernel=kernel)
    mx = trie.weight_max(np.array([0.3, 0.7]), TrieMode.WITH_EOS)
    assert mx[trie.eos_node] == 0.7 and mx[trie.find(b"<e>")] == -np.inf
    assert trie.weight_max(np.array([0.3, 0.7]))[trie.eos_node] == -np.inf


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"eos_byte_strings": [b"zz"]}, r"EOS token b'zz' is not in the vocabulary"),
        ({"atomic_byte_strings": [b"q"]}, r"atomic token b'q' is not in the vocabulary"),
        ({"eos_byte_strings": [7]}, "EOS token 7 is not in the vocabulary"),
        ({"eos_byte_strings": [Token(0, b"b")]}, "EOS token .* is not in the vocabulary"),
        ({"device": "metal"}, "device 'metal'"),
        ({"kernel": "cuda"}, "kernel 'cuda' is unknown"),
        ({"eot_token": ["x"]}, "eot_token .* hashable"),
    ],
)
def test_bad_arguments_raise_value_error(kwargs, match):
    with pytest.raises(ValueError, match=match):
        TokenByteTrie([b"a", b"ab"], **kwargs)


@pytest.mark.parametrize("eot_token", [65, np.int64(97), 97.0, True, b"a", None])
def test_any_hashable_eot_token_keeps_every_edge(eot_token):
    # Keyed (eot_token, id), an end-of-token edge cannot overwrite a byte edge equal to
    # eot_token (97.0 == 97 == ord("a")): masses are the brute-force prefix sums.
    vocab = [b"a", b"ab", b"A", b"ab", b"b"]
    trie = TokenByteTrie(vocab, eot_token=eot_token, device="cpu")
    ws = np.array([0.1, 0.2, 0.3, 0.15, 0.25])
    mass = trie.weight_sum(ws)
    assert len(trie.leaf2token_id) == len(vocab)  # the duplicate b"ab" keeps its own leaf
    for node, prefix in trie.node2prefix.items():
        if node == trie.eos_node:
            continue
        if node in trie.leaf2token_id:
            want = ws[trie.leaf2token_id[node]]
        else:
            want = sum(w for tok, w in zip(vocab, ws, strict=True) if tok.startswith(bytes(prefix)))
        assert mass[node] == pytest.approx(want)
    for children in trie.children:
        for key, child in children.items():
            if child in trie.leaf2token_id:
                assert key == (eot_token, trie.leaf2token_id[child])


def test_empty_vocabulary_and_bad_weights_raise_value_error():
    with pytest.raises(ValueError, match="empty"):
        TokenByteTrie([])
    trie = TokenByteTrie([b"a", b"ab"], device="cpu")
    with pytest.raises(ValueError, match="negative"):
        trie.weight_sum(np.array([0.5, -0.5]), TrieMode.WITH_EOS)
    with pytest.raises(ValueError, match="NaN"):
        trie.batch_weight_sum(np.array([[0.5, np.nan]]))
    with pytest.raises(ValueError, match="shape"):
        trie.weight_sum(np.ones(3))
    with pytest.raises(ValueError, match="TrieMode"):
        trie.weight_sum(np.ones(2), "sideways")


def test_default_kernel_follows_device():
    assert TokenByteTrie([b"a"], device="cpu").kernel == "numba"
    assert TokenByteTrie([b"a"], device="cpu", kernel="sparse").kernel == "sparse"


async def test_async_batches_by_operation_and_mode():
    vocab = [b"a", b"ab", b"<e>", b"b"]
    trie = AsyncTokenByteTrie.from_vocab(vocab, eos_byte_strings=[b"<e>"], device="cpu")
    rng = np.random.default_rng(0)
    ws = rng.random((4, len(vocab)))
    jobs = [trie.weight_sum(w, TrieMode.WITH_EOS) for w in ws]
    jobs += [trie.weight_sum(torch.from_numpy(w)) for w in ws]
    jobs += [trie.weight_max(ws[0])]
    results = await asyncio.gather(*jobs)
    assert trie._batcher.batches == 3
    for i, w in enumerate(ws):
        np.testing.assert_allclose(results[i], trie.trie.weight_sum(w, TrieMode.WITH_EOS))
        np.testing.assert_allclose(results[4 + i], trie.trie.weight_sum(w))
    np.testing.assert_allclose(results[-1], trie.trie.weight_max(ws[0]))
    await trie.cleanup()


async def test_async_error_reaches_every_caller():
    trie = AsyncTokenByteTrie.from_vocab([b"a", b"b"], device="cpu")

    def boom(batch, mode):
        raise RuntimeError("boom")

    trie.trie.batch_weight_sum = boom
    out = await asyncio.gather(
        *(trie.weight_sum(np.ones(2)) for _ in range(3)), return_exceptions=True
    )
    assert [type(o) for o in out] == [RuntimeError] * 3
    await trie.cleanup()


def test_word2leaf_finds_genlm_bytes_pairs_and_mode_values():
    vocab = [Token(0, b"a"), Token(1, b"a"), Token(2, b"ab")]
    trie = TokenByteTrie(vocab, device="cpu")
    assert trie.word2leaf[(b"a", 1)] == trie.word2leaf[Token(1, b"a")]
    assert trie.word2leaf[(b"a", 0)] != trie.word2leaf[(b"a", 1)]
    assert (b"ab", 2) in trie.word2leaf and (b"zz", 0) not in trie.word2leaf
    ws = np.array([0.2, 0.3, 0.5])
    np.testing.assert_array_equal(
        trie.weight_sum(ws, "with_eos"), trie.weight_sum(ws, TrieMode.WITH_EOS)
    )
    with pytest.raises(ValueError, match="not a TrieMode"):
        trie.weight_sum(ws, "sideways")
