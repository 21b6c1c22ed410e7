"""The Playground's choices: inline constraint errors, copy-as-code of the run shown, read back."""

from genlm_lab.playground import PlaygroundConfig, to_code
from genlm_lab.playground.controls import NOT_RUN, Choices, error_html


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


def test_before_any_run_the_box_offers_the_forms_code_marked_not_yet_run():
    c = _choices()
    assert c.run_shown is None and c.code.state == "not_run"
    assert "not yet run" in c.code.label
    first, rest = c.code.code.split("\n", 1)
    assert first == NOT_RUN and rest == to_code(c.config())  # labelled where it is pasted too
    assert not c.code.shown
    c.code.reveal()
    assert c.code.shown
    c.seed.value = 7
    assert c.code.code == f"{NOT_RUN}\n{to_code(c.config())}" and "seed=7" in c.code.code
    c.kind.value, c.source.value = "json_schema", '{"type": "objet"}'  # JSON, not a schema
    assert "cannot run" in c.code.code and "line 1" in c.code.code
    assert '{"type"' not in c.code.code and "await" not in c.code.code  # no code offered
    c.method.value = "awrs"
    c.kind.value = "none"
    assert c.code.code.startswith(NOT_RUN) and "cannot run" in c.code.code
    assert "awrs" in c.code.code and "await" not in c.code.code


def test_after_a_run_edits_leave_the_runs_code_and_mark_the_box():
    c = _choices(seed=3)
    run = c.config()
    c.show_run(run)
    code = to_code(run)
    assert c.code.code == code and c.code.state == "shown"
    assert c.code.label == "this code reproduces the run shown"
    c.code.copied = "clipboard"  # what the browser reports after a copy
    c.seed.value = 4
    assert c.code.code == code and c.code.state == "changed"
    assert "the form has changed since the run shown" in c.code.label
    assert c.code.copied == ""  # the copy's message is gone with the label it was made under
    edits = 0
    for widget, value in (
        (c.prompt, "Other: "),
        (c.kind, "json_schema"),
        (c.source, '{"type": "objet", "pattern": "(unclosed"}'),
        (c.n_particles, 9),
    ):
        widget.value = value
        assert c.code.code == code and c.code.state == "changed"
        edits += 1
    assert edits == 4 and "objet" not in c.code.code and "Other" not in c.code.code
    assert c.error.value  # the broken schema is shown as an error, not written as code
    run.seed = 99  # the run's settings were copied when shown: later changes do not reach them
    assert c.run_shown.seed == 3 and c.code.code == code
    # the form back to the run's settings: the box describes the run again
    c.prompt.value, c.kind.value, c.source.value = "Code: ", "regex", run.constraint
    c.n_particles.value, c.seed.value = run.n_particles, 3
    assert c.code.state == "shown" and c.code.code == code
    c.show_run(c.run_shown, stopped=True)
    assert "stopped" in c.code.label and c.code.code == code
    c.show_run(None)  # a new run started: no run shown, the form's code is back
    assert c.code.state == "not_run" and c.code.code.startswith(NOT_RUN)


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
