"""nbval set-up for the tutorials: their kernels draw no progress bars; one worker per notebook.

Bars (on by default in a notebook) carry timings and widget ids that change
every run; the stored outputs were written without them (scripts/run_notebooks.py).

A notebook's cells run in order in one kernel, so under pytest-xdist
(`make test`: `-n 2 --dist loadgroup`) each notebook is one xdist group, run
whole on one worker; different notebooks run side by side.
"""

import os
from pathlib import Path

import pytest

os.environ.setdefault("GENLM_LAB_PROGRESS", "0")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def pytest_collection_modifyitems(config, items):
    for item in items:
        path = Path(str(item.fspath))
        if path.suffix == ".ipynb":
            item.add_marker(pytest.mark.xdist_group(f"notebook-{path.stem}"))
