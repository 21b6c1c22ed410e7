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
        reset_exercises(path, in_place=True)


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
        reset_exercises(path, in_place=True)


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


def _answer_notebook(path):
    nb = nbformat.v4.new_notebook()
    leader = nbformat.v4.new_markdown_cell("**For workshop leaders.** answers below")
    leader.metadata["tags"] = ["leader"]
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Exercise"),
        leader,
        nbformat.v4.new_code_cell(f"{BEGIN}\nanswer = 42\n{END}"),
    ]
    nbformat.write(nb, path)
    return nb


def _holds_the_answer(path) -> bool:
    """Whether a cell's source still holds the worked answer (cell ids are random hex:
    the raw file may contain "42" by chance)."""
    return any("answer = 42" in c.source for c in nbformat.read(path, as_version=4).cells)


def test_reset_leaves_leader_cells_out_of_the_blank_copy(tmp_path):
    # the blank copy kept "For workshop leaders. This copy holds worked answers"
    _answer_notebook(tmp_path / "w.ipynb")
    reset_exercises(tmp_path / "w.ipynb", tmp_path / "blank.ipynb")
    blank = nbformat.read(tmp_path / "blank.ipynb", as_version=4)
    assert [c.source.splitlines()[0] for c in blank.cells] == ["# Exercise", BEGIN]
    assert all("leader" not in c.metadata.get("tags", []) for c in blank.cells)


def test_reset_refuses_to_overwrite_the_answers_without_in_place(tmp_path):
    # `workshop reset NOTEBOOK` overwrote the worked answers, no prompt, no backup
    path = tmp_path / "w.ipynb"
    _answer_notebook(path)
    before = path.read_bytes()
    for out in (None, path, tmp_path / "." / "w.ipynb"):
        with pytest.raises(ValueError, match="--in-place"):
            reset_exercises(path, out)
        assert path.read_bytes() == before
    assert reset_exercises(path, in_place=True) == 1
    assert not _holds_the_answer(path)


def test_cli_reset_refuses_in_place_without_the_flag(tmp_path, capsys):
    from genlm_lab.cli import main

    path = tmp_path / "w.ipynb"
    _answer_notebook(path)
    assert main(["workshop", "reset", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("genlm-lab workshop:") and "--in-place" in err and _holds_the_answer(path)
    assert main(["workshop", "reset", str(path), "--in-place"]) == 0
    assert not _holds_the_answer(path)
