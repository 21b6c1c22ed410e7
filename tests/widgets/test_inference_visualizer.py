"""InferenceVisualizer: genlm-control's calls open genlm_lab's ParticleView of the same run."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from genlm_lab.control import SMC, DirectTokenSampler, Potential, Sequences
from genlm_lab.widgets import ParticleView, record_report_html
from genlm_lab.widgets.inference_visualizer import InferenceVisualizer

VOCAB = [b"a", b"b"]


class _Table(Potential):
    """Fixed next-token weights (a, b, EOS) after every context."""

    def __init__(self) -> None:
        super().__init__(VOCAB)
        self.row = np.log([0.5, 0.3, 0.2])

    async def logw_next(self, context):
        return self.make_lazy_weights(self.row.copy())

    async def prefix(self, context):
        return float(sum(self.row[self.lookup[t]] for t in context))

    async def complete(self, context):
        return await self.prefix(context) + float(self.row[-1])


def _run(path: Path | None = None, observers=()) -> Sequences:
    smc = SMC(DirectTokenSampler(_Table()))
    return asyncio.run(smc(5, 0.5, 6, seed=1, json_path=path, observers=list(observers)))


def test_visualize_opens_a_particle_view_of_the_run_written_to_json_path(tmp_path):
    path = tmp_path / "smc_record.jsonl"
    sequences = _run(path)
    with InferenceVisualizer() as viz:
        view = viz.visualize(path)
        assert isinstance(view, ParticleView)
        data = view.view_data()
        assert data["run_id"] == sequences.record.run_id and data["done"]
        assert sorted(p["text"] for p in data["particles"]) == sorted(sequences.texts())
        weights = sorted(p["weight"] for p in data["particles"])
        assert weights == pytest.approx(sorted(sequences.normalized_weights))
        # the run itself, its record, and the record file all give the same view
        for source in (sequences, sequences.record, str(path)):
            assert viz.visualize(source).view_data() == data
        assert len(viz.views) == 4


def test_auto_open_writes_the_runs_page_and_opens_it_from_the_file(tmp_path, monkeypatch):
    opened = []
    monkeypatch.setattr("webbrowser.open", lambda url: opened.append(url))
    path = tmp_path / "run.jsonl"
    sequences = _run(path)
    with InferenceVisualizer(port=8001, serve_dir=tmp_path / "pages") as viz:
        viz.visualize(path, auto_open=True)
        assert opened == [(tmp_path / "pages" / "run.html").resolve().as_uri()]
        page = (tmp_path / "pages" / "run.html").read_text(encoding="utf-8")
        assert page == record_report_html(sequences.record)
        named = viz.report(sequences)  # no file name: the run's id
        assert named.name == f"smc_{sequences.record.run_id}.html"
    assert (tmp_path / "pages" / "run.html").exists()  # a folder of the caller's stays


def test_live_gives_an_observer_that_draws_the_run_as_it_goes():
    viz = InferenceVisualizer()
    view = viz.live()
    sequences = _run(observers=[view])
    data = view.view_data()
    assert data["run_id"] == sequences.record.run_id and data["done"]
    assert sorted(p["text"] for p in data["particles"]) == sorted(sequences.texts())
    viz.shutdown_server()


def test_shutdown_closes_the_views_and_removes_the_temporary_folder():
    sequences = _run()
    viz = InferenceVisualizer()
    views = [viz.visualize(sequences), viz.live()]
    folder = viz.report(sequences).parent
    assert folder.exists() and all(v.comm is not None for v in views)
    viz.shutdown_server()
    assert not folder.exists() and all(v.comm is None for v in views)
    assert viz.views == []
    viz.shutdown_server()  # twice is harmless, as genlm-control's


def test_bad_input_is_refused_with_one_clear_error(tmp_path):
    viz = InferenceVisualizer()
    with pytest.raises(FileNotFoundError, match="JSON file not found"):
        viz.visualize(tmp_path / "missing.json")
    (tmp_path / "other.json").write_text('{"not": "a record"}')
    with pytest.raises(ValueError, match="not an SMC record"):
        viz.visualize(tmp_path / "other.json")
    with pytest.raises(ValueError, match="kept no record"):
        viz.visualize(Sequences([[b"a"]], [0.0]))
    with pytest.raises(TypeError, match="port must be an int"):
        InferenceVisualizer(port="8000")


def test_controls_door_serves_genlm_controls_name():
    import genlm_lab.control as control

    assert control.InferenceVisualizer is InferenceVisualizer
    assert "InferenceVisualizer" in control.__all__
