"""ParticleView of `control.SMC` runs: weights split by factor, killed steps, AWRS per step."""

import asyncio
import json
import math

import pytest

from genlm_lab.backend import ToyLM
from genlm_lab.control import BoolFSA, BoolPredicate, PromptedLLM, Tempered
from genlm_lab.control.inference.smc import SMC
from genlm_lab.control.sampler.awrs import AWRS
from genlm_lab.control.sampler.token import direct_token_sampler
from genlm_lab.smc.record import SMCRecord
from genlm_lab.widgets import ParticleView, particles_html
from genlm_lab.widgets._factor_data import FactorTally

VOCAB = [b"a", b"b", b"ab", b"<script>", b"\n", b"\xff", b"<eos>", b"abc", b"1", b"2"]


def _extra(token, lm, fsa, killed=None, awrs=None):
    out = {"token": token, "logw": lm, "factors": {"LM": lm, "FSA": fsa}, "critic": None}
    out["killed_by"] = killed
    if awrs:
        out["awrs"] = awrs
    return out


def _entry(step, texts, lws, extras, ancestors=None):
    n = len(texts)
    return {
        "run_id": "r1",
        "step": step,
        "contents": texts,
        "log_weights": lws,
        "weight_increments": [0.0] * n,
        "finished": [False] * n,
        "ess": 2.0,
        "log_ml": -1.0,
        "resampled": ancestors is not None,
        "ancestors": ancestors,
        "extras": extras,
    }


def _record():
    inf = -math.inf
    steps = [
        _entry(1, ["a", "b", "<script>"], [-1, -2, -3],
               [_extra("a", -1.0, 0.0), _extra("b", -2.0, 0.0), _extra("<script>", -3.0, 0.0)],
               ancestors=[1, 1, 2]),
        _entry(2, ["ba", "bb", "<script>\n"], [-2, -3, inf],
               [_extra("a", -0.5, 0.0, awrs={"drawn": ["x", "a"], "rejected": ["x"],
                                              "accepted": ["a"], "n_draws": 2, "logw": -0.7}),
                _extra("b", -1.0, 0.0), _extra("\\n", -0.1, inf, killed="FSA")]),
        _entry(3, ["baa", "bbb", "<script>\n"], [-3, -4, inf],
               [_extra("a", -0.25, 0.0), _extra("b", -0.5, 0.0), None]),
    ]  # fmt: skip
    return SMCRecord(run_id="r1", algorithm="smc_standard", n_particles=3, steps=steps)


def test_factor_sums_follow_the_lineage_through_resampling():
    rec = _record()
    tally = FactorTally()
    for s in rec.steps:
        tally.add(s)
    view = tally.view()
    assert view["names"] == ["LM", "FSA"]
    rows = view["rows"]
    # particle 0 and 1 of step 2 both descend from particle 1 of step 1 ("b", LM -2)
    assert rows[0]["factors"] == {"LM": -2.0 - 0.5 - 0.25, "FSA": 0.0}
    assert rows[1]["factors"] == {"LM": -2.0 - 1.0 - 0.5, "FSA": 0.0}
    assert rows[2]["factors"]["FSA"] == -math.inf
    assert rows[2]["killed"] == {"step": 2, "by": "FSA"}
    assert rows[2]["last"]["token"] == "\\n"  # its newest step, kept after it died
    assert view["deaths"] == {"FSA": [2]}
    assert rows[0]["last"]["token"] == "a"


def test_from_record_shows_factors_killed_and_escapes_tokens(tmp_path):
    rec = _record()
    path = tmp_path / "run.json"
    rec.save(path)
    data = ParticleView.from_record(path).view_data()
    assert data["factor_names"] == ["LM", "FSA"]
    dead = data["particles"][2]
    assert dead["state"] == "dead" and dead["killed"] == {"step": 2, "by": "FSA"}
    html = particles_html(data)
    assert "log w LM" in html and "log w FSA" in html
    assert "killed by FSA: 1 (step 2)" in html
    assert "step 2, by FSA" in html
    assert "<script>" not in html.replace("<style>", "")
    json.dumps(ParticleView.from_record(rec).data, allow_nan=False)
    # the genealogy tooltips name the token and the killer
    col = data["genealogy"][1]
    assert col[2]["killed_by"] == "FSA" and col[0]["token"] == "a"
    assert col[0]["awrs"] == "AWRS 2 checked, 1 rejected" and "AWRS 2 checked, 1 rejected" in html


def test_records_without_extras_draw_as_before():
    rec = _record()
    for s in rec.steps:
        del s["extras"]
    data = ParticleView.from_record(rec).view_data()
    assert data["factor_names"] is None
    assert "log w LM" not in particles_html(data)


@pytest.fixture
def llm():
    return PromptedLLM(ToyLM(VOCAB, eos=b"<eos>", seed=3))


def test_live_control_smc_factor_sums_equal_the_potentials_weights(llm):
    fsa = BoolFSA.from_regex(r"(a|b)+").coerce(llm)

    async def go():
        view = ParticleView()
        seqs = await SMC(direct_token_sampler(llm * fsa))(6, 0.5, 5, observers=[view], seed=4)
        data = view.view_data()
        by_text = {}
        for ctx in seqs.contexts:
            text = b"".join(bytes(t) for t in ctx).decode("utf-8", "replace")
            by_text[text] = (await llm.score(ctx), await fsa.score(ctx))
        return data, by_text

    data, by_text = asyncio.run(go())
    assert data["done"] and data["factor_names"] == ["PromptedLLM", "BoolFSA"]
    assert not data["awrs_column"] and "<th>AWRS</th>" not in particles_html(data)
    for p in data["particles"]:
        lm, c = by_text[p["text"]]
        assert p["factors"]["PromptedLLM"] == pytest.approx(lm)
        assert p["factors"]["BoolFSA"] == c == 0.0


def test_awrs_run_with_a_killing_critic(llm):
    fsa = BoolFSA.from_regex(r"(a|b)+").coerce(llm)
    critic = BoolPredicate(lambda t: b"bb" not in t, name="no_bb").coerce(llm)

    async def go():
        view = ParticleView()
        seqs = await SMC(AWRS(llm, fsa), critic)(8, 0.5, 6, observers=[view], seed=2)
        return view, seqs

    view, seqs = asyncio.run(go())
    data = view.view_data()
    steps = [s for steps in data["deaths"].values() for s in steps]
    assert set(data["deaths"]) <= {"critic", "PromptedLLM", "BoolFSA"}
    assert all(1 <= s <= 6 for s in steps)
    stepped = [p for p in data["particles"] if p["last"] and p["last"]["awrs"]]
    assert stepped and all(p["last"]["awrs"]["n_draws"] >= 1 for p in stepped)
    assert data["awrs_column"] and "<th>AWRS</th>" in particles_html(data)
    again = ParticleView.from_record(seqs.record.to_json()).view_data()
    assert [p["factors"] for p in again["particles"]] == [p["factors"] for p in data["particles"]]


def test_a_tempered_factor_carries_its_temperature_to_its_column(llm, tmp_path):
    fsa = BoolFSA.from_regex(r"(a|b)+").coerce(llm)
    target = Tempered(llm, 0.25) * fsa * Tempered(fsa, 0.0)  # T 4, and T inf (support only)
    path = tmp_path / "run.jsonl"
    seqs = asyncio.run(SMC(direct_token_sampler(target))(4, 0.5, 4, json_path=path, seed=1))
    names = [f.name for f in target.factors()]
    want = {names[0]: 1 / 0.25, names[2]: math.inf}  # 1 / beta, by hand; the plain FSA has none
    first = seqs.record.steps[0]["extras"]
    assert all(e["temperatures"] == want for e in first)
    assert all("temperatures" not in e for s in seqs.record.steps[1:] for e in s["extras"] if e)
    for rec in (seqs.record, SMCRecord.load(path)):  # inf survives JSON
        data = ParticleView.from_record(rec).view_data()
        assert data["factor_temperatures"] == want
    html = particles_html(data)
    assert f"<th>log w {names[0]} (T 4)</th>" in html and f"<th>log w {names[1]}</th>" in html
    assert f"<th>log w {names[2]} (T ∞)</th>" in html
    assert "each log-weight is multiplied by beta = 1/T = 0.250" in html
    plain = asyncio.run(SMC(direct_token_sampler(llm * fsa))(2, 0.5, 3, seed=0))
    assert ParticleView.from_record(plain.record).view_data()["factor_temperatures"] == {}
