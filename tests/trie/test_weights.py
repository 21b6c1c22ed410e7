"""NodeWeights: trie masses stay numpy, and answer the tensor idiom `.cpu().numpy()`."""

import numpy as np
import torch

from genlm_lab.trie import NodeWeights, TokenCharacterTrie


def test_masses_are_numpy_with_cpu_and_numpy_like_a_tensor():
    trie = TokenCharacterTrie([b"a", b"ab", b"b"])
    ws = torch.tensor([0.2, 0.3, 0.5])
    masses = trie.weight_sum(ws)
    assert isinstance(masses, NodeWeights) and isinstance(masses, np.ndarray)
    plain = masses.cpu().numpy()
    assert type(plain) is np.ndarray and np.shares_memory(plain, masses)
    assert plain[trie.root] == masses[trie.root] and np.isclose(plain[trie.root], 1.0)
    # the node of "a" holds the tokens "a" and "ab", checked against the weights
    a_node = trie.children[trie.root][ord("a")]
    assert np.isclose(plain[a_node], 0.5)


def test_batch_rows_keep_the_methods():
    trie = TokenCharacterTrie([b"a", b"b"])
    rows = trie.batch_weight_sum(np.array([[1.0, 2.0], [3.0, 4.0]]))
    assert [float(r.cpu().numpy()[trie.root]) for r in rows] == [3.0, 7.0]
