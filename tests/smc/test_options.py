"""RunOptions: one declaration of the run options, read the same way by every run."""

from __future__ import annotations

import json

import pytest

from genlm_lab.smc import (
    CollectingObserver,
    Model,
    RunOptions,
    importance_sampling,
    smc_standard,
    smc_steer,
)


class OneStep(Model):
    """Scores once, then is done."""

    async def step(self) -> None:
        self.score(-0.5)
        self.finish()

    def string_for_serialization(self) -> str:
        return "x"


def test_the_defaults_are_the_runs_defaults():
    assert RunOptions() == RunOptions(
        json_file=None, observers=(), seed=None, progress=None, profile=False, alarms=None
    )


def test_of_keeps_the_given_options_and_the_fixed_ones():
    options = RunOptions.of("run", {"seed": 3, "profile": True}, json_file="r.jsonl")
    assert (options.seed, options.profile, options.json_file) == (3, True, "r.jsonl")
    assert options.as_kwargs() == {
        "json_file": "r.jsonl",
        "observers": (),
        "seed": 3,
        "progress": None,
        "profile": True,
        "alarms": None,
    }


def test_of_names_the_caller_and_the_unknown_keyword():
    with pytest.raises(TypeError, match=r"^run\(\) got an unexpected keyword argument 'sed'$"):
        RunOptions.of("run", {"sed": 3})


def test_a_fixed_option_is_unexpected_among_the_keywords():
    with pytest.raises(TypeError, match="unexpected keyword argument 'json_file'"):
        RunOptions.of("SMC.__call__", {"json_file": "a"}, json_file="b")


@pytest.mark.parametrize(
    ("name", "run"),
    [
        ("smc_standard", lambda **kw: smc_standard(OneStep(), 2, **kw)),
        ("importance_sampling", lambda **kw: importance_sampling(OneStep(), 2, **kw)),
        ("smc_steer", lambda **kw: smc_steer(OneStep(), 2, 2, **kw)),
    ],
)
async def test_every_run_takes_every_option(tmp_path, name, run):
    path = tmp_path / "record.jsonl"
    seen = CollectingObserver()
    result = await run(
        json_file=path, observers=[seen], seed=5, progress=False, profile=True, alarms=None
    )
    record = result.record
    assert record.algorithm == name
    assert record.params["seed"] == 5
    assert record.profile_rows
    assert len(seen.entries) == len(record.steps) == 1
    assert json.loads(path.read_text().splitlines()[0])["algorithm"] == name
    with pytest.raises(TypeError, match=rf"{name}\(\) got an unexpected keyword argument 'sed'"):
        await run(sed=5)
