"""split_with_atomic_tokens: genlm-control main's examples, and every short string checked
against the split's defining properties (which fix it uniquely)."""

from __future__ import annotations

import itertools
import warnings

import pytest

from genlm_lab.control.potential.ensemble import split_with_atomic_tokens


def test_main_examples():
    assert split_with_atomic_tokens(b"XYZ", [b"A", b"B"]) == [88, 89, 90]
    with pytest.warns(UserWarning, match="Overlapping atomic tokens detected"):
        assert split_with_atomic_tokens(b"ABC", [b"A", b"AB"]) == [b"A", 66, 67]
    eos = [b"<|end|>", b"</s>"]
    assert split_with_atomic_tokens(b"a</s>b<|end|>", eos) == [97, b"</s>", 98, b"<|end|>"]
    assert split_with_atomic_tokens(b"", eos) == []


def _obeys_the_definition(data: bytes, tokens: list[bytes], pieces: list) -> bool:
    """Pieces join to data; each starts where the last ended and is the shortest token
    matching there, or a lone byte where no token matches."""
    at = 0
    for piece in pieces:
        matching = [t for t in tokens if data[at:].startswith(t)]
        if isinstance(piece, int):
            if matching or data[at] != piece:
                return False
            at += 1
        else:
            if piece != min(matching, key=len, default=None):
                return False
            at += len(piece)
    return at == len(data)


@pytest.mark.parametrize(
    "tokens", [[b"A"], [b"AB", b"BA"], [b"AB", b"ABC", b"C"], [b"AAA", b"AA"], []]
)
def test_every_short_string_splits_as_defined(tokens):
    checked = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for n in range(7):
            for letters in itertools.product(b"ABC", repeat=n):
                data = bytes(letters)
                assert _obeys_the_definition(data, tokens, split_with_atomic_tokens(data, tokens))
                checked += 1
    assert checked == sum(3**n for n in range(7))


def test_warns_only_for_a_prefix_pair():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert split_with_atomic_tokens(b"ABBA", [b"AB", b"BA", b"AB"]) == [b"AB", b"BA"]
    with pytest.warns(UserWarning, match=r"b'AA' is a prefix of b'AAA'"):
        split_with_atomic_tokens(b"AAAA", [b"AAA", b"AA"])


def test_bad_input_is_refused_by_name():
    with pytest.raises(TypeError, match="data must be bytes, got str"):
        split_with_atomic_tokens("abc", [b"a"])
    with pytest.raises(TypeError, match="atomic token 'a' is str"):
        split_with_atomic_tokens(b"abc", ["a"])
    with pytest.raises(TypeError, match="list of bytes tokens"):
        split_with_atomic_tokens(b"abc", b"a")
    with pytest.raises(ValueError, match="at least one byte"):
        split_with_atomic_tokens(b"abc", [b""])
