"""Renamed keyword arguments: genlm-bytes 0.2's names, the old ones with a warning."""

import dataclasses
import warnings

import pytest

from genlm_lab.bytes import BeamParams, TokenByteTrie
from genlm_lab.util.renamed import renamed_argument


def test_renamed_argument_takes_new_warns_on_old_and_refuses_both():
    assert renamed_argument("F", "new", 1, "old", None) == 1
    with pytest.warns(DeprecationWarning, match=r"F\(old=...\) is deprecated: old is now new"):
        assert renamed_argument("F", "new", None, "old", 2) == 2
    with pytest.raises(TypeError, match="Cannot specify both new and the deprecated old"):
        renamed_argument("F", "new", 1, "old", 2)


def test_beam_params_eos_byte_strings_is_a_set_and_eos_tokens_its_old_name():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the new name warns about nothing
        params = BeamParams(K=3, eos_byte_strings=[b".", b"!", b"."])
        again = dataclasses.replace(params, K=4)  # passes eos_tokens back: no warning
    assert params.eos_byte_strings == {b".", b"!"} and again.eos_byte_strings == {b".", b"!"}
    assert params.eos_tokens == params.eos_byte_strings
    with pytest.warns(DeprecationWarning, match="eos_tokens.*deprecated|deprecated.*eos_tokens"):
        old = BeamParams(K=3, eos_tokens=[b"."])
    assert old.eos_byte_strings == {b"."}
    with pytest.raises(TypeError, match="Cannot specify both"):
        BeamParams(K=3, eos_byte_strings=[b"."], eos_tokens=[b"!"])


def test_token_byte_trie_takes_genlm_bytes_names_and_the_old_ones_with_a_warning():
    vocab = [b"a", b"<e>", b"ab"]
    new = TokenByteTrie(vocab, eos_byte_strings=[b"<e>"], atomic_byte_strings=[b"ab"])
    with pytest.warns(DeprecationWarning):
        old = TokenByteTrie(vocab, eos_tokens=[b"<e>"], atomic_tokens=[b"ab"])
    assert new.eos_byte_strings == old.eos_byte_strings == {b"<e>"}
    assert new.atomic_byte_strings == {b"ab"} and new.eos_token_ids == old.eos_token_ids == [1]
    assert new.children == old.children
    with pytest.raises(TypeError, match="Cannot specify both"):
        TokenByteTrie(vocab, eos_byte_strings=[b"<e>"], eos_tokens=[b"<e>"])
