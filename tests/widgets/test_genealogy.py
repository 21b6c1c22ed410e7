"""The genealogy the particle views draw links every particle to its true parent.

A toy model writes its whole path of choices into its text, so a parent is
checked against the record alone: the child's path is the parent's plus one
choice (or the same, for a parent that had finished or died). This holds for
every edge of every step, for smc_steer (whose steps record candidate lists
of another length than the kept particles) and for smc_standard.
"""

import math
import re
from collections import Counter

import numpy as np
import pytest

from genlm_lab.smc import LogCategorical, Model, SMCRecord, smc_standard, smc_steer
from genlm_lab.widgets import ParticleView, particles_html
from genlm_lab.widgets.report import record_report_html

_LOGITS = np.random.default_rng(7).normal(size=(8, 40))


class PathModel(Model):
    """One of 40 labels per step; dies on labels divisible by 11, ends on 5s or at `length`.

    Its text is the full path, "3.17.8", with "$" once it has finished.
    """

    def __init__(self, length: int = 6) -> None:
        super().__init__()
        self.length, self.path = length, []

    async def step(self) -> None:
        label = await self.sample(LogCategorical(_LOGITS[len(self.path)]))
        self.path.append(int(label))
        self.score(-0.05 * label)
        self.condition(label % 11 != 0 or label == 0)
        if label % 5 == 0 or len(self.path) == self.length:
            self.finish()

    def string_for_serialization(self) -> str:
        return ".".join(map(str, self.path)) + ("$" if self.finished else "")


def _path(text: str) -> list[str]:
    return text.rstrip("$").split(".") if text.rstrip("$") else []


def assert_true_parents(record: SMCRecord, gen: list[list[dict]]) -> None:
    """Every edge of `gen` joins a particle to the one it grew from; every lineage reaches step 0."""
    steps = record.steps
    assert [len(col) for col in gen] == [len(s["contents"]) for s in steps]
    for t in range(1, len(steps)):
        prev, cur = steps[t - 1], steps[t]
        assert prev["ancestors"] is not None or len(prev["contents"]) == len(cur["contents"])
        for i, node in enumerate(gen[t]):
            p = node["parent"]
            assert p is not None, f"step {t}, particle {i} has no parent"
            parent, child = prev["contents"][p], cur["contents"][i]
            if prev["finished"][p] or prev["log_weights"][p] == -math.inf:
                assert child == parent, (t, i, p)  # finished and dead particles stay as they are
            else:
                assert _path(child)[:-1] == _path(parent) and len(_path(child)) == t + 1, (t, i, p)
        # Only particles that the resampling kept have children, each kept once per copy.
        parents = Counter(node["parent"] for node in gen[t])
        if prev["ancestors"] is not None:
            assert set(parents) == set(prev["ancestors"])
    for t in range(len(gen)):  # the lineage of every particle, final ones included, reaches step 0
        for i in range(len(gen[t])):
            s, j = t, i
            while s > 0:
                j, s = gen[s][j]["parent"], s - 1
                assert j is not None
            assert 0 <= j < len(gen[0])


def _edges_of_svg(html: str) -> set[tuple[int, int, int]]:
    """(step, index, parent index) of every line of the static genealogy, from coordinates."""
    dots = {
        (float(x), float(y)): (int(t), int(i))
        for x, y, t, i in re.findall(
            r"<circle cx='([\d.]+)' cy='([\d.]+)'[^>]*data-step='(\d+)' data-index='(\d+)'", html
        )
    }
    edges = set()
    for x1, y1, x2, y2 in re.findall(
        r"<line x1='([\d.]+)' y1='([\d.]+)' x2='([\d.]+)' y2='([\d.]+)'", html
    ):
        (t0, p), (t, i) = dots[float(x1), float(y1)], dots[float(x2), float(y2)]
        assert t0 == t - 1
        edges.add((t, i, p))
    return edges


async def _steer(seed: int) -> SMCRecord:
    result = await smc_steer(PathModel(), 4, 3, seed=seed)
    record = result.record
    # smc_steer's last step names the final particles among its candidates.
    last = record.steps[-1]
    assert [last["contents"][a] for a in last["ancestors"]] == [
        p.string_for_serialization() for p in result
    ]
    return record


@pytest.mark.parametrize("seed", range(6))
async def test_steer_genealogy_links_every_candidate_to_the_particle_it_was_cloned_from(seed):
    record = await _steer(seed)
    assert len(record.steps) >= 2
    assert any(len(s["contents"]) != record.n_particles for s in record.steps)
    data = ParticleView.from_record(record).view_data()
    assert_true_parents(record, data["genealogy"])
    # The kept candidates of a step each have n_beam children, or one if they had finished.
    for t in range(1, len(record.steps)):
        prev = record.steps[t - 1]
        want = Counter({a: 1 if prev["finished"][a] else 3 for a in prev["ancestors"]})
        assert Counter(n["parent"] for n in data["genealogy"][t]) == want
    # The static SVG (notebook output and offline report) draws exactly these edges.
    want = {
        (t, i, n["parent"])
        for t, col in enumerate(data["genealogy"][1:], 1)
        for i, n in enumerate(col)
    }
    assert _edges_of_svg(particles_html(data)) == want
    assert _edges_of_svg(record_report_html(record)) == want


async def test_steer_genealogy_is_the_same_from_json_and_from_the_live_view(tmp_path):
    view = ParticleView()
    result = await smc_steer(PathModel(), 3, 2, observers=[view], seed=11)
    path = tmp_path / "run.jsonl"
    await smc_steer(PathModel(), 3, 2, json_file=path, seed=11)
    gen = view.view_data()["genealogy"]
    assert_true_parents(result.record, gen)
    from_file = ParticleView.from_record(path).view_data()
    assert {**from_file, "run_id": None} == {**view.view_data(), "run_id": None}
    assert ParticleView.from_record(result.record.to_json()).view_data() == view.view_data()


@pytest.mark.parametrize("seed", range(4))
async def test_steer_rows_mark_the_candidates_the_cut_dropped_and_count_the_kept(seed):
    result = await smc_steer(PathModel(), 4, 3, seed=seed)
    last = result.record.steps[-1]
    data = ParticleView.from_record(result.record).view_data()
    rows = data["particles"]
    assert data["n_kept"] == len(result) == len(last["ancestors"]) < len(rows)
    kept = set(last["ancestors"])
    for i, row in enumerate(rows):
        dead = last["log_weights"][i] == -math.inf
        assert (row["state"] == "pruned") == (i not in kept and not dead)
    survivors = [row["text"] for row in rows if row["state"] not in ("pruned", "dead")]
    assert sorted(survivors) == sorted(p.string_for_serialization() for p in result)
    assert f"{len(rows)} candidates, {len(result)} kept" in particles_html(data)
    n_pruned = 0
    for t, col in enumerate(data["genealogy"][:-1]):  # a pruned candidate has no children
        pruned = {i for i, node in enumerate(col) if node["state"] == "pruned"}
        assert not pruned & {n["parent"] for n in data["genealogy"][t + 1]}
        n_pruned += len(pruned)
    assert n_pruned > 0


@pytest.mark.parametrize("method", ["multinomial", "systematic"])
async def test_standard_genealogy_with_resampling_links_true_parents(method):
    result = await smc_standard(PathModel(), 8, ess_threshold=1.0, resampling_method=method, seed=3)
    record = result.record
    assert any(s["ancestors"] is not None for s in record.steps[:-1])
    data = ParticleView.from_record(record).view_data()
    gen = data["genealogy"]
    assert_true_parents(record, gen)
    assert data["n_kept"] is None and "8 particles" in particles_html(data)
    assert all(node["state"] != "pruned" for col in gen for node in col)
    for t in range(1, len(gen)):
        anc = record.steps[t - 1]["ancestors"]
        assert [n["parent"] for n in gen[t]] == (anc if anc else list(range(8)))


def _step(step, contents, ancestors=None, finished=None):
    n = len(contents)
    return {
        "run_id": "r",
        "step": step,
        "contents": contents,
        "log_weights": [0.0] * n,
        "weight_increments": [0.0] * n,
        "finished": finished or [False] * n,
        "ess": float(n),
        "log_ml": 0.0,
        "resampled": ancestors is not None,
        "ancestors": ancestors,
    }


def _steer_record(steps, n_beam=2):
    return SMCRecord(n_particles=2, algorithm="smc_steer", params={"n_beam": n_beam}, steps=steps)


def test_steer_record_parents_follow_kept_candidates_and_finished_ones_stay_single():
    steps = [
        _step(1, ["a", "b", "c", "d$"], ancestors=[3, 1], finished=[False, False, False, True]),
        _step(2, ["d$", "ba", "bb"], ancestors=[2, 0], finished=[True, False, False]),
        _step(3, ["bba", "bbb", "d$"], ancestors=[0, 2]),
    ]
    gen = ParticleView.from_record(_steer_record(steps)).view_data()["genealogy"]
    assert [[n["parent"] for n in col] for col in gen] == [[None] * 4, [3, 1, 1], [2, 2, 0]]


@pytest.mark.parametrize(
    ("steps", "match"),
    [
        ([_step(1, ["a", "b", "c", "d"], ancestors=[0, 9]), _step(2, ["a"] * 4)], "ancestors"),
        ([_step(1, ["a", "b", "c", "d"], ancestors=[0, -1]), _step(2, ["a"] * 4)], "ancestors"),
        ([_step(1, ["a", "b", "c", "d"], ancestors=[0, 1]), _step(2, ["a"] * 3)], "step 2"),
    ],
)
def test_steer_record_with_mismatched_ancestors_is_refused_clearly(steps, match):
    with pytest.raises(ValueError, match=match):
        ParticleView.from_record(_steer_record(steps))


@pytest.mark.parametrize(
    "steps",
    [
        [_step(1, ["a", "b"], ancestors=[0, 5]), _step(2, ["a", "b"])],
        [_step(1, ["a", "b"], ancestors=[0, 1, 1]), _step(2, ["a", "b"])],
        [_step(1, ["a", "b"], ancestors=[0, 0]), _step(2, ["a", "a", "b"])],
        [_step(1, ["a", "b"]), _step(2, ["a", "b", "c"])],
    ],
)
def test_standard_record_with_mismatched_ancestors_is_refused_clearly(steps):
    record = SMCRecord(n_particles=2, run_id="r", steps=steps)
    with pytest.raises(ValueError, match="step"):
        ParticleView.from_record(record)


async def test_genealogy_tooltips_number_steps_as_its_axis_and_the_alarms_do():
    """A dot's tooltip names the record's step (the first token is step 1) and its slot."""
    record = (await smc_standard(PathModel(), n_particles=4, ess_threshold=0.5, seed=3)).record
    data = ParticleView.from_record(record).view_data()
    page = particles_html(data)
    first = record.steps[0]["step"]
    assert first == 1 and data["steps"][0] == first
    assert f"step {first}, slot 0 (" in page and "step 0," not in page
