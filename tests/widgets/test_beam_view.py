import math
import re

import pytest

from genlm_lab.bytes import BeamParams, ByteBeamState
from genlm_lab.util import escape_bytes
from genlm_lab.widgets import BeamDebugger, BeamView, beam_data, beam_html

TEXT = b"ab\n<script>\xff"


async def _beam(llm, text=TEXT, k=3):
    beam = await ByteBeamState.initial(llm, BeamParams(K=k))
    await beam.logp_next()
    for b in text:
        beam = await (beam.prune() << b)
        await beam.logp_next()
    return beam


async def test_rows_are_the_recorded_candidates(odd_llm):
    beam = await _beam(odd_llm)
    assert len(beam.history) > 1 and any(s.candidates for s in beam.history)
    for step in beam.history:
        d = step.to_dict()
        data = beam_data(beam.history[: d["position"] + 1], TEXT)
        rows = data["step"]["candidates"]
        assert [r["token_ids"] for r in rows] == [c["token_ids"] for c in d["candidates"]]
        assert [r["status"] for r in rows] == [c["status"] for c in d["candidates"]]
        assert [r["share"] for r in rows] == [c["share"] for c in d["candidates"]]
        assert data["logZ"][-1] == d["logZ"]
        assert data["position"] == d["position"]
        html = beam_html(data)
        assert html.count("<tr class='genlm-") == len(rows)


async def test_token_boxes_escape_odd_bytes_and_markup(odd_llm):
    beam = await _beam(odd_llm)
    data = beam_data(beam.history, TEXT)
    top = data["step"]["candidates"][0]
    want = [escape_bytes(odd_llm.byte_vocab[i], visible_space=True) for i in top["token_ids"]]
    assert top["tokens"] == want
    assert top["partial"] == "\\xff"
    assert "\\n" in top["tokens"]
    html = beam_html(data)
    assert "<script>" not in html.replace("<style>", "")
    assert "&lt;script&gt;" in html
    assert data["text"] == ["a", "b", "\\n", "<", "s", "c", "r", "i", "p", "t", ">", "\\xff"]


async def test_next_byte_bars_are_the_top_of_the_recorded_distribution(odd_llm):
    beam = await _beam(odd_llm, b"ab")
    d = beam.history[-1].to_dict()
    probs = sorted(
        ((math.exp(x), i) for i, x in enumerate(d["next_logprobs"]) if x is not None), reverse=True
    )
    got = beam_data(beam.history, b"ab")["step"]["next_bytes"]
    assert [b["p"] for b in got] == [p for p, _ in probs[: len(got)]]
    assert sum(b["p"] for b in got) <= 1 + 1e-9


async def test_pruned_candidates_are_marked_in_words_and_class(odd_llm):
    beam = await _beam(odd_llm, TEXT, k=1)
    statuses = {c["status"] for s in beam.history for c in s.to_dict()["candidates"]}
    assert "pruned" in statuses
    for t in range(len(beam.history)):
        html = beam_html(beam_data(beam.history[: t + 1], TEXT))
        n = sum(c.status == "pruned" for c in beam.history[t].candidates)
        assert html.count("<tr class='genlm-pruned'>") == n
        assert html.count("<span class='genlm-badge'>pruned</span>") == n


async def test_debugger_steps_back_and_runs_to_the_end(odd_llm):
    dbg = BeamDebugger(odd_llm, TEXT, BeamParams(K=3))
    assert dbg.view_data()["step"] is None
    await dbg.step(3)
    assert dbg.view_data()["position"] == 3
    dbg.back(2)
    assert dbg.view_data()["position"] == 1
    assert len(dbg.view_data()["logZ"]) == 2
    await dbg.goto(5)
    assert dbg.position == 5
    await dbg.run()
    data = dbg.view_data()
    assert data["position"] == len(TEXT) and len(data["lm_calls"]) == len(TEXT) + 1
    ref = await _beam(odd_llm)
    assert data["logZ"] == pytest.approx([s.logZ for s in ref.history])
    assert BeamView(dbg.beam).view_data() == data


async def test_bad_inputs_raise_clear_errors(odd_llm):
    with pytest.raises(ValueError, match="str or bytes"):
        BeamDebugger(odd_llm, 42)
    with pytest.raises(ValueError, match="BeamStep"):
        beam_data([{"nope": 1}])
    beam = await _beam(odd_llm, b"ab")
    with pytest.raises(ValueError, match="consecutive"):
        beam_data(beam.history[1:])
    dbg = BeamDebugger(odd_llm, b"ab")
    with pytest.raises(ValueError, match="outside"):
        await dbg.goto(9)


def test_healing_events_and_healed_candidates_are_written_out():
    from genlm_lab.bytes import BeamStep, CandidateRow, HealEvent

    steps = [
        BeamStep(0, None, [CandidateRow([], [], b"", 0.0, 1.0, "new")], 0.0, lm_calls=1),
        BeamStep(
            1,
            0xFF,
            [CandidateRow([7], [b"<script>"], b"\xff", -2.0, 1.0, "healed")],
            -2.0,
            lm_calls=2,
            healing=[
                HealEvent(
                    0xFF,
                    0,
                    candidate=0,
                    partial=b"<scr",
                    backoff=1,
                    committed=[7],
                    lm_calls=2,
                    success=True,
                ),
                HealEvent(
                    0xFF, 0, candidate=1, partial=b"\n", backoff=0, lm_calls=1, success=False
                ),
            ],
        ),
    ]
    data = beam_data(steps, b"\xff")
    assert [h["success"] for h in data["step"]["healing"]] == [True, False]
    html = beam_html(data)
    assert html.count("class='genlm-note genlm-heal'") == 2
    assert "byte \\xff at 0: candidate 0, partial &#x27;&lt;scr&#x27;, backoff 1" in html
    assert ": healed</div>" in html and ": failed</div>" in html
    assert "<span class='genlm-badge'>healed</span>" in html
    assert "<tr class='genlm-healed'>" in html
    assert data["lm_calls"] == [1, 2]


async def test_a_malformed_browser_message_is_shown_not_raised(odd_llm):
    view = BeamView(await _beam(odd_llm, b"ab"))
    shown = view.view_data()["position"]
    view._on_msg(view, {"action": "back", "n": "two"}, [])
    data = view.view_data()
    assert "step count" in data["error"] and data["position"] == shown


@pytest.mark.parametrize("make", ["view", "debugger"])
@pytest.mark.parametrize(("action", "n"), [("back", -2), ("step", -2), ("step", 1.5)])
async def test_a_negative_step_count_is_refused_and_changes_nothing(odd_llm, make, action, n):
    # back(-2) moved past the last step (and step(-2) before the first), then raised
    # from the redraw with the view's position already corrupted
    if make == "view":
        view = BeamView(await _beam(odd_llm, b"ab"))
    else:
        view = BeamDebugger(odd_llm, b"ab")
        await view.step(1)
    before = (view.position, view.view_data())
    with pytest.raises(ValueError, match="step count must be an int >= 0"):
        result = getattr(view, action)(n)
        if action == "step":
            await result
    assert (view.position, view.view_data()) == before


async def test_a_negative_back_from_the_browser_is_shown_not_raised(odd_llm):
    view = BeamView(await _beam(odd_llm, b"ab"))
    view.back(1)
    shown = view.position
    view._on_msg(view, {"action": "back", "n": -3}, [])
    data = view.view_data()
    assert "step count" in data["error"] and view.position == data["position"] == shown


async def test_beam_data_takes_text_as_str_like_beam_view(odd_llm):
    # bytes("ab") raised "string argument without an encoding"
    beam = await _beam(odd_llm, b"ab")
    assert beam_data(beam.history, "ab") == beam_data(beam.history, b"ab")
    assert beam_data(beam.history, "ab") == BeamView(beam, "ab").view_data()


async def test_the_logZ_chart_draws_the_certified_upper_bound_as_a_band(odd_llm):
    beam = await _beam(odd_llm, k=1)  # K=1 drops candidates: the band opens
    data = beam_data(beam.history, TEXT)
    assert data["logZ_upper"] == pytest.approx([s.logZ_upper for s in beam.history])
    assert all(u >= z - 1e-12 for z, u in zip(data["logZ"], data["logZ_upper"], strict=True))
    assert "certified upper bound" in beam_html(data)
    old = [{k: v for k, v in s.to_dict().items() if k != "logZ_upper"} for s in beam.history]
    assert beam_data(old, TEXT)["logZ_upper"] == data["logZ"]  # older records: no band


async def test_the_beams_alarms_are_shown_up_to_the_step_shown():
    from genlm_lab.backend import ToyLM
    from genlm_lab.bytes import BeamAlarmThresholds

    lm = ToyLM([b"a", b"b", b"<", b"ab"], seed=2)
    text = b"ab" + b"<" * 40  # a repetition runaway, and nothing to flag before it
    dbg = BeamDebugger(lm, text, BeamParams(K=2, alarms=BeamAlarmThresholds(repeat_chars=8)))
    await dbg.run()
    final = dbg.beam
    (alarm,) = final.alarms
    data = dbg.view_data()
    assert data["alarms"] == [{"step": alarm.step, "kind": "runaway", "text": alarm.sentence}]
    html = beam_html(data)
    assert "genlm-alarms" in html and f"position {alarm.step}, runaway" in html
    assert "&lt;" in html and "<<<" not in html  # the sentence is escaped
    dbg.back(len(text) - alarm.step + 1)  # before the alarm: none shown
    assert dbg.view_data()["alarms"] == []
    assert "genlm-alarms" not in beam_html(dbg.view_data())
    # JSON records (to_dict) carry them too
    steps = [s.to_dict() for s in final.history]
    assert beam_data(steps, text)["alarms"] == data["alarms"]


async def test_an_emptied_beam_shows_why_as_an_alarm(odd_llm):
    dbg = BeamDebugger(odd_llm, b"a\xfe", BeamParams(K=2, heal=False))
    with pytest.raises(Exception, match="empty"):
        await dbg.step(2)
    kinds = [a["kind"] for a in dbg.view_data()["alarms"]]
    assert kinds == ["empty"]


async def test_profile_view_draws_the_profiled_steps(odd_llm):
    dbg = BeamDebugger(odd_llm, b"ab<", BeamParams(K=2, profile=True))
    await dbg.run()
    frame = dbg.beam.profile
    data = dbg.profile_view().view_data()
    timed = frame[frame.component != "lm.calls"]
    assert data["total"] == pytest.approx(timed.seconds.sum())
    assert data["steps"] == sorted(set(timed.step))
    assert data["counters"]["lm.calls"] == frame[frame.component == "lm.calls"].calls.sum()
    assert "lm.calls" not in data["components"]
    assert BeamDebugger(odd_llm, b"a").profile_view().view_data()["table"] == []


def test_the_browser_module_draws_the_text_band_and_alarms_as_the_static_html():
    """widgets/beam.js under a minimal DOM: UTF-8 text with bytes on hover, the band, no alarms."""
    import json
    import shutil
    import subprocess
    from pathlib import Path

    from test_beam_html import _read

    from genlm_lab.widgets.base import jsonable

    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    text = "Café".encode()
    data = beam_data(_read(text)[:5], text, 4)  # é read in part
    out = subprocess.run(
        [node, str(Path(__file__).with_name("_draw_js.mjs")), "beam.js", "drawBeam"],
        input=json.dumps(jsonable(data), allow_nan=False),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert '<b title="\\xc3\\xa9: 1 of its 2 bytes read" class="genlm-partial">é</b>' in out or (
        'class="genlm-partial" title="\\xc3\\xa9: 1 of its 2 bytes read">é</b>' in out
    )
    progress = out.split('genlm-progress">')[1].split("</div>")[0]
    assert re.sub(r"<[^>]*>", "", progress) == "Café"
    assert "no alarms up to position 4" in out
    assert "width 0.250 nats at position 4" in out
