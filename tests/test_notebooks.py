"""The stored tutorials: all present, run top to bottom in one go, small, and readable.

nbval (run by `make test` on `notebooks/`) re-executes every notebook; these
checks are about what is stored in the repo and shown on GitHub.
"""

import re
from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
NAMES = [
    "00_quickstart",
    "01_backends",
    "02_tries",
    "03_byte_beam",
    "04_smc",
    "05_debugging_beams",
    "06_workshop",
    "07_constraints",
    "08_evaluation",
]


@pytest.fixture(params=NAMES)
def notebook(request):
    path = NOTEBOOKS / f"{request.param}.ipynb"
    assert path.exists(), f"tutorial {path.name} is missing"
    return path, nbformat.read(path, as_version=4)


def test_stored_outputs_come_from_one_top_to_bottom_run(notebook):
    path, nb = notebook
    counts = [c.execution_count for c in nb.cells if c.cell_type == "code"]
    assert counts == list(range(1, len(counts) + 1)), (
        f"{path.name}: execution counts {counts} show a partial or out-of-order run; "
        "re-run it with scripts/run_notebooks.py"
    )


def test_no_cell_raised(notebook):
    path, nb = notebook
    assert any(cell.get("outputs") for cell in nb.cells), f"{path.name} is stored without outputs"
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            assert out.output_type != "error", f"{path.name}: a stored cell raised {out.ename}"


def test_files_are_small_and_carry_no_widget_state(notebook):
    path, nb = notebook
    assert path.stat().st_size < 2_000_000, f"{path.name} is over 2 MB"
    assert "widgets" not in nb.metadata, f"{path.name} stores widget state"


def test_opens_with_one_sentence_of_purpose_and_duration(notebook):
    path, nb = notebook
    first = nb.cells[0]
    assert first.cell_type == "markdown"
    duration = r"\b\d+\s*(min|s)\b"  # the measured time, in seconds or minutes
    assert re.search(duration, first.source), f"{path.name}: say how long it takes"


def test_uses_top_level_await_not_nest_asyncio(notebook):
    path, nb = notebook
    sources = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    assert "nest_asyncio" not in sources
    assert "asyncio.run(" not in sources


def test_cells_fit_on_a_screen(notebook):
    path, nb = notebook
    assert any(cell.cell_type == "code" for cell in nb.cells), f"{path.name} has no code"
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.source.count("\n") < 40, f"{path.name}: a cell is longer than a screen"


def test_metadata_is_stored_as_jupyterlab_writes_it(notebook):
    # Lab rewrites kernelspec from the running kernel on open: a stored display_name
    # "Python 3" (ipykernel says "Python 3 (ipykernel)") marked every tutorial modified.
    from jupyter_client.kernelspec import KernelSpecManager

    path, nb = notebook
    name = nb.metadata.kernelspec.name
    spec = KernelSpecManager().get_kernel_spec(name)
    want = {"display_name": spec.display_name, "language": spec.language, "name": name}
    assert dict(nb.metadata.kernelspec) == want, (
        f"{path.name}: kernelspec {dict(nb.metadata.kernelspec)} is not what Lab writes ({want}); "
        "run python scripts/run_notebooks.py --metadata-only"
    )
    assert nb.nbformat == 4 and nb.nbformat_minor == nbformat.current_nbformat_minor
    assert all("id" in cell for cell in nb.cells), f"{path.name}: cells without ids get new ones"
    assert path.read_text() == nbformat.writes(nb) + "\n", f"{path.name} is not nbformat's layout"
