"""Token tries: per-prefix probability mass of a vocabulary (numba on CPU, torch sparse on CUDA)."""

from genlm_lab.trie._weights import NodeWeights
from genlm_lab.trie.async_trie import AsyncTokenCharacterTrie, RequestBatcher
from genlm_lab.trie.char_trie import TokenCharacterTrie
from genlm_lab.trie.parallel import ParallelTokenCharacterTrie
from genlm_lab.trie.visualize import (
    dot_available,
    render_digraph,
    render_html,
    subtrie_data,
    visualize,
)

__all__ = [
    "AsyncTokenCharacterTrie",
    "NodeWeights",
    "ParallelTokenCharacterTrie",
    "RequestBatcher",
    "TokenCharacterTrie",
    "dot_available",
    "render_digraph",
    "render_html",
    "subtrie_data",
    "visualize",
]
