"""Execute notebooks in place so the stored outputs are those of a real run.

Usage: python scripts/run_notebooks.py [--metadata-only] [notebooks/NAME.ipynb ...]  (default: all)

Each notebook runs top to bottom in a fresh kernel from its own folder; its
outputs are saved, widget state is stripped (it would bloat the file and is
recreated when the notebook runs), and the time each took is printed.

The metadata is stored as JupyterLab would write it: Lab rewrites
`kernelspec` from the running kernel's spec as soon as it opens a notebook,
so a stored spec that differs (e.g. display_name "Python 3" where ipykernel
says "Python 3 (ipykernel)") marked every tutorial modified on open.
`--metadata-only` applies just that, without running anything.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
KERNEL = "python3"


def strip_widget_state(nb: nbformat.NotebookNode) -> None:
    """Drop saved widget models; static HTML outputs stay for GitHub and nbval."""
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        cell.metadata.pop("execution", None)


def lab_kernelspec(name: str = KERNEL) -> dict:
    """The `kernelspec` metadata JupyterLab writes for the installed kernel `name`."""
    from jupyter_client.kernelspec import KernelSpecManager

    spec = KernelSpecManager().get_kernel_spec(name)
    return {"display_name": spec.display_name, "language": spec.language, "name": name}


def normalise_metadata(nb: nbformat.NotebookNode) -> None:
    """Store the kernelspec as Lab sets it on open, so opening does not modify the file."""
    nb.metadata["kernelspec"] = lab_kernelspec()


def run(path: Path, timeout: int = 600) -> float:
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name=KERNEL,
        resources={"metadata": {"path": str(path.parent)}},
    )
    start = time.perf_counter()
    client.execute()
    elapsed = time.perf_counter() - start
    strip_widget_state(nb)
    normalise_metadata(nb)
    nbformat.write(nb, path)
    return elapsed


def main(argv: list[str]) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    # Kernels inherit this: one thread each, as under `make test` (see Makefile).
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    # No progress bars in stored outputs: their timings and widget ids change every run.
    os.environ.setdefault("GENLM_LAB_PROGRESS", "0")
    metadata_only = "--metadata-only" in argv
    argv = [a for a in argv if a != "--metadata-only"]
    paths = [Path(a) for a in argv] or sorted((ROOT / "notebooks").glob("*.ipynb"))
    if metadata_only:
        for path in paths:
            nb = nbformat.read(path, as_version=4)
            normalise_metadata(nb)
            nbformat.write(nb, path)
            print(f"{path.name:<28} metadata normalised", flush=True)
        return 0
    total = 0.0
    for path in paths:
        elapsed = run(path)
        total += elapsed
        size = path.stat().st_size / 1e6
        print(f"{path.name:<28} {elapsed:6.1f} s  {size:5.2f} MB", flush=True)
    print(f"{'total':<28} {total:6.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
