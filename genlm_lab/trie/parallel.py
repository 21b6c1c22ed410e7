"""`ParallelTokenCharacterTrie`: node masses from a sparse reachability matrix.

For each target array, a CSR matrix R of shape (n_nodes, vocab) holds
R[node, t] = 1 when node is the target of token t or one of its ancestors.
The masses of a batch W (vocab, batch) are then R @ W, one sparse-dense
product, which is what GPUs do well; the maxima are a segmented max over the
same (node, token) pairs. On CUDA this runs in torch (CSR product,
`scatter_reduce`); on CPU in scipy / numpy, since torch's CPU sparse kernels
are far slower. On CPU the numba kernel is faster still: this path is
for CUDA and for cross-checking.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from genlm_lab.trie._sparse import reachability_pairs
from genlm_lab.trie.char_trie import TokenCharacterTrie

__all__ = ["ParallelTokenCharacterTrie", "reachability_pairs"]  # the latter kept importable here


class ParallelTokenCharacterTrie(TokenCharacterTrie):
    """`TokenCharacterTrie` whose masses come from a sparse matrix product (CPU or CUDA).

    Same nodes, same results as `TokenCharacterTrie` (float64 on CUDA too); use it
    on a GPU. On CPU the numba trie is faster.

    Args:
        decode: one byte string (or `Token`) per token id.
        device: "cpu", "cuda", or None (CUDA when available).
    """

    def __init__(self, decode: Sequence[bytes], device: str | torch.device | None = None):
        self._init(decode, device=device, kernel="sparse")
