"""Token: bytes with an id; equality and hashing stay consistent with plain bytes."""

import pickle

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from genlm_lab.tokenization import Token

# one vocabulary: an id has one byte string; b"a" twice (ids 1 and 2), b"" once
VOCAB = [b"", b"a", b"a", b"ab", b"\xff"]
tokens = st.integers(0, len(VOCAB) - 1).map(lambda i: Token(i, VOCAB[i]))
items = st.one_of(tokens, st.binary(max_size=2))


@given(items, items)
def test_equal_objects_hash_alike(a, b):
    if a == b:
        assert hash(a) == hash(b)
    assert (a == b) != (a != b)


def test_tokens_of_one_id_and_other_bytes_differ_so_equal_tokens_hash_alike():
    # genlm-backend compares ids alone; within one vocabulary that is the same, and across
    # two, equality by id would make equal tokens hash apart (dict lookups then disagree)
    assert Token(1, b"test") != Token(1, b"other")
    assert Token(1, b"test") == Token(1, b"test")
    assert Token(1, b"test") != Token(2, b"test")
    assert repr(Token(42, b"hi")) == "Token(token_id=42, byte_string=b'hi')"


def test_tokens_with_the_same_bytes_and_other_ids_stay_distinct():
    a, b = Token(1, b"a"), Token(2, b"a")
    assert a != b and a == b"a" and b == b"a"
    assert len({a, b}) == 2
    assert {b"a": 0}[a] == 0 and {a: 0}[b"a"] == 0
    assert b"a" in [Token(0, b"x"), b]
    assert sorted([Token(3, b"a"), Token(1, b"z")]) == [Token(1, b"z"), Token(3, b"a")]


@given(tokens)
def test_pickle_round_trip(tok):
    back = pickle.loads(pickle.dumps(tok))
    assert back == tok and back.token_id == tok.token_id and type(back) is Token


def test_token_id_must_be_an_integer():
    # int() took 1.5 as id 1 and "7" as id 7; "x" gave int()'s own message
    for bad in (1.5, "7", "x", None, True):
        with pytest.raises(TypeError, match="token_id must be an int"):
            Token(bad, b"a")
    for good in (np.int64(4), torch.tensor(4), 4):
        tok = Token(good, b"a")
        assert tok.token_id == 4 and type(tok.token_id) is int


def test_genlm_helpers_as_bytes_and_is_plain_bytes():
    # GenLM's Token.as_bytes / Token.is_plain_bytes were missing (AttributeError)
    tok = Token(5, b"ab")
    plain = Token.as_bytes(tok)
    assert plain == b"ab" and type(plain) is bytes
    assert Token.as_bytes(b"xy") == b"xy" and Token.as_bytes(3) == 3
    assert Token.is_plain_bytes(b"ab") and not Token.is_plain_bytes(tok)
    assert not Token.is_plain_bytes("ab")
