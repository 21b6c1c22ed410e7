"""`FinishGuide`: the token count of a JSON prefix's finish, reused inside a string it closes."""

from __future__ import annotations

import pytest

from genlm_lab.control import JsonSchema
from genlm_lab.control.constraint.budget import FinishGuide
from genlm_lab.control.constraint.budget.tokens import byte_trie, fewest_tokens

SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}
# bytes 0..127 one by one (so every finish is spelled), and a few merges
TOKENS = [bytes([b]) for b in range(128)] + [b'"name', b'":', b'",', b'"age', b"hello", b' "']


@pytest.fixture
def guide() -> FinishGuide:
    schema = JsonSchema(SCHEMA)
    trie = byte_trie(TOKENS, range(len(TOKENS)))
    return FinishGuide(schema.finish, TOKENS, trie, reuses=schema.finish_reuses)


def _ids(text: bytes) -> tuple[int, ...]:
    return tuple(text)  # the one-byte tokens


def test_need_is_the_fewest_tokens_of_the_schemas_finish_plus_eos(guide):
    schema = JsonSchema(SCHEMA)
    trie = byte_trie(TOKENS, range(len(TOKENS)))
    for text in (b"{", b'{"name": "Al', b'{"name": "Al", "age": 4'):
        tail = schema.finish(text)
        assert tail is not None and (text + tail).endswith(b"}")
        assert guide.needed(_ids(text)) == fewest_tokens(trie, tail) + 1
    # a merged token is counted as one: `"name` then `":` ... fewer than its bytes
    assert guide.needed(_ids(b"{")) < len(schema.finish(b"{")) + 1


def test_string_content_reuses_the_prefix_finish_and_a_quote_does_not(guide):
    inside = _ids(b'{"name": "Al')
    before = guide.count(guide.tail(inside))  # the prefix's own finish, walked once
    assert before == guide.needed(inside)
    finishes, reused = guide.stats["finishes"], guide.stats["reused"]
    hello = TOKENS.index(b"hello")
    assert guide.needed_after(inside, hello) == before  # still inside the name: same finish
    assert guide.stats["finishes"] == finishes and guide.stats["reused"] == reused + 1
    quote = TOKENS.index(b'",')
    after = guide.needed_after(inside, quote)  # closes the string: a finish of its own
    assert guide.stats["finishes"] == finishes + 1
    assert after == guide.count(JsonSchema(SCHEMA).finish(b'{"name": "Al",'))
    # deterministic: the same prefix and token give the same count, cached or not
    assert guide.needed((*inside, hello)) == before


def test_no_finish_is_no_guess(guide):
    assert guide.needed(_ids(b"[")) is None  # not a document of this schema
    assert guide.needed_after(_ids(b"{"), len(TOKENS)) is None  # EOS or beyond the vocabulary


def test_far_from_the_end_no_finish_is_walked_and_near_it_the_overrun_is_counted(guide):
    text = b'{"name": "Alice'
    ids = _ids(text)
    need = guide.needed(ids) + guide.slack  # the overrun keeps `slack` tokens of headroom
    assert guide.slack == 2  # the default
    assert guide.overrun(ids, need) == 0 and guide.overrun(ids, need - 3) == 3
    assert guide.overrun(ids, need - 1) == 1  # one token short of the headroom counts
    # a long way from the end: the stride-multiple prefix's finish stands in, nothing walked
    longer = (*ids, *_ids(b"x" * 3))
    guide.tail(longer[: len(longer) - len(longer) % guide.stride])
    finishes = guide.stats["finishes"]
    assert guide.overrun(longer, 500) == 0
    assert guide.stats["finishes"] == finishes and guide.stats["far"] >= 1
    # near the end every prefix's own finish counts: 3 more content bytes, same finish
    assert guide.overrun(longer, need - 1) == 1


def test_a_prefix_with_no_finish_lends_its_none_to_content_tokens_without_a_walk():
    import warnings

    schema = {"type": "object", "properties": {"p": {"type": "string", "pattern": "^(?=a)ab$"}},
              "required": ["p"]}  # fmt: skip
    constraint = JsonSchema(schema)
    trie = byte_trie(TOKENS, range(len(TOKENS)))
    guide = FinishGuide(constraint.finish, TOKENS, trie, reuses=constraint.finish_reuses)
    inside = _ids(b'{"p": "a')
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the FinishWarning naming $.p
        assert guide.tail(inside) is None
        finishes = guide.stats["finishes"]
        for token in (TOKENS.index(b"hello"), ord("b"), ord("x")):
            assert guide.needed_after(inside, token) is None
        assert guide.stats["finishes"] == finishes  # no walk per content token
        guide.needed_after(inside, ord('"'))  # a quote is not content: its own walk
    assert guide.stats["finishes"] == finishes + 1
