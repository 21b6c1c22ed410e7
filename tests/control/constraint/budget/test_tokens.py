"""budget.tokens: the byte trie of the usable tokens, cached per vocabulary."""

from __future__ import annotations

from genlm_lab.control.constraint.budget.tokens import byte_trie, fewest_tokens


def test_vocabularies_cut_in_other_places_get_their_own_tries():
    # Joined with b"\0" between tokens, these two read alike: the cache must tell them apart.
    cut_late = byte_trie([b"a\x00", b"b"], [0, 1])
    cut_early = byte_trie([b"a", b"\x00b"], [0, 1])
    assert cut_late is not cut_early
    assert byte_trie([b"a\x00", b"b"], [0, 1]) is cut_late
    assert fewest_tokens(cut_late, b"a\x00b") == 2 and fewest_tokens(cut_late, b"a") is None
    assert fewest_tokens(cut_early, b"a\x00b") == 2 and fewest_tokens(cut_early, b"a") == 1
