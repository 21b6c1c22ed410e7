"""Git worktrees for benchmarking two commits side by side (compare.py, bench_quick.py).

Each commit is checked out (detached) under `/tmp/genlm_lab_worktrees/<sha>` and
reused by later runs, so its numba cache survives. A process for a tree runs with
that tree first on PYTHONPATH; the venv holds an editable install of the main
checkout, so `imported_from` checks which `genlm_lab` a tree's process really imports.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ROOT = Path(os.environ.get("GENLM_LAB_WORKTREES", "/tmp/genlm_lab_worktrees"))


def git(*args: str, cwd: Path = REPO) -> str:
    """Output of a git command in the repository (stripped); raises on failure."""
    out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return out.stdout.strip()


def resolve(rev: str) -> str:
    """The full commit id of a revision."""
    return git("rev-parse", "--verify", f"{rev}^{{commit}}")


def merge_base(main: str = "main") -> str:
    """The merge-base of HEAD with `main` (HEAD itself when HEAD is on main)."""
    return git("merge-base", "HEAD", main)


def worktree(rev: str) -> Path:
    """A detached worktree of `rev` under ROOT, made once and reused."""
    sha = resolve(rev)
    path = ROOT / sha[:12]
    if path.exists():
        try:
            if git("rev-parse", "HEAD", cwd=path) == sha:
                return path
        except subprocess.CalledProcessError:
            pass
        raise RuntimeError(f"{path} exists but is not a worktree of {sha}; remove it")
    ROOT.mkdir(parents=True, exist_ok=True)
    git("worktree", "prune")
    git("worktree", "add", "--detach", "--force", str(path), sha)
    return path


def tree_for(spec: str) -> tuple[Path, str]:
    """A source tree and its label: an existing directory as is, else a revision's worktree."""
    path = Path(spec)
    if path.is_dir() and (path / "genlm_lab").is_dir():
        path = path.resolve()
        try:
            label = f"{path} (tree at {git('rev-parse', '--short', 'HEAD', cwd=path)}, uncommitted edits included)"
        except subprocess.CalledProcessError:
            label = str(path)
        return path, label
    sha = resolve(spec)
    short = git("log", "-1", "--format=%h %s", sha)[:90]
    return worktree(sha), f"{spec} = {short}"


def tree_env(tree: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a process that must import `genlm_lab` from `tree`."""
    env = dict(os.environ)
    paths = [str(tree), str(tree / "benchmarks")]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("OMP_NUM_THREADS", "1")
    env.update(extra or {})
    return env


def imported_from(tree: Path) -> Path:
    """Where a process started with `tree_env(tree)` imports genlm_lab from; raises if not `tree`."""
    code = "import genlm_lab, pathlib; print(pathlib.Path(genlm_lab.__file__).resolve())"
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tree,
        env=tree_env(tree),
        capture_output=True,
        text=True,
        check=True,
    )
    where = Path(out.stdout.strip().splitlines()[-1])
    check_under(where, tree)
    return where


def check_under(module_file: Path, tree: Path) -> None:
    """Raise unless `module_file` lies inside `tree`."""
    if not Path(module_file).resolve().is_relative_to(Path(tree).resolve()):
        raise RuntimeError(f"genlm_lab imported from {module_file}, not from the tree {tree}")
