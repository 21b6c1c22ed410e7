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
    # the public-seams contract type lives in scripts/ (registered in pyproject.toml)
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "import_contracts.py", tmp_path / "scripts")
    return tmp_path


def test_the_real_tree_keeps_every_contract():
    out = _lint(ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "7 kept, 0 broken" in out.stdout, out.stdout


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
            "from genlm_lab.control.inference.smc import SMC",
            "Views never import samplers or backends' internals",
            "genlm_lab.widgets.mask_view -> genlm_lab.control.inference.smc",
        ),
        # a view reaching into a backend's cache
        (
            "widgets/monitor.py",
            "from genlm_lab.backend._cache import TokenTrieCache",
            "Views never import samplers or backends' internals",
            "genlm_lab.widgets.monitor -> genlm_lab.backend._cache",
        ),
        # allowed by the layers, but a private module of another layer
        (
            "eval/view.py",
            "from genlm_lab.widgets._assets import asset",
            "import only each other's public modules and names",
            "genlm_lab.eval.view (l.",
        ),
        # a private name from a public module of another layer
        (
            "bytes/beam.py",
            "from genlm_lab.trie.char_trie import _char_leaf_key",
            "import only each other's public modules and names",
            "imports private name _char_leaf_key",
        ),
        # a private module of another room of control
        (
            "control/sampler/token.py",
            "from genlm_lab.control.lm._bpe import BPEMerges",
            "import only each other's public modules and names",
            "genlm_lab.control.lm._bpe",
        ),
        # control's rooms: the base potential reaching up to the samplers
        (
            "control/potential/base.py",
            "from genlm_lab.control.sampler.token import TokenSampler",
            "control's rooms",
            "genlm_lab.control.potential.base -> genlm_lab.control.sampler.token",
        ),
        # the budget asking a family by its class instead of through the family's hooks
        (
            "control/constraint/budget/search.py",
            "from genlm_lab.control.constraint.json.schema import JsonSchema",
            "constraint's rooms",
            "genlm_lab.control.constraint.json.schema (l.",
        ),
        # a loop inside one family's folder, which the layers above do not see
        (
            "control/constraint/json/reading.py",
            "from genlm_lab.control.constraint.json.schema import JsonSchema",
            "No import loop inside control.constraint",
            "- .reading -> .schema (1 import)",
        ),
    ],
)
@pytest.mark.integration
def test_a_forbidden_import_fails_naming_its_chain(tmp_path, module, added, contract, chain):
    tree = _copy(tmp_path)
    path = tree / "genlm_lab" / module
    path.write_text(path.read_text() + f"\n{added}  # the forbidden import\n")
    out = _lint(tree)
    assert out.returncode != 0
    broken = out.stdout.split("Broken contracts", 1)[-1]
    assert contract in broken, out.stdout
    assert chain in broken, out.stdout


@pytest.mark.integration
def test_a_module_without_a_layer_fails_the_exhaustive_contract(tmp_path):
    tree = _copy(tmp_path)
    (tree / "genlm_lab" / "newlayer.py").write_text('"""A module no contract places."""\n')
    out = _lint(tree)
    assert out.returncode != 0
    assert "genlm_lab.newlayer" in out.stdout.split("Broken contracts", 1)[-1], out.stdout


# ---------------------------------------------------------------- the docs page's diagram


def _hooks():
    import importlib.util

    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "scripts" / "docs_hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _subpackage_imports_by_ast() -> set[tuple[str, str]]:
    """(importer, imported) subpackages of genlm_lab, read with `ast` (not grimp), every import."""
    import ast

    pairs = set()
    package = ROOT / "genlm_lab"
    for path in package.rglob("*.py"):
        parts = path.relative_to(package).with_suffix("").parts
        if parts == ("__init__",):
            continue
        importer = parts[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = (
                    [f"genlm_lab.{a.name}" for a in node.names]
                    if node.module == "genlm_lab"
                    else [node.module]
                )
            else:
                assert not (isinstance(node, ast.ImportFrom) and node.level), path  # none relative
                continue
            for name in names:
                dotted = name.split(".")
                if dotted[0] == "genlm_lab" and len(dotted) > 1 and dotted[1] != importer:
                    pairs.add((importer, dotted[1]))
    return pairs


def test_the_layer_diagram_draws_every_import_between_subpackages():
    import html
    import re

    hooks = _hooks()
    expected = _subpackage_imports_by_ast()
    assert ("control", "smc") in expected and ("widgets", "smc") in expected
    _, edges = hooks.layer_imports()
    assert set(edges) == expected
    svg = hooks.layer_diagram_svg()
    titles = {html.unescape(t) for t in re.findall(r"<title>([^<]*)</title>", svg)}
    drawn = {tuple(t.split("->")) for t in titles if "->" in t}
    assert drawn == expected  # no arrow more (the layer-order helpers are invisible), none less
    for names in hooks.contract_layers():
        for name in names:
            if (ROOT / "genlm_lab" / name).exists() or (ROOT / "genlm_lab" / f"{name}.py").exists():
                assert name in titles, name


def test_the_diagram_follows_the_contracts_layers():
    layers = _hooks().contract_layers()
    flat = [name for names in layers for name in names]
    assert flat[-3:] == ["backend", "tokenization", "util"] and flat.index("widgets") < flat.index(
        "control"
    ) < flat.index("smc") < flat.index("bytes") < flat.index("trie")
    assert {"cli", "eval", "compat", "workshop"} <= set(layers[0])
