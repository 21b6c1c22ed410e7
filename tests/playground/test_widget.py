"""The Playground without a browser: runs, Stop, masks at a step, saved notebooks (choices: test_controls)."""

import asyncio

import pytest
from _pasted_code import run_pasted

from genlm_lab.backend import load_model_by_name
from genlm_lab.playground import Playground, PlaygroundConfig, context_at, to_code
from genlm_lab.playground.controls import NOT_RUN
from genlm_lab.widgets import MaskView


@pytest.fixture(scope="module")
def tiny():
    return load_model_by_name("tiny-random")


def _playground(tiny, **settings) -> Playground:
    config = PlaygroundConfig(prompt="Code: ", model="tiny-random", **settings)
    return Playground(config, lm=tiny)


async def test_a_run_fills_the_views_and_reopens_its_masks(tiny):
    pg = _playground(tiny, constraint="[a-z]{2}[0-9]{2}", n_particles=3, max_tokens=8)
    sequences = await pg.run()
    record = sequences.record
    assert len(record.steps) > 0
    assert pg.particles.view_data()["particles"]
    assert pg.particles.view_data()["alarms"] == [
        {"step": a[0], "kind": a[1], "text": a[2]} for a in record.alarms
    ]
    profile = pg.profile.view_data()
    assert profile["done"] and profile["table"]
    # the record adds the finishing observers' own time after the view has shown it
    assert profile["total"] == pytest.approx(record.profile["seconds"].sum(), rel=0.05)
    # steps count as alarms and the genealogy do: the first token is step 1
    assert (pg.step.min, pg.step.max) == (1, len(record.steps)) and not pg.step.disabled
    assert list(pg.particle.options) == list(range(3))
    # mask_at numbers steps as the slider does: step 1 draws the first token, from nothing
    target = pg._run.smc.unit_sampler.target
    empty = (await MaskView.of(target, [])).view_data()
    assert (await pg.mask_at(1, 2)).view_data() == empty
    with pytest.raises(ValueError, match="step 1 draws the first token"):
        await pg.mask_at(0, 0)
    mask = await pg.mask_at(2, 0)
    data = mask.view_data()
    assert data["n_allowed"] > 0  # a live particle's next token has allowed choices
    assert (
        data == (await MaskView.of(target, context_at(record, 2, 0, target.vocab_eos))).view_data()
    )
    pg.step.value = 2  # what moving the slider does: the mask of that step appears below
    for _ in range(200):  # until step 2's mask replaces the step 1 one drawn after the run
        if "step 2" in pg.mask_head.value:
            break
        await asyncio.sleep(0.05)
    # the second token's mask (record entry 1), for the particle in slot 0 of that step
    assert "slot 0 of step 2 " in pg.mask_head.value
    assert "a place in the population, not a line of descent" in pg.particle.tooltip
    shown = pg.mask_view
    assert shown.view_data() == data
    assert "log ML" in pg.status.value


async def test_stop_cancels_and_the_model_stays_usable(tiny):
    pg = _playground(tiny, constraint="[a-z]{40}", n_particles=6, max_tokens=45)
    task = pg.start()
    assert pg.stop_button.disabled is False and pg.run_button.disabled is True
    for _ in range(400):  # until the run has taken a step
        await asyncio.sleep(0.01)
        if pg.particles.view_data().get("particles"):
            break
    pg.stop()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(0)
    assert "stopped" in pg.status.value
    assert pg.code.state == "shown" and "which was stopped" in pg.code.label
    assert pg.run_button.disabled is False and pg.stop_button.disabled is True
    pg.source.value, pg.max_tokens.value = "[a-z]{1,60}", 5
    again = await pg.run()
    assert len(again.contexts) == 6


async def test_a_failed_run_says_why(tiny):
    pg = _playground(tiny)
    pg.source.value = "ab(c"
    task = pg.start()
    with pytest.raises(ValueError):
        await task
    await asyncio.sleep(0)
    assert "InvalidGrammar" in pg.status.value
    assert pg.code.state == "not_run" and "ab(c" not in pg.code.code  # nothing ran


def test_before_any_run_the_panels_say_nothing_untrue(tiny):
    pg = _playground(tiny)
    assert "no run yet" in pg.status.value
    assert pg.particles.layout.display == "none" and pg.profile.layout.display == "none"
    assert pg.mask_head.value == "" and pg.mask_view.layout.display == "none"
    assert pg.step.disabled
    assert pg.code.state == "not_run" and pg.code.code.startswith(NOT_RUN)


async def test_each_run_owns_every_panel(tiny):
    pg = _playground(tiny, constraint="[a-z]{2}", n_particles=3, max_tokens=6, method="direct")
    await pg.run()
    first_run = pg.particles.run_id
    assert pg.particles.layout.display is None and pg.profile.layout.display is None
    assert "3 particles" in pg.status.value
    for _ in range(200):  # the new run's mask at step 0 is drawn without moving the slider
        if pg.mask_head.value:
            break
        await asyncio.sleep(0.02)
    assert "regex run" in pg.mask_head.value and pg.mask_view.layout.display is None
    assert "BoolFSA" in str(pg.mask_view.view_data())
    pg.kind.value, pg.source.value = "json_schema", '{"type": "integer"}'
    pg.n_particles.value = 2
    task = pg.start()
    await asyncio.sleep(0)
    # the regex run's panels are gone the moment the run starts
    assert pg.mask_head.value == "" and pg.mask_view.layout.display == "none"
    assert pg.particles.layout.display == "none" and pg.profile.layout.display == "none"
    await task
    for _ in range(200):
        if pg.mask_head.value:
            break
        await asyncio.sleep(0.02)
    assert "json_schema run" in pg.mask_head.value
    mask = str(pg.mask_view.view_data())
    assert "JsonSchema" in mask and "BoolFSA" not in mask
    assert pg.particles.run_id != first_run
    assert len(pg.particles.view_data()["particles"]) == 2
    assert pg.profile.view_data()["table"]  # profiled: no "run with profile=True" hint


async def test_errors_are_styled_as_errors(tiny):
    pg = _playground(tiny)
    pg.source.value = "ab(c"
    assert "genlm-error" in pg.error.value and "color" in pg.error.value
    with pytest.raises(ValueError):
        await pg.start()
    await asyncio.sleep(0)
    assert "genlm-error" in pg.status.value and "color" in pg.status.value
    assert pg.particles.layout.display == "none"  # no half-drawn views of a run that never ran


async def test_a_saved_notebook_shows_the_choices_and_the_run(tiny):
    pg = _playground(tiny, constraint="[a-z]{2}", n_particles=2, max_tokens=5)
    data, _ = pg._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in data
    assert "genlm-stored" in data["text/html"] and "[a-z]{2}" in data["text/html"]
    assert "genlm-particles" not in data["text/html"]  # no run yet
    await pg.run()
    data, _ = pg._repr_mimebundle_()
    assert "genlm-particles" in data["text/html"]
    assert "<script" not in data["text/html"]


async def test_copy_as_code_describes_the_run_shown_whatever_the_form_says(tiny):
    pg = _playground(tiny, constraint="[a-z]{2}[0-9]", n_particles=3, max_tokens=6, seed=2)
    ran = pg.current_config()
    sequences = await pg.run()
    assert pg.code.state == "shown" and pg.code.code == to_code(ran)
    pg.code.copied = "clipboard"  # the browser's report of a copy
    pg.seed.value = 11
    pg.prompt.value = "Never run: "
    pg.kind.value = "json_schema"
    pg.source.value = '{"type": "object", "properties": {"a": {"$ref": "#/nowhere"'  # broken
    assert pg.error.value  # the editor says the schema is broken
    assert pg.code.code == to_code(ran) and pg.code.state == "changed"
    assert "the form has changed since the run shown" in pg.code.label
    assert pg.code.copied == ""  # no claim of a copy made before the form changed
    for never_run in ("seed=11", "Never run", "nowhere", "JsonSchema"):
        assert never_run not in pg.code.code
    assert "Never run" not in pg.static_html() and "the run shown" in pg.static_html()
    # pasted and run, the copied code gives the texts and weights on screen
    pasted = await run_pasted(pg.code.code)
    assert pasted.contexts == sequences.contexts and len(pasted.contexts) == 3
    assert list(pasted.log_weights) == pytest.approx(list(sequences.log_weights), nan_ok=True)
    assert pasted.decoded_posterior == pytest.approx(sequences.decoded_posterior)
