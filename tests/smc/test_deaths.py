"""Death rows read from a record: one per particle that died, at the step it died, with its reason."""

from __future__ import annotations

from test_alarms import Walk

from genlm_lab.smc import importance_sampling, smc_steer
from genlm_lab.smc.deaths import death_rows, deaths_sentence, most_common_death


class Unlucky(Walk):
    """Dies at step 2 when its first letter is "a"; says why where `explained`."""

    def __init__(self, explained=False, **kw):
        super().__init__(steps=4, score=lambda t, rng: 0.0, **kw)
        self.explained = explained

    async def step(self):
        await super().step()
        if self.t == 2 and self.text.startswith("a"):
            self.condition(False)
            if self.explained:
                self.step_extras = {"killed_by": "Letters", "killed_why": "starts with a"}


async def test_each_particle_dies_once_at_its_step():
    record = (await importance_sampling(Unlucky(), 10, seed=3)).record
    rows = death_rows(record.steps, record.parents())
    expected = [i for i, text in enumerate(record.steps[1]["contents"]) if text.startswith("a")]
    assert 0 < len(expected) < 10
    assert [r["particle"] for r in rows] == expected  # not again in steps 3 and 4
    assert {r["step"] for r in rows} == {2} and {r["factor"] for r in rows} == {"model"}
    frame = record.deaths
    assert frame.particle.tolist() == expected and list(frame.columns[:4]) == [
        "particle",
        "step",
        "factor",
        "reason",
    ]


async def test_a_model_names_its_killer_and_reason():
    record = (await importance_sampling(Unlucky(explained=True), 10, seed=3)).record
    rows = death_rows(record.steps, record.parents())
    assert {(r["factor"], r["reason"]) for r in rows} == {("Letters", "starts with a")}
    factor, reason, count = most_common_death(rows)
    assert (factor, reason, count) == ("Letters", "starts with a", len(rows))
    assert deaths_sentence(rows).startswith(f"Letters killed {len(rows)} of {len(rows)}")


async def test_smc_steer_candidates_that_die_are_each_a_row():
    record = (await smc_steer(Unlucky(), 2, 3, seed=1)).record
    rows = death_rows(record.steps, record.parents())
    assert rows
    for r in rows:
        entry = record.steps[r["step"] - 1]
        assert entry["log_weights"][r["particle"]] == float("-inf")
        assert entry["contents"][r["particle"]].startswith("a")
    assert deaths_sentence([]) == "no death was recorded"


def test_a_run_cut_at_max_tokens_points_at_the_budget():
    cut = {"factor": "JsonSchema", "reason": "cut at max_tokens inside a string at $.name"}
    other = {"factor": "JsonSchema", "reason": "at $, keyword required: 'a' is a required property"}
    assert "WithinBudget(schema, llm, max_tokens)" in deaths_sentence([cut, cut, other])
    assert "WithinBudget" not in deaths_sentence([other, other, cut])
