"""Potential's defaults: next-token weights from prefix/complete, context checks, batches."""

from __future__ import annotations

import asyncio
import math

import numpy as np
import pytest

from genlm_lab.control import EOS, EndOfSequence, Potential


def run(coro):
    return asyncio.run(coro)


class Geometric(Potential):
    """Strings over {a, b}: weight 0.5 per `a`, 0.25 per `b`, 0.25 to end; `bb` forbidden."""

    def __init__(self):
        super().__init__([b"a", b"b"])

    async def prefix(self, context):
        self.encode(context)
        text = b"".join(context)
        if b"bb" in text:
            return -math.inf
        return text.count(b"a") * math.log(0.5) + text.count(b"b") * math.log(0.25)

    async def complete(self, context):
        return await self.prefix(context) + math.log(0.25)


def test_default_logw_next_is_the_ratio_of_prefix_weights():
    p = Geometric()
    w = run(p.logw_next([b"a", b"b"]))
    assert w[b"a"] == pytest.approx(math.log(0.5))
    assert w[b"b"] == -math.inf
    assert w[EOS] == pytest.approx(math.log(0.25))
    with pytest.raises(ValueError, match="weight zero"):
        run(p.logw_next([b"b", b"b"]))


def test_batches_equal_single_calls():
    p = Geometric()
    contexts = [[], [b"a"], [b"b", b"a"]]
    np.testing.assert_array_equal(
        run(p.batch_prefix(contexts)), [run(p.prefix(c)) for c in contexts]
    )
    np.testing.assert_array_equal(
        run(p.batch_score([[b"a", EOS], [b"a"]])), [run(p.complete([b"a"])), run(p.prefix([b"a"]))]
    )


def test_vocabulary_checks():
    with pytest.raises(ValueError, match="empty"):
        Geometric.__bases__[0].__init__(Geometric(), [])
    with pytest.raises(ValueError, match="Duplicate token"):
        Potential.__init__(Geometric(), [b"a", b"a"])
    with pytest.raises(ValueError, match="EndOfSequence"):
        Potential.__init__(Geometric(), [b"a"], eos="$")
    p = Geometric()
    with pytest.raises(ValueError, match="b'z'.*position 1"):
        p.encode([b"a", b"z"])


def test_eos_markers_compare_by_name_and_join_as_nothing():
    assert EndOfSequence("EOS") == EOS and EndOfSequence("END") != EOS
    assert b"".join([b"a", bytes(EOS)]) == b"a" and len(EOS) == 0


def test_lazy_weights_helpers():
    p = Geometric()
    w = run(p.logw_next([b"a"]))
    assert w.sum() == pytest.approx(0.0)
    assert w.argmax() == b"a"
    chart = w.materialize()
    assert list(chart) == [b"a", b"b", EOS][: len(chart)]
    assert w.exp().sum() == pytest.approx(1.0)
    assert w[b"zzz"] == -math.inf
    dead = p.make_lazy_weights(np.full(3, -math.inf))
    with pytest.raises(ValueError, match="weight zero"):
        dead.normalize()


def test_helpers_cache_escape_and_serialise():
    from genlm_lab.control.core.util import LRUCache, escape, load_trie, string_for_serialization

    cache = LRUCache(2)
    cache["a"], cache["b"] = 1, 2
    assert cache.get("a") == 1  # a use: "b" is now the least recent
    cache["c"] = 3
    assert list(cache) == ["a", "c"] and cache.get("b") is None
    with pytest.raises(ValueError, match="maxsize"):
        LRUCache(0)
    assert escape(10) == "\\n" and escape(EOS) == "EOS" and escape("é") == "é"
    assert string_for_serialization([b"a", b"\n", EOS]) == "a|\\n|EOS"
    trie = load_trie(["a", "ab"], backend="sequential")
    assert [bytes(t) for t in trie.decode] == [b"a", b"ab"]
    with pytest.raises(ValueError, match="backend"):
        load_trie(["a"], backend="gpu")


def test_cleanup_abandons_queued_autobatched_calls():
    from genlm_lab.control.core.util import BatchAbandoned

    batched = Geometric().to_autobatched()

    async def main():
        call = asyncio.ensure_future(batched.prefix([]))
        await asyncio.sleep(0)  # queued, not yet flushed
        await batched.cleanup()
        return await asyncio.gather(call, return_exceptions=True)

    (result,) = asyncio.run(main())
    assert isinstance(result, BatchAbandoned)


def test_lazy_weights_by_plain_bytes_warn_where_the_keys_are_tokens():
    import warnings

    from genlm_lab.control.core.weights import LazyWeights
    from genlm_lab.tokenization import Token

    tokens = [Token(0, b"hi"), Token(1, b"yo")]
    lw = LazyWeights(np.array([-1.0, -2.0]), {t: i for i, t in enumerate(tokens)}, tokens)
    with pytest.warns(DeprecationWarning, match="by bytes is deprecated"):
        assert lw[b"yo"] == -2.0
    assert lw[b"zz"] == -math.inf
    plain = LazyWeights(np.array([-1.0]), {b"hi": 0}, [b"hi"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert plain[b"hi"] == -1.0  # bytes keys: nothing deprecated
    other = LazyWeights(np.array([-1.0]), {b"ho": 0}, [b"ho"])
    with pytest.raises(AssertionError, match="keys do not match"):
        plain.assert_equal_unordered(other)
