"""Resetting workshop exercises keeps checks, blanks answers, and refuses non-workshops."""

import nbformat
import pytest

from genlm_lab.workshop import BEGIN, END, PLACEHOLDER, blank_answer, reset_exercises


def test_blank_answer_keeps_names_and_signatures_and_drops_the_rest():
    source = f"x = 1\n{BEGIN}\ndef f(y):\n    return y + 1\ntotal, n = 3, 4\ncount = f(2)\n{END}\nassert count == 3"
    blank = blank_answer(source)
    assert blank.splitlines() == [
        "x = 1",
        BEGIN,
        PLACEHOLDER,
        "def f(y):",
        "    ...",
        "total, n = ...",
        "count = ...",
        END,
        "assert count == 3",
    ]


def test_blank_answer_respects_indentation_and_comparisons():
    source = f"if True:\n    {BEGIN}\n    value = 2\n    value == 2\n    {END}\n"
    assert (
        blank_answer(source)
        == f"if True:\n    {BEGIN}\n    {PLACEHOLDER}\n    value = ...\n    {END}\n"
    )


def test_reset_exercises_blanks_every_block_and_clears_outputs(tmp_path):
    nb = nbformat.v4.new_notebook()
    answer = nbformat.v4.new_code_cell(f"{BEGIN}\nanswer = 42\n{END}")
    answer.outputs = [nbformat.v4.new_output("stream", text="42\n")]
    answer.execution_count = 3
    check = nbformat.v4.new_code_cell("assert answer == 42, 'the answer is the product 6 * 7'")
    nb.cells = [nbformat.v4.new_markdown_cell("# Exercise"), answer, check]
    path = tmp_path / "workshop.ipynb"
    nbformat.write(nb, path)

    out = tmp_path / "blank.ipynb"
    assert reset_exercises(path, out) == 1
    blank = nbformat.read(out, as_version=4)
    assert "42" not in blank.cells[1].source and "answer = ..." in blank.cells[1].source
    assert blank.cells[1].outputs == [] and blank.cells[1].execution_count is None
    assert blank.cells[2].source == check.source
    assert nbformat.read(path, as_version=4).cells[1].source == answer.source


def test_reset_exercises_refuses_a_notebook_without_answers(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("print(1)")]
    path = tmp_path / "plain.ipynb"
    nbformat.write(nb, path)
    with pytest.raises(ValueError, match="no '# BEGIN ANSWER'"):
        reset_exercises(path)


@pytest.mark.parametrize(
    "source",
    [
        f"{BEGIN}\nsecret = 42\n",  # never closed
        f"{BEGIN}\n{BEGIN}\nx = 1\n{END}\nsecret = 42\n{END}",  # nested
        f"x = 1\n{END}\nsecret = 42",  # END without BEGIN
    ],
)
def test_reset_exercises_refuses_markers_that_do_not_pair_up(tmp_path, source):
    # an unmatched block was left as it was: its answer stayed in the "blank" copy
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(f"{BEGIN}\nanswer = 1\n{END}"),
        nbformat.v4.new_code_cell(source),
    ]
    path, out = tmp_path / "workshop.ipynb", tmp_path / "blank.ipynb"
    nbformat.write(nb, path)
    with pytest.raises(ValueError, match="cell 1.*do not pair up"):
        reset_exercises(path, out)
    assert not out.exists()


@pytest.mark.parametrize("text", ["{}", "[1]", '{"cells": 3}'])
def test_reset_exercises_on_json_that_is_no_notebook_is_a_value_error(tmp_path, text):
    # jsonschema's ValidationError / AttributeError escaped before (a traceback in the CLI)
    path = tmp_path / "data.json"
    path.write_text(text)
    with pytest.raises(ValueError, match="not a Jupyter notebook"):
        reset_exercises(path)


def test_blank_answer_keeps_annotated_assignments():
    # `x: int = 1` matched no pattern: the name vanished and the checking cell hit a NameError
    source = f"{BEGIN}\nx: int = 1\nys: dict[str, int] = {{}}\nelse: y = 2\nn: int\n{END}"
    assert blank_answer(source).splitlines() == [
        BEGIN,
        PLACEHOLDER,
        "x: int = ...",
        "ys: dict[str, int] = ...",
        END,
    ]


def test_blank_answer_cuts_one_line_bodies_and_keeps_long_signatures():
    # `def f(x): return x + 1` kept its body (the answer leaked, then an indented `...`
    # broke the cell); a signature over two lines kept only its first line
    source = (
        f"{BEGIN}\ndef f(x): return x + 1\n"
        "def g(a: int,\n      b: dict = {'k': (1, 2)}) -> int:  # note\n    return a\n"
        f"{END}"
    )
    blank = blank_answer(source)
    assert "return" not in blank
    assert blank.splitlines() == [
        BEGIN,
        PLACEHOLDER,
        "def f(x):",
        "    ...",
        "def g(a: int,",
        "      b: dict = {'k': (1, 2)}) -> int:",
        "    ...",
        END,
    ]
    compile(blank, "<cell>", "exec")  # the student's cell still runs
