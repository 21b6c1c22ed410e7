"""SMCRecord round trips, incremental record files, observers and interruptions."""

import asyncio
import json
import math
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genlm_lab.backend import ToyLM
from genlm_lab.smc import (
    Bernoulli,
    CollectingObserver,
    LMContext,
    Model,
    SMCRecord,
    smc_standard,
    smc_steer,
)
from genlm_lab.smc.examples import Coins, GeometricWalk

floats = st.one_of(st.floats(allow_nan=False), st.just(-math.inf))


@st.composite
def records(draw):
    n = draw(st.integers(1, 4))
    steps = []
    for k in range(draw(st.integers(0, 3))):
        steps.append(
            {
                "run_id": "r",
                "step": k + 1,
                "contents": draw(st.lists(st.text(), min_size=n, max_size=n)),
                "log_weights": draw(st.lists(floats, min_size=n, max_size=n)),
                "weight_increments": draw(st.lists(floats, min_size=n, max_size=n)),
                "finished": draw(st.lists(st.booleans(), min_size=n, max_size=n)),
                "ess": draw(floats),
                "log_ml": draw(floats),
                "resampled": draw(st.booleans()),
                "ancestors": draw(
                    st.none() | st.lists(st.integers(0, n - 1), min_size=n, max_size=n)
                ),
            }
        )
    return SMCRecord(n_particles=n, params={"seed": draw(st.none() | st.integers())}, steps=steps)


@settings(max_examples=40, deadline=None)
@given(record=records())
def test_record_round_trips_exactly_through_json(record):
    text = record.to_json()
    json.loads(text)  # strict JSON: no bare Infinity / NaN
    assert "Infinity" not in text.replace('"-Infinity"', "").replace('"Infinity"', "")
    again = SMCRecord.from_json(text)
    assert again == record
    assert again.to_json() == text


async def test_record_of_a_run_round_trips_and_describes_every_step(tmp_path):
    result = await smc_standard(GeometricWalk(), 12, ess_threshold=0.8, seed=0)
    record = result.record
    assert record.n_particles == 12 and len(record.run_id) == 32
    assert record.final["status"] == "finished"
    assert record.final["log_ml"] == pytest.approx(result.log_ml)
    assert SMCRecord.from_json(record.to_json()) == record
    path = tmp_path / "whole.json"
    record.save(path)
    assert SMCRecord.load(path) == record
    for entry in record.steps:
        assert len(entry["contents"]) == 12
        if entry["resampled"]:
            assert len(entry["ancestors"]) == 12
    assert len(record.to_pandas()) == 12 * len(record)


async def test_json_file_matches_the_in_memory_record(tmp_path):
    path = tmp_path / "run.jsonl"
    result = await smc_standard(Coins(), 10, seed=1, json_file=path)
    assert SMCRecord.load(path) == result.record


class Explodes(Model):
    """Takes `k` good steps, then raises inside a step."""

    def __init__(self, k, error=RuntimeError):
        super().__init__()
        self.k, self.error, self.t = k, error, 0

    async def step(self):
        self.t += 1
        if self.t > self.k:
            raise self.error("boom")
        self.score(-0.1 * self.t)

    def __str__(self):
        return f"t={self.t}"


@pytest.mark.parametrize("error", [RuntimeError, KeyboardInterrupt])
async def test_interrupted_run_leaves_finished_steps_in_json_file(tmp_path, error):
    path = tmp_path / "run.jsonl"
    with pytest.raises(error):
        await smc_standard(Explodes(3, error), 6, json_file=path, seed=0)
    record = SMCRecord.load(path)
    assert [e["step"] for e in record.steps] == [1, 2, 3]
    assert record.steps[-1]["contents"] == ["t=3"] * 6
    assert record.final["status"] == "interrupted"


def test_record_file_cut_mid_line_still_loads(tmp_path):
    path = tmp_path / "cut.jsonl"
    asyncio.run(smc_standard(Coins(), 4, seed=0, json_file=path))
    text = path.read_text().splitlines()
    cut = "\n".join(text[:3]) + "\n" + text[3][: len(text[3]) // 2]
    record = SMCRecord.from_json(cut)
    assert len(record.steps) == 2 and record.final is None


class Broken:
    def on_step(self, entry):
        raise ValueError("view crashed")


async def test_observer_that_raises_is_reported_and_detached():
    good = CollectingObserver()
    calls = []
    with pytest.warns(RuntimeWarning, match="observer Broken raised ValueError"):
        result = await smc_standard(Coins(), 8, observers=[Broken(), good, calls.append], seed=0)
    assert len(good.entries) == len(result.record.steps) == len(calls) == 5
    assert good.entries[0] is result.record.steps[0]
    assert good.record is result.record


async def test_async_observers_are_awaited_and_steer_reports_steps():
    seen = []

    class Async:
        async def on_step(self, entry):
            await asyncio.sleep(0)
            seen.append(entry["step"])

    result = await smc_steer(Coins(), 4, 2, observers=Async(), seed=0)
    assert seen == [e["step"] for e in result.record.steps] == [1, 2, 3, 4, 5]


class CountingToyLM(ToyLM):
    resets = 0

    def reset_async_queries(self):
        self.resets += 1


class Interrupted(Model):
    def __init__(self, lm):
        super().__init__()
        self.ctx = LMContext(lm, [0])

    async def step(self):
        await self.sample(self.ctx.next_token())
        if self.ctx.token_count == 2:
            raise KeyboardInterrupt


async def test_interruption_resets_backend_queue_and_backend_still_works():
    lm = CountingToyLM([b"a", b"b", b"c"])
    with pytest.raises(KeyboardInterrupt):
        await smc_standard(Interrupted(lm), 4, seed=0)
    assert lm.resets == 1
    assert (await lm.next_token_logprobs([0, 1])).shape == (3,)


class AsyncFinish:
    def __init__(self):
        self.finished = False

    def on_step(self, entry):
        pass

    async def on_finish(self, record):
        self.finished = True


class FinishBreaks:
    def on_step(self, entry):
        pass

    def on_finish(self, record):
        raise ValueError("view crashed at the end")


@pytest.mark.parametrize("algorithm", ["standard", "steer"])
@pytest.mark.parametrize("error", [RuntimeError, KeyboardInterrupt, asyncio.CancelledError])
async def test_an_interrupted_run_tells_its_observers_how_it_ended(algorithm, error):
    collected, later = CollectingObserver(), AsyncFinish()
    observers = [collected, later, FinishBreaks()]
    run = smc_standard(Explodes(3, error), 6, observers=observers, seed=0)
    if algorithm == "steer":
        run.close()
        run = smc_steer(Explodes(3, error), 3, 2, observers=observers, seed=0)
    with pytest.raises(error), pytest.warns(RuntimeWarning, match="FinishBreaks raised"):
        await run
    assert [e["step"] for e in collected.entries] == [1, 2, 3]
    assert collected.record is not None and collected.record.final["status"] == "interrupted"
    assert not later.finished  # an async on_finish cannot be awaited while the run unwinds


class Flips(Model):
    """One flip per step, heads favoured by the weight; its text grows by one letter a step."""

    def __init__(self):
        super().__init__()
        self.flips = ""

    async def step(self):
        heads = await self.sample(Bernoulli(0.5))
        self.flips += "H" if heads else "T"
        self.score(2.0 if heads else 0.0)
        if len(self.flips) == 4:
            self.finish()

    def __str__(self):
        return self.flips


@pytest.mark.parametrize(
    "run",
    [
        lambda: smc_standard(Flips(), 6, ess_threshold=1.0, seed=3),
        lambda: smc_steer(Flips(), 3, 3, seed=3),
    ],
)
async def test_to_pandas_gives_each_particle_the_row_it_continues(run):
    # For smc_steer, whose candidates outnumber `ancestors`, to_pandas raised IndexError;
    # each row's "ancestor" now names the particle of the previous step it continues.
    record = (await run()).record
    assert sum(e["resampled"] for e in record.steps) >= 2
    frame = record.to_pandas()
    assert len(frame) == sum(len(e["contents"]) for e in record.steps)
    for t, entry in enumerate(record.steps):
        rows = frame[frame.step == entry["step"]]
        for i, (text, parent) in enumerate(zip(rows.contents, rows.ancestor, strict=True)):
            if t == 0:
                assert parent is None and len(text) == 1
            else:
                assert text[:-1] == record.steps[t - 1]["contents"][int(parent)], (t, i)


class BytesContents(Model):
    async def step(self):
        self.finish()

    def string_for_serialization(self):
        return b"raw bytes"  # not text


async def test_contents_that_are_not_text_are_refused_when_recorded(tmp_path):
    # The record took them; json_file writing (or to_json later) then failed with
    # "Object of type bytes is not JSON serializable", naming no particle.
    with pytest.raises(TypeError, match=r"particle 0.*string_for_serialization.*bytes"):
        await smc_standard(BytesContents(), 2, seed=0)


@pytest.mark.parametrize(
    "run",
    [
        lambda seed: smc_standard(Flips(), 2, seed=seed),
        lambda seed: smc_steer(Flips(), 2, 2, seed=seed),
    ],
)
async def test_a_numpy_integer_seed_is_recorded(run):
    # Only Python ints were recorded: seed=np.int64(7) left params["seed"] = None.
    record = (await run(np.int64(7))).record
    assert record.params["seed"] == 7 and type(record.params["seed"]) is int
    assert SMCRecord.from_json(record.to_json()) == record


class InterruptedBytes(Model):
    def __init__(self, ctx):
        super().__init__()
        self.ctx = ctx

    async def step(self):
        await self.sample(self.ctx.next_byte())
        if len(self.ctx.generated) == 2:
            raise KeyboardInterrupt


async def test_interrupting_a_byte_level_run_resets_the_lm_under_its_beam():
    from genlm_lab.bytes import BeamParams
    from genlm_lab.smc import ByteLMContext

    lm = CountingToyLM([b"a", b"b", b"ab"], seed=2)
    ctx = await ByteLMContext.create(lm, b"a", BeamParams(K=4))
    assert ctx.lm is lm
    with pytest.raises(KeyboardInterrupt):
        await smc_standard(InterruptedBytes(ctx), 3, seed=0)
    assert lm.resets == 1


@pytest.mark.parametrize(
    ("field", "bad"), [("log_weights", ["abc"]), ("ess", "abc"), ("log_ml", True)]
)
async def test_a_record_field_that_is_not_a_number_is_one_value_error_naming_it(field, bad):
    result = await smc_standard(GeometricWalk(), 3, seed=0)
    data = json.loads(result.record.to_json())
    data["steps"][0][field] = bad
    with pytest.raises(ValueError, match=rf"record field '{field}' holds .*not a number"):
        SMCRecord.from_json(json.dumps(data))


class _Tagged(Model):
    """Two steps, each appending a tag that needs HTML escaping."""

    def __init__(self) -> None:
        super().__init__()
        self.text = ""

    async def step(self) -> None:
        self.text += "<b>&"
        if len(self.text) >= 8:
            self.finish()

    def string_for_serialization(self) -> str:
        return self.text


async def test_repr_is_one_short_line_with_the_run_summary():
    # the dataclass repr printed every step entry: thousands of lines for a long run
    result = await smc_standard(Coins(), 50, seed=0)
    record = result.record
    text = repr(record)
    final = record.final
    assert "\n" not in text and len(text) < 150
    for part in ("smc_standard", "50 particles", f"{len(record.steps)} steps", "finished"):
        assert part in text, (part, text)
    assert f"log_ml={final['log_ml']:.4f}" in text
    running = SMCRecord(n_particles=3, steps=record.steps[:1])
    assert "running" in repr(running) and f"{record.steps[0]['log_ml']:.4f}" in repr(running)


async def test_html_is_the_particle_view_with_texts_escaped():
    result = await smc_standard(_Tagged(), 3, seed=0)
    html = result.record._repr_html_()
    assert "genlm-particles" in html and "finished" in html
    assert "&lt;b&gt;&amp;&lt;b&gt;&amp;" in html and "<b>&<b>&" not in html


def test_importing_smc_does_not_import_the_widgets():
    # layering: inference emits events; views are imported only by a notebook's repr
    code = "import sys, genlm_lab.smc; print(any(m.startswith('genlm_lab.widgets') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
