"""A copy of this checkout's working tree, as a build or a fresh install from it sees it."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def tree_files() -> list[str]:
    """Files a build from this working tree sees: tracked and new, not ignored."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: cannot tell the tree's files from build leftovers")
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, check=True,
    )  # fmt: skip
    return [f for f in out.stdout.decode().split("\0") if f]


def copy_tree(dest: Path) -> Path:
    """`tree_files()` copied under `dest`, links kept as links (genlm_lab/_widgets -> ../widgets)."""
    for name in tree_files():
        path = ROOT / name
        if not path.exists() and not path.is_symlink():
            continue  # deleted in the working tree
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        if path.is_symlink():
            os.symlink(os.readlink(path), dest / name)
        else:
            shutil.copy2(path, dest / name)
    return dest
