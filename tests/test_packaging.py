"""The wheel holds what the package claims, and views render from an installed copy.

Built offline from a copy of the working tree (no build isolation: setuptools
comes from the venv), installed with --no-deps into a fresh venv that finds
the dependencies through a .pth naming this venv's site-packages (read as a
plain path, so this venv's editable install of genlm_lab is not picked up),
then used from a folder outside the repo.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import sysconfig
import textwrap
import zipfile
from pathlib import Path

import pytest
from tree_copy import copy_tree

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
ASSETS = sorted(p.name for p in (ROOT / "widgets").iterdir() if p.suffix in (".js", ".css"))


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """A wheel built from a copy of the tree (building in place would write build/ here)."""
    src = tmp_path_factory.mktemp("src")
    copy_tree(src)
    dist = tmp_path_factory.mktemp("dist")
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
           "--no-index", "-q", "-w", str(dist), str(src)]  # fmt: skip
    built = subprocess.run(cmd, capture_output=True, text=True)
    assert built.returncode == 0, built.stdout + built.stderr
    (whl,) = dist.glob("genlm_lab-*.whl")
    return whl


def test_wheel_holds_the_eval_data_with_its_notice(wheel):
    data = ROOT / "genlm_lab" / "eval" / "data"
    expected = {
        f"genlm_lab/eval/data/{p.relative_to(data)}" for p in data.rglob("*") if p.is_file()
    }
    assert "genlm_lab/eval/data/NOTICE.md" in expected and len(expected) >= 8
    with zipfile.ZipFile(wheel) as zf:
        missing = expected - set(zf.namelist())
    assert not missing, f"eval data missing from {wheel.name}: {sorted(missing)}"


def test_wheel_holds_every_browser_asset_as_a_real_file(wheel):
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        for asset in ASSETS:
            member = f"genlm_lab/_widgets/{asset}"
            assert member in names, f"{member} is missing from {wheel.name}"
            info = zf.getinfo(member)
            assert not stat.S_ISLNK(info.external_attr >> 16), f"{member} is a symlink"
            assert zf.read(member) == (ROOT / "widgets" / asset).read_bytes()
        assert "genlm_lab/py.typed" in names
        licenses = [n for n in names if ".dist-info/" in n and "LICENSE" in n]
        assert licenses and b"Apache License" in zf.read(licenses[0])
        meta = next(n for n in names if n.endswith(".dist-info/METADATA"))
        requires = [
            line for line in zf.read(meta).decode().splitlines() if line.startswith("Requires-Dist")
        ]
    torch_req = next(r for r in requires if r.split()[1].startswith("torch"))
    assert "==" not in torch_req, f"{torch_req}: a pinned torch fights every other install"


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    """The python of a fresh venv with the wheel installed (dependencies from this venv)."""
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    # A plain path line: this venv's own .pth files (its editable genlm_lab) stay unread.
    Path(purelib, "zz_genlm_lab_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    cmd = [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps",
           "--no-index", "-q", str(wheel)]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return python


_PROBE = textwrap.dedent(
    """
    import importlib.resources, json, warnings
    warnings.simplefilter("error")  # a fallback to a repo copy warns: fail on it
    import genlm_lab
    from genlm_lab.smc import SMCRecord
    from genlm_lab.widgets import ParticleView
    from genlm_lab.widgets.base import asset

    folder = importlib.resources.files("genlm_lab") / "_widgets"
    view = ParticleView.from_record(SMCRecord(n_particles=2))
    print(json.dumps({
        "package": genlm_lab.__file__,
        "folder": str(folder),
        "folder_is_link": __import__("os").path.islink(str(folder)),
        "same": {n: asset(n) == (folder / n).read_text() for n in NAMES},
        "esm_has_view": asset("particles.js") in view._esm,
        "html_has_css": asset("genlm.css") in view._repr_html_(),
    }))
    """
)


def test_views_render_from_the_installed_package_not_the_repo(installed, tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    code = f"NAMES = {ASSETS!r}\n" + _PROBE
    out = subprocess.run(
        [installed, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr[-3000:]
    facts = json.loads(out.stdout.strip().splitlines()[-1])
    venv = installed.parent.parent
    assert Path(facts["package"]).is_relative_to(venv), facts["package"]
    assert Path(facts["folder"]).is_relative_to(venv) and not facts["folder_is_link"]
    assert all(facts["same"].values()), facts["same"]
    assert facts["esm_has_view"] and facts["html_has_css"]


def test_console_script_is_installed_and_runs(installed, tmp_path):
    script = installed.parent / "genlm-lab"
    out = subprocess.run(
        [script, "doctor", "--no-model"], cwd=tmp_path, capture_output=True, text=True
    )
    assert "torch" in out.stdout and "graphviz dot" in out.stdout, out.stdout + out.stderr
