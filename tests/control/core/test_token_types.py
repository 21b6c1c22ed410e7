"""Token types: checks, inference and conversion (genlm.control.typing's names)."""

from __future__ import annotations

import pytest

from genlm_lab.control import EOS, EOT, EndOfSequence, Potential
from genlm_lab.control.core.token_types import Atomic, Sequence, infer_type, infer_vocabulary_type
from genlm_lab.tokenization import Token


class Flat(Potential):
    async def prefix(self, context):
        return 0.0

    async def complete(self, context):
        return 0.0


def test_atomic_and_sequence_check_each_value():
    assert Atomic(bytes).check(Token(3, b"ab")) and not Atomic(bytes).check("ab")
    assert not Atomic(int).check(True)
    assert Sequence(Atomic(int)).check((1, 2)) and not Sequence(Atomic(int)).check([1, "2"])
    assert Sequence(Sequence(Atomic(int))).check([[1], [2, 3]])


def test_inference_and_iteration():
    assert infer_type([b"ab", Token(1, b"c")]) == Sequence(Atomic(bytes))
    assert infer_vocabulary_type([[1], [2]]) == Sequence(Atomic(int))
    for bad in ([], [1, "a"]):
        with pytest.raises(ValueError):
            infer_type(bad)
    assert Atomic(bytes).is_iterable_of(Atomic(int))
    assert not Atomic(int).is_iterable_of(Atomic(int))
    assert Sequence(Atomic(str)).convert(["a"]) == ("a",) and Atomic(int).convert("7") == 7


def test_potential_token_type_is_inferred_or_checked():
    assert Flat([b"a", b"b"]).token_type == Atomic(bytes)
    assert Flat(list(range(256))).token_type == Atomic(int)
    with pytest.raises(TypeError, match="must be of type"):
        Flat([b"a"], token_type=Atomic(str))
    with pytest.raises(ValueError, match="TokenType"):
        Flat([b"a"], token_type=str)


def test_end_markers_concatenate_and_compare_by_name():
    assert EOT.type_ == "EOT" and EOS != EOT and EndOfSequence("EOS") == EOS
    assert b"ab" + EOS == [97, 98, EOS] and (1,) + EOS == (1, EOS)
    with pytest.raises(TypeError, match="Cannot concatenate"):
        _ = 3 + EOS
