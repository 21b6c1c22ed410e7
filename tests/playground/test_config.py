"""A Playground run's choices: checked, located errors, and code that reproduces the run."""

import json

import pytest
from _pasted_code import run_pasted

from genlm_lab.backend import load_model_by_name
from genlm_lab.playground import PlaygroundConfig, build_run, constraint_error, to_code


@pytest.mark.parametrize(
    ("kind", "source", "line", "column", "words"),
    [
        ("regex", "ab(c", 1, 3, "unclosed group"),
        ("python_regex", "ab(c", 1, 5, "missing )"),
        ("lark", 'start: "a"\n  | ) b', 2, 5, "expecting"),
        ("json_schema", '{\n  "type": "objet"\n}', 2, 3, "type"),
        ("json_schema", '{"type": }', 1, 10, "not JSON"),
        # the keyword's own line, not the first "type" of the document
        (
            "json_schema",
            '{\n  "type": "object",\n  "properties": {\n    "price": {"type": "numbr"}\n  }\n}',
            4,
            15,
            "numbr",
        ),
    ],
)
def test_a_bad_constraint_is_located(kind, source, line, column, words):
    problem = constraint_error(kind, source)
    assert problem is not None
    assert (problem.line, problem.column) == (line, column), problem
    assert words in problem.message
    caret = problem.caret(source).splitlines()
    assert caret[0] == source.splitlines()[line - 1]
    assert caret[1] == " " * (column - 1) + "^"


@pytest.mark.parametrize(
    ("kind", "source"),
    [
        ("none", ""),
        ("regex", r"[a-z]{3}\d{2}"),
        ("python_regex", r"(\w+) \1"),
        ("lark", 'start: "a"+'),
        ("json_schema", json.dumps({"type": "object", "required": ["a"]})),
    ],
)
def test_a_good_constraint_has_no_error(kind, source):
    assert constraint_error(kind, source) is None


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"constraint_kind": "cobol"}, "constraint_kind"),
        ({"method": "beam"}, "method"),
        ({"n_particles": 0}, "n_particles"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"ess_threshold": 1.5}, "ess_threshold"),
        ({"model": " "}, "model"),
        ({"constraint_kind": "none", "method": "awrs"}, "awrs"),
    ],
)
def test_a_setting_that_cannot_run_is_named(change, words):
    with pytest.raises(ValueError, match=words):
        PlaygroundConfig(**change).check()


def test_settings_round_trip_and_unknown_keys_are_named():
    config = PlaygroundConfig(prompt="x", n_particles=3)
    assert PlaygroundConfig.from_dict(config.to_dict()) == config
    with pytest.raises(ValueError, match="particles"):
        PlaygroundConfig.from_dict({"particles": 3})


@pytest.mark.parametrize(
    "config",
    [
        PlaygroundConfig(
            prompt="Code: ", model="tiny-random", constraint="[a-z]{2}[0-9]", method="awrs"
        ),
        PlaygroundConfig(
            prompt="Say: ",
            model="tiny-random",
            constraint_kind="json_schema",
            constraint='{"type": "object", "properties": {"a": {"type": "integer"}}}',
            method="direct",
            n_particles=3,
            max_tokens=8,
            seed=5,
        ),
        PlaygroundConfig(prompt="Hi", model="tiny-random", constraint_kind="none", method="direct"),
    ],
)
async def test_the_code_reproduces_the_run(config):
    run = build_run(config, load_model_by_name(config.model))
    ours = await run.smc(
        config.n_particles,
        ess_threshold=config.ess_threshold,
        max_tokens=config.max_tokens,
        seed=config.seed,
    )
    theirs = await run_pasted(to_code(config))
    assert len(ours.contexts) == config.n_particles
    assert ours.contexts == theirs.contexts
    assert list(ours.log_weights) == pytest.approx(list(theirs.log_weights), nan_ok=True)
    assert ours.log_ml == pytest.approx(theirs.log_ml, nan_ok=True)
    assert ours.decoded_posterior == theirs.decoded_posterior
