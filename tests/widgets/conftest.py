"""Shared ToyLM data for the view tests: odd bytes and markup inside token text."""

import pytest

from genlm_lab.backend import ToyLM

ODD_VOCAB = [  # the same list as in test_trie_view.py
    b"a",
    b"b",
    b"ab",
    b"<script>",
    b"\n",
    b"\xff",
    b"<eos>",
    b"abc",
]


@pytest.fixture
def odd_llm():
    return ToyLM(ODD_VOCAB, eos=b"<eos>", seed=3)
