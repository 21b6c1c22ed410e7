"""Browser assets of the views: the ESM modules and the stylesheet, read from the package.

Its own module because both the live widgets (`_base`) and the sanitiser-safe
stored form (`_safe`) read assets, and `_base` builds on `_safe`.
"""

from __future__ import annotations

import importlib.resources
import warnings
from functools import cache
from pathlib import Path

_REPO_WIDGETS = Path(__file__).resolve().parents[2] / "widgets"


@cache
def asset(name: str) -> str:
    """Text of a browser asset (ESM or CSS), read from the package's `_widgets/`.

    In a checkout `genlm_lab/_widgets` is a symlink to `widgets/`; a wheel
    holds real copies. Where the packaged file is missing (a wheel built
    without it, or a checkout whose symlink became a plain file) the repo
    copy is used with a warning naming both paths, so a broken package does
    not pass unnoticed; with no repo copy either, the error names the path.

    Raises:
        FileNotFoundError: if neither the packaged file nor the repo copy exists.
    """
    packaged = importlib.resources.files("genlm_lab") / "_widgets" / name
    try:
        return packaged.read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError) as err:
        repo = _REPO_WIDGETS / name
        if not repo.is_file():
            raise FileNotFoundError(
                f"browser asset {name!r} is missing from the installed package: {packaged} "
                "does not exist; reinstall genlm-lab (its wheel ships genlm_lab/_widgets/)"
            ) from err
        warnings.warn(
            f"browser asset {packaged} is missing; using the repo copy {repo}. A wheel "
            "built from this tree would lack it: restore the genlm_lab/_widgets symlink",
            RuntimeWarning,
            stacklevel=2,
        )
        return repo.read_text(encoding="utf-8")


def esm(view_file: str) -> str:
    """An ESM module: the shared helpers followed by one view's code (no build step)."""
    return asset("_common.js") + "\n" + asset(view_file)
