"""Death rows read from a record: one per particle that died, at the step it died, with its reason."""

from __future__ import annotations

from test_alarms import Walk

from genlm_lab.smc import importance_sampling, smc_standard, smc_steer
from genlm_lab.smc.deaths import (
    cut_hint,
    death_rows,
    deaths_sentence,
    final_deaths,
    most_common_death,
)


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
    assert deaths_sentence(rows).startswith(f"Letters caused {len(rows)} of {len(rows)} deaths")


async def test_smc_steer_candidates_that_die_are_each_a_row():
    record = (await smc_steer(Unlucky(), 2, 3, seed=1)).record
    rows = death_rows(record.steps, record.parents())
    assert rows
    for r in rows:
        entry = record.steps[r["step"] - 1]
        assert entry["log_weights"][r["particle"]] == float("-inf")
        assert entry["contents"][r["particle"]].startswith("a")
    assert deaths_sentence([]) == "no death was recorded"


def test_a_cut_hint_names_what_applies_to_the_constraint_at_hand():
    cut = {"factor": "JsonSchema", "reason": "cut at max_tokens inside a string at $.name"}
    other = {"factor": "JsonSchema", "reason": "at $, keyword required: 'a' is a required property"}
    sentence = deaths_sentence([cut, cut, other])
    assert "keep budget=True (the default) so that JsonSchema refuses" in sentence
    assert "WithinBudget" not in sentence
    assert "budget=True" not in deaths_sentence([other, other, cut])  # not the commonest
    regex = {"factor": "BoolFSA", "reason": "cut at max_tokens: BoolFSA does not accept ..."}
    assert "so that BoolFSA refuses" in deaths_sentence([regex])
    assert "WithinBudget" not in deaths_sentence([regex])
    budgeted = {
        "factor": "JsonSchema",
        "reason": "cut at max_tokens: the budget of 20 tokens was too small for JsonSchema "
        "to finish (at $.date, keyword format)",
        "budget": 20,
    }
    on = deaths_sentence([budgeted])
    assert "budget=False turns budgets off" in on and "raise max_tokens" in on
    assert "budget=True" not in on
    assert cut_hint(None, None) == "the budget ran out: raise max_tokens or ask for shorter output"
    assert "budget of 7 tokens was too small for BoolCFG" in cut_hint("BoolCFG", 7)


def test_counts_are_of_particles_when_told_else_of_deaths():
    rows = [{"factor": "JsonSchema", "reason": "r"}] * 5
    assert deaths_sentence(rows).startswith("JsonSchema caused 5 of 5 deaths")
    assert deaths_sentence(rows[:3], n_particles=3).startswith("JsonSchema killed 3 of 3 particles")


def _entry(step, log_weights):
    return {"step": step, "log_weights": log_weights, "contents": ["x"] * len(log_weights)}


def test_final_deaths_follow_each_final_particle_back_to_its_own_death():
    inf = float("-inf")
    # 3 particles. Step 1: particle 0 dies. Resampling copies 1 over 0 (links [1, 1, 2]).
    # Step 2: both copies of 1 die; step 3: particle 2 dies. 4 deaths, 3 particles.
    steps = [
        _entry(1, [inf, 0.0, 0.0]),
        _entry(2, [inf, inf, 0.0]),
        _entry(3, [inf, inf, inf]),
    ]
    parents = [None, [1, 1, 2], [0, 1, 2]]  # as SMCRecord.parents() gives them
    rows = death_rows(steps, parents)
    assert [(r["step"], r["particle"]) for r in rows] == [(1, 0), (2, 0), (2, 1), (3, 2)]
    final = final_deaths(rows, steps, parents)
    assert [(r["step"], r["particle"]) for r in final] == [(2, 0), (2, 1), (3, 2)]
    assert len(final) <= len(steps[-1]["log_weights"])


async def test_a_resampled_run_never_counts_more_deaths_than_particles():
    record = (await smc_standard(Unlucky(explained=True), 3, ess_threshold=1.0, seed=3)).record
    rows = death_rows(record.steps, record.parents())
    final = final_deaths(rows, record.steps, record.parents())
    dead_at_end = sum(w == float("-inf") for w in record.steps[-1]["log_weights"])
    assert len(final) == dead_at_end <= 3


def test_reasons_that_embed_their_token_are_grouped_by_cause():
    def gives(token, n=2):
        return {
            "factor": "BoolFSA",
            "reason": f"BoolFSA gives {token!r} weight zero after {n} tokens",
        }

    other = {"factor": "BoolFSA", "reason": "cut at max_tokens: BoolFSA does not accept it"}
    rows = [gives(" toilets"), gives(" chairs"), gives(' "x'), other, other]
    factor, cause, count = most_common_death(rows)
    assert (factor, count) == ("BoolFSA", 3)
    assert cause == "BoolFSA gives <token> weight zero after 2 tokens"
    sentence = deaths_sentence(rows)
    assert "most common reason (3 of 5): BoolFSA: BoolFSA gives <token> weight zero" in sentence
    assert "' toilets'" in sentence and "' chairs'" in sentence and "' \"x'" in sentence
    # one token alone keeps its reason as it was
    assert "gives ' toilets' weight zero" in deaths_sentence([gives(" toilets")] * 2)
    budget = "JsonSchema could not end within max_tokens=16 after {} (13 tokens)"
    refused = [{"factor": "JsonSchema", "reason": budget.format(repr(t))} for t in ("a", "b")]
    assert most_common_death(refused)[1:] == (budget.format("<token>"), 2)
