"""The layer contracts (`[tool.importlinter]` in pyproject.toml) hold, and can fail.

`lint-imports` runs on the real tree, then on temporary copies of the package
with one forbidden import added each: it must fail, naming the contract and the
import chain it found. Import-linter reads the code (grimp parses the imports),
so nothing is imported or run.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"

pytestmark = pytest.mark.skipif(not LINT_IMPORTS.exists(), reason="import-linter not installed")


def _lint(cwd: Path) -> subprocess.CompletedProcess:
    # lint-imports puts its working directory first on sys.path, so `cwd`'s genlm_lab is read.
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"], cwd=cwd, capture_output=True, text=True, timeout=120
    )


def _copy(tmp_path: Path) -> Path:
    shutil.copytree(
        ROOT / "genlm_lab", tmp_path / "genlm_lab", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def test_the_real_tree_keeps_every_contract():
    out = _lint(ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "3 kept, 0 broken" in out.stdout, out.stdout


@pytest.mark.parametrize(
    ("module", "added", "contract", "chain"),
    [
        # a back-arrow: a record reaching up to its view
        (
            "smc/record.py",
            "from genlm_lab.widgets.particle_view import record_html",
            "Records never import views",
            "genlm_lab.smc.record -> genlm_lab.widgets.particle_view",
        ),
        # a back-arrow two layers down: the trie importing the byte beam
        (
            "trie/char_trie.py",
            "from genlm_lab.bytes.beam import ByteBeamState",
            "Layers: util < tokenization",
            "genlm_lab.trie.char_trie -> genlm_lab.bytes.beam",
        ),
        # allowed by the layers (views sit above control), forbidden by the views' contract
        (
            "widgets/mask_view.py",
            "from genlm_lab.control.smc import SMC",
            "Views never import samplers or backends' internals",
            "genlm_lab.widgets.mask_view -> genlm_lab.control.smc",
        ),
        # a view reaching into a backend's cache
        (
            "widgets/monitor.py",
            "from genlm_lab.backend._cache import TokenTrieCache",
            "Views never import samplers or backends' internals",
            "genlm_lab.widgets.monitor -> genlm_lab.backend._cache",
        ),
    ],
)
def test_a_forbidden_import_fails_naming_its_chain(tmp_path, module, added, contract, chain):
    tree = _copy(tmp_path)
    path = tree / "genlm_lab" / module
    path.write_text(path.read_text() + f"\n{added}  # the forbidden import\n")
    out = _lint(tree)
    assert out.returncode != 0
    broken = out.stdout.split("Broken contracts", 1)[-1]
    assert contract in broken, out.stdout
    assert chain in broken, out.stdout


def test_a_module_without_a_layer_fails_the_exhaustive_contract(tmp_path):
    tree = _copy(tmp_path)
    (tree / "genlm_lab" / "newlayer.py").write_text('"""A module no contract places."""\n')
    out = _lint(tree)
    assert out.returncode != 0
    assert "genlm_lab.newlayer" in out.stdout.split("Broken contracts", 1)[-1], out.stdout
