"""csmc_standard's loop: slot 0 is the retained particle at every step and survives resampling.

The invariance of the kernel it builds is checked exactly on toys in
tests/control/inference/test_csmc.py; here, the slot bookkeeping and the record.
"""

from __future__ import annotations

import pytest

from genlm_lab.smc import CollectingObserver, Model, csmc_standard


class Tagged(Model):
    """Notes whether it was retained at each step; the retained slot gains weight 2 per step."""

    def __init__(self, steps: int = 4) -> None:
        super().__init__()
        self.steps = steps
        self.history: list[bool] = []

    async def step(self) -> None:
        self.history.append(bool(self.is_retained))
        self.score(2.0 if self.is_retained else 0.0)  # unequal weights: ESS < n every step
        if len(self.history) >= self.steps:
            self.finish()

    def string_for_serialization(self) -> str:
        return "".join("R" if h else "f" for h in self.history)


async def test_slot_zero_is_retained_at_every_step_and_survives_each_resampling():
    observer = CollectingObserver()
    result = await csmc_standard(Tagged(), 6, ess_threshold=1.0, seed=3, observers=[observer])
    assert len(result) == 6
    assert result[0].history == [True] * 4
    assert [p.is_retained for p in result] == [True] + [False] * 5
    steps = result.record.steps
    # every step but the last resamples (after it every particle is done, as in smc_standard)
    assert [s["resampled"] for s in steps] == [True, True, True, False]
    resampled = steps[:3]
    assert all(s["ancestors"][0] == 0 for s in resampled)
    assert all(s["contents"][0] == "R" * s["step"] for s in steps)  # slot 0: the retained path
    # the free slots descend from slot 0 too (its weight is e^2 times theirs), then step free
    assert any(s["ancestors"][1:].count(0) > 0 for s in resampled)
    assert [s["retained"] for s in steps] == [0] * 4
    assert [s.get("resampling_method") for s in steps] == ["multinomial"] * 3 + [None]
    assert result.record.params["retained"] == 0
    assert observer.entries == steps  # observers see the same entries, "retained" included


async def test_one_particle_runs_alone_and_never_resamples():
    result = await csmc_standard(Tagged(steps=2), 1, ess_threshold=0.5, seed=0)
    assert len(result) == 1 and result[0].history == [True, True]
    assert not any(s["resampled"] for s in result.record.steps)


async def test_bad_settings_are_refused_by_name():
    with pytest.raises(ValueError, match="n_particles must be >= 1"):
        await csmc_standard(Tagged(), 0)
    with pytest.raises(ValueError, match="n_particles must be an int"):
        await csmc_standard(Tagged(), 2.0)
    with pytest.raises(ValueError, match="ess_threshold must be in"):
        await csmc_standard(Tagged(), 2, ess_threshold=1.5)
    with pytest.raises(TypeError, match="resampling_method"):
        await csmc_standard(Tagged(), 2, resampling_method="systematic")


class DuckTagged:
    """Tagged without the `Model` base: no start(), no string_for_serialization (genlm-control's
    test mocks look like this); __str__ gives what Tagged serialises to."""

    def __init__(self, steps: int = 4) -> None:
        self.steps, self.weight, self.is_retained = steps, 0.0, False
        self.history: list[bool] = []

    def untwist(self) -> None:
        pass

    def done_stepping(self) -> bool:
        return len(self.history) >= self.steps

    async def step(self) -> None:
        self.history.append(bool(self.is_retained))
        self.weight += 2.0 if self.is_retained else 0.0

    def __str__(self) -> str:
        return "".join("R" if h else "f" for h in self.history)


async def test_a_model_without_start_or_serialization_runs_as_its_model_twin():
    twin = await csmc_standard(Tagged(), 5, ess_threshold=1.0, seed=11)
    duck = await csmc_standard(DuckTagged(), 5, ess_threshold=1.0, seed=11)
    # same seed, same weights: the same resampling draws, steps and contents (str() stands in)
    fields = ("ancestors", "contents", "log_weights", "resampled")
    twin_steps = [{k: s.get(k) for k in fields} for s in twin.record.steps]
    duck_steps = [{k: s.get(k) for k in fields} for s in duck.record.steps]
    assert len(duck_steps) == 4 and duck_steps == twin_steps
    assert [p.history for p in duck] == [p.history for p in twin]
    assert list(duck.log_weights) == list(twin.log_weights)


async def test_a_start_that_is_not_async_is_still_refused():
    class SyncStart(DuckTagged):
        def start(self) -> None:
            pass

    with pytest.raises(TypeError, match=r"SyncStart.start\(\) returned None"):
        await csmc_standard(SyncStart(), 2)
