"""as_mask: every accepted form gives the set it names; everything else one ValueError."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from genlm_lab.smc import as_mask
from genlm_lab.tokenization import Token

N = 6


@pytest.mark.parametrize(
    "given",
    [
        [1, 4],
        {4, 1},
        (1, 4, 4),
        np.array([4, 1]),
        np.array([1, 4], dtype=np.uint8),
        [Token(1, b"b"), Token(4, b"e")],
        [False, True, False, False, True, False],
        np.array([False, True, False, False, True, False]),
        torch.tensor([False, True, False, False, True, False]),
    ],
)
def test_ids_bools_and_tokens_name_the_same_set(given):
    assert set(np.flatnonzero(as_mask(given, N))) == {1, 4}


@pytest.mark.parametrize(
    "bad",
    [
        np.array([0.0, 1.0, 0.0, 0.0, 1.0, 0.0]),  # read as ids 0 and 1 before
        [1.5],  # read as id 1 before
        [True, False],  # bools of the wrong length: read as ids 1 and 0 before
        [1, True],
        "ab",
        b"ab",
        3,
        None,
        [7],
        [-1],
    ],
)
def test_anything_else_is_one_value_error(bad):
    with pytest.raises(ValueError, match="mask"):
        as_mask(bad, N)


def test_starts_new_word_reads_the_character_after_the_space_as_text():
    """Like hfppl's str check: " €" and " —" start no word; " é", " 7" and " word" do."""
    from genlm_lab.backend import ToyLM
    from genlm_lab.smc import token_masks

    vocab = [" word", " é", " 7", " €", " —", " ", "x", " \xa0x"]
    lm = ToyLM([t.encode() for t in vocab], seed=0)
    starts = token_masks(lm).STARTS_NEW_WORD
    expected = [len(t) > 1 and t[0] == " " and t[1].isalnum() for t in vocab]
    assert starts.tolist() == expected


@settings(max_examples=40, deadline=None)
@given(
    vocab=st.lists(st.binary(min_size=1, max_size=4), min_size=1, max_size=12, unique=True),
    forbidden=st.binary(max_size=3),
)
def test_without_bytes_keeps_exactly_the_tokens_free_of_every_forbidden_byte(vocab, forbidden):
    from genlm_lab.backend import ToyLM
    from genlm_lab.smc import token_masks

    kept = token_masks(ToyLM(vocab, seed=0)).without_bytes(forbidden, keep_special=False)
    assert kept.tolist() == [not (set(v) & set(forbidden)) for v in vocab]
