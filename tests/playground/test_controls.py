"""The Playground's choices: inline constraint errors, copy-as-code, and the config read back."""

from genlm_lab.playground import PlaygroundConfig
from genlm_lab.playground.controls import Choices, error_html


def _choices(**settings) -> Choices:
    return Choices(PlaygroundConfig(prompt="Code: ", model="tiny-random", **settings))


def test_a_constraint_error_shows_inline_and_clears():
    c = _choices()
    assert c.error.value == ""
    c.source.value = "ab(c"
    assert "line 1, column 3" in c.error.value and "unclosed group" in c.error.value
    c.kind.value = "python_regex"
    assert "line 1, column 5" in c.error.value
    c.source.value = "ab(c)"
    assert c.error.value == ""


def test_copy_as_code_follows_the_choices():
    c = _choices()
    assert "await SMC(sampler)" in c.code.code and "BoolFSA.from_regex" in c.code.code
    assert not c.code.shown
    c.code.reveal()
    assert c.code.shown
    c.kind.value, c.source.value = "json_schema", '{"type": "integer"}'
    assert "JsonSchema" in c.code.code and "BoolFSA" not in c.code.code  # never stale
    c.method.value = "awrs"
    c.kind.value = "none"
    assert c.code.code.startswith("# cannot write this run as code")


def test_the_widgets_read_back_the_config_they_were_built_from():
    config = PlaygroundConfig(
        prompt="Q: ",
        model="tiny-random",
        constraint_kind="json_schema",
        constraint='{"type": "integer"}',
        method="awrs",
        n_particles=7,
        ess_threshold=0.25,
        max_tokens=33,
        seed=5,
    )
    c = Choices(config)
    assert c.config() == config
    c.n_particles.value, c.seed.value = 3, 9
    assert (c.config().n_particles, c.config().seed) == (3, 9)


def test_an_error_line_is_escaped_and_red_before_any_stylesheet():
    line = error_html("<b>bad</b> & worse")
    assert "&lt;b&gt;bad&lt;/b&gt; &amp; worse" in line and "<b>" not in line
    assert "genlm-error" in line and "color:" in line
