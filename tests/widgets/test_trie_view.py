import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from genlm_lab.trie import TokenCharacterTrie
from genlm_lab.util import escape_bytes
from genlm_lab.widgets import TrieView, trie_data, trie_html
from genlm_lab.widgets import trie_view as tv

ODD_VOCAB = [b"a", b"b", b"ab", b"<script>", b"\n", b"\xff", b"<eos>", b"abc"]


@pytest.fixture
def trie():
    return TokenCharacterTrie(ODD_VOCAB)


def _ws():
    rng = np.random.default_rng(0)
    w = rng.random(len(ODD_VOCAB))
    return w / w.sum()


def test_node_probabilities_are_brute_force_prefix_sums(trie):
    ws = _ws()
    data = trie_data(trie, ws, b"", depth=10, top_k=50, draw=False)
    assert any(n["is_leaf"] for n in data["nodes"]) and not all(n["is_leaf"] for n in data["nodes"])
    for node in data["nodes"]:
        prefix = bytes.fromhex(node["prefix_hex"])
        if node["is_leaf"]:
            want = ws[node["token_id"]]
        else:
            want = sum(w for tok, w in zip(ODD_VOCAB, ws, strict=True) if tok.startswith(prefix))
        assert node["prob"] == pytest.approx(want)


def test_top_k_and_depth_cut_with_counts_shown(trie):
    data = trie_data(trie, _ws(), b"", depth=1, top_k=2, draw=False)
    root = data["nodes"][0]
    assert len(data["nodes"]) == 3  # root + its two heaviest children
    assert root["hidden"] == len(trie.children[trie.root]) - 2
    assert f"+{root['hidden']} more" in trie_html(data)


def test_labels_escape_odd_bytes_and_markup(trie):
    data = trie_data(trie, _ws(), b"", depth=10, top_k=50, draw=False)
    labels = {n["label"] for n in data["nodes"]}
    assert {"\\n #4", "\\xff #5", "<script> #3"} <= labels
    html = trie_html(data)
    assert "<script>" not in html.replace("<style>", "")
    assert "&lt;script&gt; #3" in html


@pytest.mark.skipif(not tv.dot_available(), reason="graphviz `dot` is not installed")
def test_graphviz_svg_is_escaped_and_drawn(trie):
    data = trie_data(trie, _ws(), b"<", depth=10, top_k=50)
    assert data["svg"].startswith("<svg") and data["message"] == ""
    assert "<script>" not in data["svg"] and "&lt;script&gt;" in data["svg"]
    assert data["svg"].count('<g id="node') == len(data["nodes"])


def test_without_dot_one_line_says_so_and_an_html_tree_is_shown(trie, monkeypatch):
    monkeypatch.setattr(tv, "dot_available", lambda: False)
    data = trie_data(trie, _ws(), b"a", depth=3, top_k=8)
    assert data["svg"] is None and data["message"] == tv.NO_DOT
    html = trie_html(data)
    assert html.count(tv.NO_DOT) == 1
    assert html.count("<li ") == len(data["nodes"])


def test_mismatched_weights_and_unknown_prefix_raise(trie):
    with pytest.raises(ValueError, match=r"one weight per\s+token \(8,\)"):
        TrieView(trie, np.ones(5))
    with pytest.raises(ValueError, match="non-negative"):
        TrieView(trie, -np.ones(8))
    with pytest.raises(ValueError, match="no token starts with"):
        TrieView(trie, None, b"zz")


def test_from_lm_uses_the_next_token_distribution_and_drills_down(odd_llm):
    view = TrieView.from_lm(odd_llm, "ab", depth=2, top_k=3)
    probs = np.exp(odd_llm.next_token_logprobs_sync(odd_llm.tokenizer.encode("ab")).numpy())
    by_label = {n["label"]: n["prob"] for n in view.view_data()["nodes"]}
    assert by_label["a"] == pytest.approx(probs[[0, 2, 7]].sum(), rel=1e-5)
    view._on_msg(view, {"prefix_hex": b"a".hex()}, [])
    assert view.view_data()["prefix_hex"] == b"a".hex()
    view._on_msg(view, {"prefix_text": "zz"}, [])  # a bad prefix from the browser: shown
    assert "no token starts with" in view.view_data()["error"]
    assert view.prefix == b"a"
    view._on_msg(view, {"context": "b", "depth": 1}, [])
    assert view.view_data()["context"] == "b" and view.depth == 1


@pytest.mark.parametrize(
    "changes",
    [
        {"prefix": b"a", "depth": "deep"},
        {"prefix": b"a", "colour": "red"},
        {"prefix": b"a", "top_k": None},
        {"prefix": 3},
        {"prefix": b"zz"},
    ],
)
def test_a_bad_update_raises_one_value_error_and_changes_nothing(trie, changes):
    view = TrieView(trie, _ws(), b"", depth=2, top_k=3)
    before = (view.prefix, view.depth, view.top_k, view.view_data())
    with pytest.raises(ValueError):
        view.update(**changes)
    assert (view.prefix, view.depth, view.top_k, view.view_data()) == before


def test_bad_hex_from_the_browser_is_shown_not_raised(trie):
    view = TrieView(trie, _ws(), b"")
    view._on_msg(view, {"prefix_hex": "zz"}, [])
    assert view.view_data()["error"] and view.prefix == b""


def test_prefix_typed_in_the_browser_reads_escapes():
    assert tv._parse_prefix("a␣b\\n\\xff\\x4") == b"a b\n\xff\\x4"
    assert tv._parse_prefix("") == b""
    assert tv._parse_prefix("é") == "é".encode()


def test_infinite_weights_are_refused(trie):
    # an infinite weight passed the check and made every mass NaN
    ws = np.ones(len(ODD_VOCAB))
    ws[2] = np.inf
    with pytest.raises(ValueError, match="finite non-negative"):
        trie_data(trie, ws, draw=False)


@pytest.mark.parametrize(("key", "value"), [("depth", "deep"), ("top_k", 2.5), ("depth", None)])
def test_constructor_checks_depth_and_top_k_like_update(trie, key, value):
    # the constructor passed them on unchecked: a TypeError from deep inside the trie
    with pytest.raises(ValueError, match=f"{key} must be an int"):
        TrieView(trie, _ws(), **{key: value})


@given(st.binary(max_size=12).filter(lambda b: "␣".encode() not in b))
def test_prefix_typed_back_from_a_label_is_the_same_bytes(prefix):
    # the prefix box shows escape_bytes labels; \t and \r came back as a backslash and a
    # letter, and a backslash followed by "n" came back as a newline
    assert tv._parse_prefix(escape_bytes(prefix, visible_space=True)) == prefix


def test_bfloat16_torch_weights_are_read(trie):
    # numpy cannot read a bfloat16 tensor: "Got unsupported ScalarType BFloat16"
    ws = torch.tensor(_ws(), dtype=torch.bfloat16)
    data = trie_data(trie, ws, b"", depth=10, top_k=50, draw=False)
    want = ws.double().numpy()
    assert any(n["is_leaf"] for n in data["nodes"])
    for node in data["nodes"]:
        if node["is_leaf"]:
            assert node["prob"] == pytest.approx(want[node["token_id"]] / want.sum())
