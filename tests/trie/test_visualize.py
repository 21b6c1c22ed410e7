"""subtrie_data / visualize: the picture shows the right part of the trie, readably."""

from __future__ import annotations

import numpy as np
import pytest
from _trie_strategies import random_weights, vocabularies
from hypothesis import given, settings
from hypothesis import strategies as st

from genlm_lab.backend.toy import ToyLM
from genlm_lab.bytes import TokenByteTrie, TrieMode
from genlm_lab.trie import TokenCharacterTrie, dot_available, render_html, subtrie_data

needs_dot = pytest.mark.skipif(not dot_available(), reason="graphviz `dot` is not installed")


@settings(max_examples=40, deadline=None)
@given(
    vocab=vocabularies(),
    seed=st.integers(0, 2**32 - 1),
    depth=st.one_of(st.none(), st.integers(0, 4)),
    top_k=st.one_of(st.none(), st.integers(1, 3)),
)
def test_subtrie_keeps_heaviest_children_within_depth(vocab, seed, depth, top_k):
    trie = TokenCharacterTrie(vocab)
    ws = random_weights(seed, len(vocab))
    mass = trie.weight_sum(ws)
    data = subtrie_data(trie, ws, b"", depth, top_k)
    assert data["total"] == pytest.approx(ws.sum())
    shown = {n["id"] for n in data["nodes"]}
    assert len(shown) == len(data["nodes"])
    for n in data["nodes"]:
        kids = list(trie.children[n["id"]].values())
        assert set(n["children"]) <= set(kids)
        assert len(n["children"]) + n["hidden"] == len(kids)
        assert n["mass"] == mass[n["id"]]
        assert n["prefix"] == trie.node2prefix[n["id"]]
        if depth is not None:
            assert n["depth"] <= depth
        if top_k is not None:
            assert len(n["children"]) <= top_k
        dropped = [c for c in kids if c not in n["children"]]
        assert n["hidden_mass"] == pytest.approx(mass[dropped].sum())
        if n["children"] and dropped:
            assert min(mass[n["children"]]) >= max(mass[dropped])
    assert {(e["source"], e["target"]) for e in data["edges"]} == {
        (n["parent"], n["id"]) for n in data["nodes"] if n["parent"] is not None
    }
    if depth is None and top_k is None:
        assert shown == set(range(len(trie.children)))


def test_subtrie_under_prefix_and_node_masses_input():
    vocab = [b"ab", b"abc", b"abd", b"b", b"\n"]
    trie = TokenCharacterTrie(vocab)
    ws = np.array([0.1, 0.2, 0.3, 0.25, 0.15])
    by_tokens = subtrie_data(trie, ws, prefix="ab")
    by_nodes = subtrie_data(trie, trie.weight_sum(ws), prefix=b"ab")
    assert by_tokens == by_nodes
    assert {n["prefix"] for n in by_tokens["nodes"]} == {b"ab", b"abc", b"abd"}
    assert by_tokens["nodes"][0]["mass"] == pytest.approx(0.6)
    assert by_tokens["nodes"][0]["prob"] == pytest.approx(0.6)
    newline = subtrie_data(trie, None, b"\n")["nodes"][0]
    assert newline["label"] == "\\n" and newline["mass"] is None


def test_byte_trie_marks_eot_eos_and_escapes_bytes():
    vocab = [b"a", b"\xc3", b" x", b"<e>"]
    trie = TokenByteTrie(vocab, eos_byte_strings=[b"<e>"], device="cpu")
    data = subtrie_data(trie, np.full(4, 0.25), mode=TrieMode.WITH_EOS)
    kinds = {e["kind"] for e in data["edges"]}
    assert {"byte", "eot", "eos"} <= kinds
    eos = next(n for n in data["nodes"] if n["kind"] == "eos")
    assert eos["is_eos"] and eos["mass"] == 0.25 and eos["label"] == "EOS"
    labels = {n["prefix"]: n["label"] for n in data["nodes"] if not n["is_leaf"]}
    assert labels[b"\xc3"] == "\\xc3" and labels[b" "] == "␣"
    leaf = next(n for n in data["nodes"] if n["token_id"] == 3)
    assert leaf["is_eos"] and leaf["mass"] == 0.0
    assert next(e for e in data["edges"] if e["target"] == leaf["id"])["label"] == "EOT #3"


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"prefix": b"zz"}, "no token starts with prefix b'zz'"),
        ({"depth": -1}, "depth"),
        ({"top_k": 0}, "top_k"),
        ({"top_k": 1.5}, "top_k"),  # was a TypeError from slicing
        ({"top_k": True}, "top_k"),
        ({"depth": "2"}, "depth"),  # was a TypeError from comparing
        ({"depth": 1.5}, "depth"),
    ],
)
def test_bad_arguments_raise_value_error(kwargs, match):
    with pytest.raises(ValueError, match=match):
        subtrie_data(TokenCharacterTrie([b"a", b"b"]), **kwargs)


def test_a_mode_for_a_character_trie_raises_value_error():
    # TokenCharacterTrie.weight_sum takes no mode: it was a TypeError about arguments
    with pytest.raises(ValueError, match="mode"):
        subtrie_data(TokenCharacterTrie([b"a", b"b"]), np.ones(2), mode=TrieMode.WITH_EOS)


@needs_dot
def test_toylm_vocabulary_renders_to_svg_with_dot():
    lm = ToyLM([b"a", b"b", b"ab", b"\n", b"\xff", b'"q"', b"<e>"], eos=b"<e>")
    trie = TokenByteTrie(lm.byte_vocab, eos_byte_strings=[lm.eos_token_ids[0]], device="cpu")
    probs = np.exp(lm.next_token_logprobs_sync([]).numpy())
    svg = trie.visualize(probs, mode=TrieMode.WITH_EOS).pipe(format="svg").decode()
    assert svg.lstrip().startswith("<?xml") and "</svg>" in svg
    assert svg.count('class="node"') == len(trie.children)
    for text in ("EOS", "EOT #2", "\\n", "\\xff", "&quot;q&quot;", "p="):
        assert text in svg


@pytest.mark.slow
def test_smollm2_subtrie_with_depth_3_top_5_stays_small(smollm2_tokenizer):
    from genlm_lab.tokenization.vocab import decode_vocab

    vocab, _ = decode_vocab(smollm2_tokenizer)
    trie = TokenCharacterTrie(vocab)
    ws = np.random.default_rng(0).dirichlet(np.ones(len(vocab)))
    data = subtrie_data(trie, ws, b" the", depth=3, top_k=5)
    assert 30 < len(data["nodes"]) < 200
    if dot_available():
        svg = trie.visualize(ws, b" the", depth=3, top_k=5).pipe(format="svg").decode()
        assert svg.count('class="node"') == len(data["nodes"])


def test_html_fallback_shows_every_node_escaped():
    vocab = [b"<a>", b"<b", b"\n", b"&"]
    trie = TokenCharacterTrie(vocab)
    data = subtrie_data(trie, np.full(4, 0.25))
    page = render_html(data)
    assert page.count("<li>") == len(data["nodes"])
    assert "&lt;a&gt; #0" in page and "&amp;" in page and "\\n" in page
    assert "<a>" not in page  # token text never leaks as markup


@pytest.mark.skipif(not dot_available(), reason="graphviz `dot` not installed")
def test_tokens_that_look_like_entities_are_drawn_as_written():
    """graphviz reads &lt; and &amp; in labels as entities: " &lt;" must not be drawn as " <"."""
    import re
    from html import unescape

    trie = TokenCharacterTrie([b"&lt;", b"&amp;", b"<"])
    svg = trie.visualize(np.ones(3), depth=7).pipe(format="svg").decode()
    texts = [unescape(t) for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg)]
    assert "&lt; #0" in texts and "&amp; #1" in texts and "< #2" in texts
