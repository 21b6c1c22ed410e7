import asyncio
import json
import math
import time

import numpy as np
import pytest

from genlm_lab.backend import ToyLM
from genlm_lab.control import BoolCFG, BoolFSA, JsonSchema, PromptedLLM
from genlm_lab.widgets import MaskView, mask_data, mask_html
from genlm_lab.widgets._awrs import awrs_summary, awrs_trace
from genlm_lab.widgets.mask_view import mask_data_of
from genlm_lab.widgets.trie_view import trie_html

VOCAB = [b"a", b"b", b"ab", b"<script>", b"\n", b"\xff", b"<eos>", b"abc", b"1", b"2", b"{", b"}"]


@pytest.fixture
def llm():
    return PromptedLLM(ToyLM(VOCAB, eos=b"<eos>", seed=3))


def run(coro):
    return asyncio.run(coro)


async def _direct(potential, context):
    """Blocked flags and LM probabilities straight from the factors."""
    factors = potential.factors()
    ws = [np.asarray((await f.logw_next(context)).weights) for f in factors]
    probs = np.exp(ws[0])
    probs /= probs.sum()
    blocks = [w == -math.inf for w in ws]
    return factors, probs, blocks


@pytest.mark.parametrize(
    ("make", "context"),
    [
        (lambda llm: BoolFSA.from_regex(r"a+b?"), [0]),
        (lambda llm: BoolFSA.from_regex(r"(ab|1|2)*"), []),
        (lambda llm: BoolCFG.from_lark('start: "a" start "b" | "1"'), [0]),
    ],
)
def test_flags_and_masses_equal_direct_computation(llm, make, context):
    constraint = make(llm).coerce(llm)
    product = llm * constraint
    ctx = [llm.vocab[i] for i in context]
    data, _ = run(mask_data_of(product, ctx, top_k=len(VOCAB)))
    factors, probs, blocks = run(_direct(product, ctx))
    # The constraint's own mask agrees with its weights.
    assert (constraint.allowed(ctx) == ~blocks[1]).all()
    blocked = blocks[0] | blocks[1]
    assert data["allowed_mass"] == pytest.approx(probs[~blocked].sum())
    assert data["blocked_mass"] == pytest.approx(probs[blocked].sum())
    assert data["n_allowed"] == int((~blocked).sum())
    assert data["eos"]["allowed"] == (not blocked[-1])
    assert data["log_z"] == pytest.approx(math.log(probs[~blocked].sum()))
    assert len(data["rows"]) == len(product.vocab_eos)  # ToyLM: the whole vocabulary
    for row in data["rows"]:
        i = row["index"]
        assert row["prob"] == pytest.approx(probs[i])
        assert row["allowed"] == (not blocked[i])
        want = [f.name for f, b in zip(factors, blocks, strict=True) if b[i]]
        assert row["blocked_by"] == want
    for f, b in zip(data["factors"], blocks, strict=True):
        assert f["n_blocked"] == int(b.sum())
        assert f["blocked_mass"] == pytest.approx(probs[b].sum())
    html = mask_html(data)
    assert f"allowed mass {data['allowed_mass']:.4f}" in html
    assert html.count("genlm-blocked'") == int(blocked.sum())


def test_rows_are_top_k_by_probability_plus_allowed_extras(llm):
    product = llm * BoolFSA.from_regex("1+").coerce(llm)
    data, _ = run(mask_data_of(product, [], top_k=3, n_allowed=5))
    top = [r for r in data["rows"] if not r["extra"]]
    probs = sorted((r["prob"] for r in data["rows"]), reverse=True)
    assert [r["prob"] for r in top] == probs[:3] or len(top) == 3
    extras = [r for r in data["rows"] if r["extra"]]
    assert all(r["allowed"] for r in extras)
    allowed_tokens = {r["token"] for r in data["rows"] if r["allowed"]}
    assert "1" in allowed_tokens  # the only allowed token is shown even if not in the top 3
    assert data["hidden"] == len(VOCAB) - len(data["rows"])


def test_script_token_text_is_escaped(llm):
    product = llm * BoolFSA.from_regex("<script>").coerce(llm)
    view = run(MaskView.of(product, [], awrs={"drawn": [b"<script>"], "accepted": [b"<script>"]}))
    html = view._repr_html_()
    assert "<script>" not in html.replace("<style>", "")
    assert "&lt;script&gt;" in html
    # the trie labels and the AWRS trace too
    data = view.view_data()
    assert any("<script>" in n["label"] for n in data["trie"]["nodes"])
    assert data["awrs"]["draws"][0]["token"] == "<script>"
    json.dumps(view.data)  # the synced data is strict JSON (-inf as a string)


def test_trie_blocked_iff_every_token_below_is_blocked(llm):
    product = llm * BoolFSA.from_regex(r"a+b?").coerce(llm)
    ctx = [llm.vocab[0]]
    view = run(MaskView.of(product, ctx))
    data = view.view_data()
    _, _, blocks = run(_direct(product, ctx))
    blocked = blocks[0] | blocks[1]
    tokens = [b"EOS" if i == len(VOCAB) - 1 else bytes(t) for i, t in enumerate(product.vocab_eos)]
    seen = 0
    for node in data["trie"]["nodes"]:
        prefix = bytes.fromhex(node["prefix_hex"])
        if node["is_leaf"]:
            below = [node["token_id"]]
        else:
            below = [i for i, t in enumerate(tokens) if t.startswith(prefix)]
        assert node["blocked"] == all(blocked[i] for i in below), node["label"]
        seen += node["blocked"]
    assert seen  # some subtree is greyed
    svg = data["trie"]["svg"]
    assert svg is None or svg.count("genlm&#45;blocked") == seen  # graphviz escapes "-"
    # the live paths stand out: every node not blocked is marked live, in the SVG and the tree
    live = len(data["trie"]["nodes"]) - seen
    assert live > 0
    assert svg is None or svg.count("genlm&#45;open") == live
    tree = trie_html({**data["trie"], "svg": None})
    assert tree.count("class='genlm-open'") == live
    assert tree.count("class='genlm-blocked'") == seen


def test_broken_grammar_blocks_everything(llm):
    product = llm * BoolFSA.from_regex("zzz").coerce(llm)  # no token starts a match
    data, _ = run(mask_data_of(product, []))
    assert data["allowed_mass"] == 0 and data["n_allowed"] == 0
    assert data["log_z"] == -math.inf
    assert data["factors"][1]["blocked_mass"] == pytest.approx(1.0)
    assert "blocked mass 1" in mask_html(data)


def test_json_schema_and_text_context(llm):
    schema = JsonSchema({"type": "object"}).coerce(llm)
    data, _ = run(mask_data_of(llm * schema, "{"))
    assert data["context"] == "{"
    allowed = {r["token"] for r in data["rows"] if r["allowed"]}
    assert "}" in allowed and "a" not in allowed


def test_awrs_trace_marks_each_draw_in_order():
    trace = awrs_trace(
        {
            "drawn": [b"x", b"y", b"x", b"z"],
            "accepted": [b"z"],
            "rejected": [b"x", b"y", b"x"],
            "n_draws": 4,
            "n_checks": 3,
            "logw": "-Infinity",
        },
        allowed_mass=0.25,
    )
    assert [(d["token"], d["accepted"]) for d in trace["draws"]] == [
        ("x", False),
        ("y", False),
        ("x", False),
        ("z", True),
    ]
    assert trace["logw"] == -math.inf and trace["exact_logw"] == pytest.approx(math.log(0.25))
    assert trace["n_checks"] == 3


def test_awrs_summary_counts_checks_and_rejections_and_names_the_estimators_draws():
    trace = awrs_trace(
        {
            "drawn": [b"x", b"z"],
            "accepted": [b"z"],
            "rejected": [b"x"],
            "n_draws": 306183867,
            "n_checks": 49152,
            "logw": -1.5,
        },
        allowed_mass=0.25,
    )
    line = awrs_summary(trace)
    assert line.startswith("AWRS: 49,152 checked, 1 rejected")
    assert "306,183,867 draws, repeats skipped" in line  # never read as tokens drawn


def test_mask_data_checks_shapes_and_lm_name():
    with pytest.raises(ValueError, match="one per token"):
        mask_data([b"a", b"b"], {"lm": np.zeros(3)})
    with pytest.raises(ValueError, match="names no factor"):
        mask_data([b"a", b"b"], {"lm": np.zeros(2)}, lm="nope")


def test_drill_message_moves_the_trie_prefix(llm):
    product = llm * BoolFSA.from_regex(r"a+b?").coerce(llm)
    view = run(MaskView.of(product, []))
    view._on_msg(view, {"prefix_hex": b"<s".hex()}, None)
    assert view.view_data()["trie"]["prefix_hex"] == b"<s".hex()
    view._on_msg(view, {"prefix_text": "qq"}, None)  # no token starts with it
    data = view.view_data()
    assert data["trie"]["prefix_hex"] == b"<s".hex() and "qq" in data["trie"]["error"]


def test_large_vocabulary_is_bounded_and_fast():
    vocab = [f"t{i}".encode() for i in range(20000)] + [b"<eos>"]
    big = PromptedLLM(ToyLM(vocab, eos=b"<eos>", seed=1))
    product = big * BoolFSA.from_regex(r"t1[0-9]*").coerce(big)
    t0 = time.perf_counter()
    view = run(MaskView.of(product, [], prefix=b"t1", depth=2))
    data = view.view_data()
    elapsed = time.perf_counter() - t0
    assert len(data["rows"]) <= 25 and len(data["trie"]["nodes"]) <= 1 + 8 + 64
    assert len(json.dumps(view.data)) < 200_000
    assert elapsed < 10, elapsed
    t0 = time.perf_counter()
    view._on_msg(view, {"prefix_hex": b"t12".hex()}, None)
    assert time.perf_counter() - t0 < 2


def test_mask_view_of_an_awrs_sampler_traces_one_step(llm):
    from genlm_lab.control.sampler.awrs import AWRS

    fsa = BoolFSA.from_regex(r"(a|b)+").coerce(llm)
    view = run(MaskView.of(AWRS(llm, fsa, seed=0), [llm.vocab[0]]))
    data = view.view_data()
    trace = data["awrs"]
    assert [f["name"] for f in data["factors"]] == ["PromptedLLM", "BoolFSA"]
    assert trace["draws"] and trace["draws"][-1]["accepted"]
    allowed = {r["token"] for r in data["rows"] if r["allowed"]}
    for d in trace["draws"]:  # every verdict agrees with the mask
        assert d["accepted"] == (d["token"] in allowed)
    assert trace["exact_logw"] == pytest.approx(math.log(data["allowed_mass"]))
    assert "AWRS trace" in mask_html(data)


def test_update_recomputes_for_a_new_context(llm):
    product = llm * BoolFSA.from_regex(r"ab1").coerce(llm)
    view = run(MaskView.of(product, []))
    assert {r["token"] for r in view.view_data()["rows"] if r["allowed"]} == {"a", "ab"}
    run(view.update(context=[llm.vocab[2]]))  # after "ab" only "1" is left
    data = view.view_data()
    assert data["context"] == "ab"
    assert {r["token"] for r in data["rows"] if r["allowed"]} == {"1"}
    with pytest.raises(ValueError, match="unknown settings"):
        run(view.update(colour="red"))


@pytest.mark.slow
def test_smollm2_under_a_prefix_is_bounded_and_fast():
    from genlm_lab.backend import load_model_by_name

    capital = PromptedLLM(load_model_by_name("default"), prompt="The capital of France is")
    product = capital * BoolFSA.from_regex(r"[A-Z][a-z]+").coerce(capital)
    run(MaskView.of(product, [], prefix=" P"))  # builds the 49k-token trie once
    t0 = time.perf_counter()
    view = run(MaskView.of(product, [], prefix=" P"))
    elapsed = time.perf_counter() - t0
    data = view.view_data()
    assert elapsed < 5, elapsed
    assert data["n_tokens"] == 49152 and len(data["rows"]) <= 25
    assert len(data["trie"]["nodes"]) <= 1 + 8 + 64
    assert len(json.dumps(view.data)) < 400_000
    paris = next(r for r in data["rows"] if r["token"] == "␣Paris")
    assert paris["blocked_by"] == ["BoolFSA"] and data["allowed_mass"] < 0.01


def test_context_outside_the_vocabulary_is_named(llm):
    product = llm * BoolFSA.from_regex("a+").coerce(llm)
    with pytest.raises(ValueError, match="not in the vocabulary"):
        run(mask_data_of(product, [b"zz"]))


def test_a_json_schema_factor_shows_where_its_constraints_are_enforced():
    schema = JsonSchema({"type": "array", "items": {"type": "string"}, "uniqueItems": True})
    data, _ = asyncio.run(mask_data_of(schema, list(b'["a"')))
    (rows,) = data["coverage"].values()
    unique = next(r for r in rows if r["keyword"] == "uniqueItems")
    assert (unique["path"], unique["where"]) == ("/", "completion")
    html = mask_html(data)
    assert "checked only at completion" in html and "uniqueItems" in html
