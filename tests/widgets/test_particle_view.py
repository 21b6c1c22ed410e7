import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genlm_lab.smc import CollectingObserver, SMCRecord, smc_standard
from genlm_lab.smc.examples.lipogram import Lipogram
from genlm_lab.widgets import ParticleView, particles_html


def _entry(run_id, step, contents, lws, ancestors=None):
    n = len(contents)
    return {
        "run_id": run_id,
        "step": step,
        "contents": contents,
        "log_weights": lws,
        "weight_increments": [0.5] * n,
        "finished": [False] * n,
        "ess": 1.0,
        "log_ml": -1.0 * step,
        "resampled": ancestors is not None,
        "ancestors": ancestors,
    }


def _record(entries, run_id="r1"):
    return SMCRecord(n_particles=len(entries[0]["contents"]), run_id=run_id, steps=entries)


@pytest.fixture
async def run(odd_llm):
    view, seen = ParticleView(), CollectingObserver()
    model = Lipogram(odd_llm, prompt="a", forbidden="c", max_tokens=6)
    result = await smc_standard(model, 5, ess_threshold=0.9, observers=[view, seen], seed=1)
    return view, result.record


async def test_rows_are_the_last_step_with_normalised_weights(run):
    view, record = run
    last = record.steps[-1]
    lws = np.array(last["log_weights"])
    want = np.exp(lws - lws.max()) / np.exp(lws - lws.max()).sum()
    data = view.view_data()
    assert data["done"] and data["run_id"] == record.run_id
    assert [p["index"] for p in data["particles"]] == list(range(5))
    assert np.allclose([p["weight"] for p in data["particles"]], want)
    assert [p["log_weight"] for p in data["particles"]] == last["log_weights"]
    assert data["ess"] == [s["ess"] for s in record.steps]
    assert data["resampled"] == [s["step"] for s in record.steps if s["resampled"]]
    html = view._repr_html_()
    assert html.count("<tr class='genlm-") == 5


async def test_genealogy_links_follow_recorded_ancestors(run):
    view, record = run
    gen = view.view_data()["genealogy"]
    assert len(gen) == len(record.steps)
    for t in range(1, len(gen)):
        anc = record.steps[t - 1]["ancestors"]
        want = anc if anc is not None else list(range(len(gen[t])))
        assert [node["parent"] for node in gen[t]] == want
    svg_lines = particles_html(view.view_data()).count("<line ")
    assert svg_lines == sum(len(col) for col in gen[1:])


async def test_from_record_draws_what_the_live_view_ended_with(run, tmp_path):
    view, record = run
    path = tmp_path / "run.json"
    record.save(path)
    for source in (record, record.to_dict(), str(path), path):
        assert ParticleView.from_record(source).view_data() == view.view_data()


def test_text_is_escaped_never_injected():
    entry = _entry(
        "r1",
        1,
        ["<script>alert(1)</script>", "line\nbreak", "bad \udcff byte"],
        [0.0, -1.0, -math.inf],
    )
    view = ParticleView.from_record(_record([entry]))
    texts = [p["text"] for p in view.view_data()["particles"]]
    assert texts == ["<script>alert(1)</script>", "line\\nbreak", "bad \\xff byte"]
    html = view._repr_html_()
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert [p["state"] for p in view.view_data()["particles"]] == ["active", "active", "dead"]


def test_widget_data_is_strict_json_with_dead_particles():
    entry = _entry("r1", 1, ["a", "b"], [0.0, -math.inf])
    view = ParticleView.from_record(_record([entry]))
    json.dumps(view.data, allow_nan=False)
    assert view.data["particles"][1]["log_weight"] == "-Infinity"


def test_a_record_from_another_run_is_refused():
    view = ParticleView()
    view.on_step(_entry("run-A", 1, ["a"], [0.0]))
    with pytest.raises(ValueError, match="run-B"):
        view.on_step(_entry("run-B", 2, ["a"], [0.0]))
    with pytest.raises(ValueError, match="does not belong"):
        view.on_finish(_record([_entry("run-B", 1, ["a"], [0.0])], run_id="run-B"))


def test_malformed_entries_raise_clear_errors():
    bad = _entry("r1", 1, ["a", "b"], [0.0])
    with pytest.raises(ValueError, match="differ in length"):
        ParticleView.from_record(_record([bad]))
    bad = _entry("r1", 1, ["a", "b"], [0.0, 0.0], ancestors=[0, 7])
    with pytest.raises(ValueError, match="ancestors"):
        ParticleView.from_record(_record([bad]))
    with pytest.raises(ValueError, match="does not exist"):
        ParticleView.from_record("/no/such/record.json")


@pytest.mark.parametrize(
    "damage",
    [
        lambda e: e.pop("contents"),
        lambda e: e.update(log_weights=[0.0]),
        lambda e: e.update(step="one"),
        lambda e: e.update(ess=[1.0]),
    ],
)
def test_a_malformed_live_entry_is_refused_and_leaves_the_view_as_it_was(damage):
    view = ParticleView()
    good = _entry("r1", 1, ["a", "b"], [0.0, -1.0])
    view.on_step(good)
    before = view.view_data()
    bad = _entry("r1", 2, ["c", "d"], [0.0, 0.0])
    damage(bad)
    with pytest.raises(ValueError, match="step entry"):
        view.on_step(bad)
    assert view.view_data() == before
    view.on_step(_entry("r1", 2, ["c", "d"], [0.0, 0.0]))
    assert [p["text"] for p in view.view_data()["particles"]] == ["c", "d"]


def test_live_updates_are_throttled_and_the_final_state_always_arrives():
    view = ParticleView()
    view.throttle_s = view._throttle.interval = 60.0
    sent_before = view._throttle.sent
    entries = [_entry("r1", t, ["a", "b"], [0.0, -float(t)]) for t in range(1, 51)]
    for e in entries:
        view.on_step(e)
    assert view._throttle.sent - sent_before == 1  # the first step; the rest wait
    view.on_finish(_record(entries))
    assert view.data["step"] == 50 and view.data["done"]


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_display_text_matches_the_byte_escaper(text):
    from genlm_lab.util import escape_bytes
    from genlm_lab.widgets.smc_data import display_text

    try:
        data = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return  # lone surrogates that are not escaped bytes have no byte form
    assert display_text(text) == escape_bytes(data)


def test_live_data_equals_the_data_of_the_entries_so_far():
    from genlm_lab.widgets.particle_view import particle_data
    from genlm_lab.widgets.smc_data import normalize_entry

    view = ParticleView()
    view._throttle.interval = 0.0
    entries = [
        _entry("r1", t, ["a\n", "<b>"], [0.0, -float(t)], [0, 0] if t == 2 else None)
        for t in (1, 2, 3)
    ]
    for e in entries:
        view.on_step(e)
    want = particle_data([normalize_entry(e) for e in entries], run_id="r1")
    assert view.view_data() == want


async def test_a_view_of_an_interrupted_run_says_so_live_and_from_the_record(odd_llm):
    class Stops(Lipogram):
        async def step(self):
            if len(self.context.tokens) - self.context.prompt_token_count >= 2:
                raise KeyboardInterrupt
            await super().step()

    view, seen = ParticleView(), CollectingObserver()
    model = Stops(odd_llm, prompt="a", forbidden="c", max_tokens=6)
    with pytest.raises(KeyboardInterrupt):
        await smc_standard(model, 4, ess_threshold=0.0, observers=[view, seen], seed=0)
    data = view.view_data()
    assert data["done"] and data["status"] == "interrupted"
    assert data["step"] == 2 and len(data["particles"]) == 4
    assert "SMC interrupted: step 2" in view._repr_html_()
    saved = SMCRecord.from_json(seen.record.to_json())
    assert "SMC interrupted: step 2" in ParticleView.from_record(saved)._repr_html_()


async def test_a_finished_run_says_finished(run):
    view, record = run
    assert view.view_data()["status"] == "finished"
    assert "SMC finished" in ParticleView.from_record(record)._repr_html_()


async def test_a_record_file_of_a_run_still_going_is_shown_as_unfinished(odd_llm, tmp_path):
    path = tmp_path / "run.jsonl"
    model = Lipogram(odd_llm, prompt="a", forbidden="c", max_tokens=4)
    await smc_standard(model, 3, json_file=path, seed=0)
    lines = path.read_text().splitlines()
    assert json.loads(lines[-1])["type"] == "final"
    path.write_text("\n".join(lines[:-1]) + "\n")  # as read before the run wrote its end
    view = ParticleView.from_record(path)
    assert view.view_data()["status"] == "unfinished"
    assert "SMC unfinished" in view._repr_html_()


@pytest.mark.parametrize(("text", "other"), [("a\\nb", "a\nb"), (b"a\\nb", b"a\nb")])
def test_particle_text_with_a_backslash_never_looks_like_an_escape(text, other):
    from genlm_lab.widgets.smc_data import display_text

    assert display_text(text) == "a\\\\nb" != display_text(other)


# -- why particles died, alarms, the result's particles, what the factor columns leave out ----


def _control_run(vocab, schema, n, ess, max_tokens, seed=0, observers=(), budget=True):
    import asyncio
    import warnings

    from genlm_lab.backend import ToyLM
    from genlm_lab.control import SMC, JsonSchema, PromptedLLM, direct_token_sampler

    llm = PromptedLLM(ToyLM(list(vocab), eos=vocab[-1], seed=3))
    target = llm * JsonSchema(schema).coerce(llm, f=b"".join)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return asyncio.run(
            SMC(direct_token_sampler(target))(
                n, ess, max_tokens, seed=seed, observers=observers, budget=budget
            )
        )


NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
NAME_VOCAB = [b'{"name":"', b"a", b'"}', b"$"]


def test_a_killed_row_says_why_live_and_from_the_record():
    view = ParticleView()
    seqs = _control_run(NAME_VOCAB, NAME, 4, 0.0, 3, observers=[view], budget=False)
    why = "cut at max_tokens inside a string at $.name"
    for data in (view.view_data(), ParticleView.from_record(seqs.record).view_data()):
        killed = [p["killed"] for p in data["particles"] if p.get("killed")]
        assert killed and all(k["why"] == why and k["by"] == "JsonSchema" for k in killed)
    assert f"by JsonSchema: {why}" in seqs.record._repr_html_()


def test_alarms_are_shown_live_and_in_the_static_view():
    view = ParticleView()
    seqs = _control_run(NAME_VOCAB, NAME, 4, 0.0, 2, observers=[view], budget=False)  # all cut
    kinds = {k for _, k, _ in seqs.alarms}
    assert {"all_dead", "log_ml_inf", "max_tokens"} <= kinds
    assert {a["kind"] for a in view.view_data()["alarms"]} == kinds
    html = ParticleView.from_record(seqs.record)._repr_html_()
    assert "genlm-alarms" in html and html.count("<li data-kind=") == len(kinds)
    # live, before the end: the alarms the steps raised so far
    live = ParticleView()
    entry = dict(seqs.record.steps[0], alarms=[[1, "low_mass", "the constraint fights"]])
    live.on_step(entry)
    assert live.view_data()["alarms"] == [
        {"step": 1, "kind": "low_mass", "text": "the constraint fights"}
    ]
    assert "healthy" not in particles_html(live.view_data())


def test_a_finished_view_shows_the_particles_the_result_holds():
    import asyncio

    import regex

    from genlm_lab.backend import ToyLM
    from genlm_lab.control import SMC, EndOfSequence, Potential, PromptedLLM, direct_token_sampler

    class Pattern(Potential):
        is_boolean = True

        def _text(self, context):
            return b"".join(bytes(t) for t in context if not isinstance(t, EndOfSequence))

        async def prefix(self, context):
            ok = regex.fullmatch(rb"(ab|b|c)*", self._text(context), partial=True)
            return 0.0 if ok else -math.inf

        async def complete(self, context):
            return 0.0 if regex.fullmatch(rb"(ab|b|c)*", self._text(context)) else -math.inf

    vocab = [b"a", b"b", b"ab", b"c", b"\xc3", b"<eos>"]
    llm = PromptedLLM(ToyLM(vocab, eos=b"<eos>", seed=3))
    view = ParticleView()
    sampler = direct_token_sampler(llm * Pattern(llm.vocab))
    seqs = asyncio.run(SMC(sampler)(8, 0.9, 6, seed=0, observers=[view]))
    last = seqs.record.steps[-1]
    assert last["resampled"], "the run must end on a resampling for this test"
    for data in (view.view_data(), ParticleView.from_record(seqs.record).view_data()):
        rows = data["particles"]
        assert [r["text"] for r in rows] == seqs.texts()
        assert np.allclose([r["log_weight"] for r in rows], seqs.log_weights)
        assert {r["state"] for r in rows} == {"finished"}  # no row from before the resampling
        assert data["final_ess"] == pytest.approx(seqs.ess)
        assert data["held_note"].startswith(f"the result's particles: step {last['step']}")
    from genlm_lab.widgets.render import fmt

    assert f"ESS {fmt(seqs.ess, 2)}," in view._repr_html_()


def test_the_rest_column_is_what_the_factor_columns_leave_out():
    seqs = _control_run([b'{"name":"', b"a", b'"}', b"b", b"$"], NAME, 6, 0.0, 6, seed=1)
    data = ParticleView.from_record(seqs.record).view_data()
    start = seqs.record.steps[0][
        "weight_increments"
    ]  # step 1's increment includes the start weight
    for i, row in enumerate(data["particles"]):
        if row["log_weight"] == -math.inf:
            assert row["rest"] is None
            continue
        # independently: each step's weight minus what its factors gave the drawn token
        extras = [e["extras"][i] for e in seqs.record.steps if e["extras"][i]]
        first = extras[0]
        start_weight = start[i] - first["logw"]
        rest = start_weight + sum(x["logw"] - sum(x["factors"].values()) for x in extras)
        assert row["rest"] == pytest.approx(rest, abs=1e-6)
        assert row["log_weight"] == pytest.approx(sum(row["factors"].values()) + row["rest"])
    assert "<th>rest</th>" in particles_html(data)


# -- readability: the ESS axis, long texts, the "rest" legend, AWRS counts (static and browser) --


def _draw_js(data: dict) -> str:
    """What the browser module (widgets/particles.js) draws for `data`, under a minimal DOM."""
    import shutil
    import subprocess
    from pathlib import Path

    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    from genlm_lab.widgets.base import jsonable

    harness = Path(__file__).with_name("_draw_js.mjs")
    out = subprocess.run(
        [node, str(harness), "particles.js", "drawParticles"],
        input=json.dumps(jsonable(data), allow_nan=False),  # as the widget sends it
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return out.stdout


def _awrs_record(text: str) -> SMCRecord:
    """One control.SMC step of 3 particles: ESS 2.73 then 2.41, an AWRS trace that rejected
    every token it checked (the estimator counted 306183867 draws), one very long text."""
    rejected = [f"t{i}" for i in range(49152)]
    aw = {
        "drawn": rejected,
        "accepted": [],
        "rejected": rejected,
        "n_draws": 306183867,
        "n_checks": 49152,
        "logw": "-Infinity",
    }
    extras = [
        {"token": "a", "logw": -1.0, "factors": {"LM": -1.0, "FSA": 0.0}, "critic": None,
         "killed_by": None, "awrs": aw},
        {"token": "b", "logw": -1.2, "factors": {"LM": -1.2, "FSA": 0.0}, "critic": None,
         "killed_by": None},
        {"token": "c", "logw": -1.4, "factors": {"LM": -1.4, "FSA": 0.0}, "critic": None,
         "killed_by": None},
    ]  # fmt: skip
    steps = [
        {**_entry("r", 1, ["a", "b", "c"], [-1.0, -1.2, -1.4]), "ess": 2.73},
        {**_entry("r", 2, [text, "bb", "cc"], [-2.0, -2.4, -3.0]), "ess": 2.41, "extras": extras},
    ]
    return _record(steps, run_id="r")


def _ess_chart(markup: str) -> str:
    import re

    return re.search(r"aria-label=.ESS over steps.(.*?)</svg>", markup, re.S).group(1)


def _ess_path_ys(markup: str) -> list[float]:
    import re

    chart = _ess_chart(markup)
    d = re.search(r"class=.genlm-line. d=.([^'\"]+)", chart).group(1)
    return [float(p.split(",")[1]) for p in d.replace("M", " ").replace("L", " ").split()]


def test_the_ess_axis_runs_from_zero_to_the_particles_in_both_renderings():
    data = ParticleView.from_record(_awrs_record("x")).view_data()
    for markup in (particles_html(data), _draw_js(data)):
        y1, y2 = _ess_path_ys(markup)
        # the chart's plot height is 110 - 14 - 18 = 78 px for the range 0..3: a fall of
        # 0.32 is 0.32 / 3 of it (8.3 px), not the whole height as a zoomed axis drew it
        assert y2 - y1 == pytest.approx(0.32 / 3 * 78, abs=0.2)
        assert ">0<" in _ess_chart(markup) and ">3<" in _ess_chart(markup)  # axis labels


def test_a_long_text_is_cut_in_its_row_and_whole_on_hover_and_click():
    from genlm_lab.widgets.particle_view import TEXT_SHOWN

    long = "x" * TEXT_SHOWN + "TAIL" * 100
    data = ParticleView.from_record(_awrs_record(long)).view_data()
    for markup in (particles_html(data), _draw_js(data)):
        summary = markup.split("<summary")[1].split("</summary>")[0]
        shown = summary.split(">", 1)[1]
        assert "TAIL" not in shown and "x" * TEXT_SHOWN + "…" in shown  # cut in the row
        assert long in summary.split(">", 1)[0]  # the whole in the tooltip
        assert long in markup.split("</summary>")[1].split("</details>")[0]  # and on click
        assert "(+400 characters)" in shown
    short = ParticleView.from_record(_awrs_record("short")).view_data()
    assert "<details" not in particles_html(short) and "<details" not in _draw_js(short)


def test_the_rest_column_has_a_legend_line_and_awrs_cells_count_checks_not_draws():
    data = ParticleView.from_record(_awrs_record("x")).view_data()
    for markup in (particles_html(data), _draw_js(data)):
        legend = markup.split("genlm-rest-note")[1].split("</div>")[0]
        assert "rest</b>: log w minus the factor columns" in legend
        cell = markup.split("genlm-awrs-cell")[1]
        text = cell.split(">", 1)[1].split("</td>")[0]
        assert text == "49,152 checked, 49,152 rejected"
        assert "306183867" not in text and "draws" not in text
        assert "306,183,867 i.i.d. draws" in cell.split(">", 1)[0]  # explained on hover
    plain = ParticleView.from_record(_record([_entry("p", 1, ["a"], [0.0])], "p")).view_data()
    assert "genlm-rest-note" not in particles_html(plain) + _draw_js(plain)


def test_the_resampling_scheme_is_named_beside_the_resampling_steps_in_both_renderings():
    steps = [
        _entry("r", 1, ["a", "b"], [0.0, -3.0], ancestors=[0, 0]),
        _entry("r", 2, ["aa", "ab"], [-1.0, -1.0]),
    ]
    rec = _record(steps, run_id="r")
    rec.params = {"ess_threshold": 0.5, "resampling_method": "systematic"}
    data = ParticleView.from_record(rec).view_data()
    assert data["resampling_method"] == "systematic"
    bare = ParticleView.from_record(_record(steps, run_id="r")).view_data()
    assert bare["resampling_method"] is None  # a record without the scheme names none
    drawn = [particles_html(data), _draw_js(data)]
    assert all("resampled (systematic) at step 1" in m for m in drawn)
    assert "resampled at step 1" in particles_html(bare)


def test_live_steps_show_the_scheme_draws_retained_slot_and_temperature_before_the_end():
    import asyncio

    from _toys import RegexConstraint, toy_llm

    from genlm_lab.control import EOS, SMC, Tempered, direct_token_sampler

    llm = toy_llm(vocab=[b"a", b"b", b"c", b"<eos>"])
    target = Tempered(llm, 0.5) * RegexConstraint(llm.vocab, rb"(ab|b|c)*")
    b, c = llm.vocab[1], llm.vocab[2]
    smc = SMC(direct_token_sampler(target))
    record = asyncio.run(smc(4, 1.0, 4, retained_sequence=[c, b, EOS], seed=2)).record
    view, live = ParticleView(), []
    for entry in record.steps:  # as the run sends them, before on_finish
        view.on_step(entry)
        live.append(view._build_live())
    final = ParticleView.from_record(record).view_data()
    resampled = [s["step"] for s in record.steps if s["resampled"]]
    assert resampled and all(d["retained"] == 0 for d in live)
    for t, data in zip(range(1, len(live) + 1), live, strict=True):
        assert [d["step"] for d in data["resamplings"]] == [s for s in resampled if s <= t]
        assert data["factor_temperatures"] == {target.factors()[0].name: 2.0}
    assert live[-1]["resamplings"] == final["resamplings"]
    early = live[resampled[0] - 1]
    assert early["resampling_method"] == "multinomial" and not early["done"]
    assert f"resampled (multinomial) at step {resampled[0]}" in particles_html(early)
    assert "◆ retained" in particles_html(early) and "(T 2)" in particles_html(early)
