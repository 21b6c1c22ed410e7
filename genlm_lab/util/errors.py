"""The package's error and warning bases, in the lowest layer so that every layer can use them.

Every public error of genlm_lab is a `GenlmLabError` and every public warning a
`GenlmLabWarning`, besides the built-in class it always was (`InvalidGrammar` is
still a `ValueError`): `except GenlmLabError` catches what genlm_lab raises, and
`warnings.filterwarnings("ignore", category=GenlmLabWarning)` silences what it warns.
`genlm_lab.errors` lists them all.
"""

from __future__ import annotations

__all__ = ["GenlmLabError", "GenlmLabWarning"]


class GenlmLabError(Exception):
    """The base of every public error genlm_lab raises."""


class GenlmLabWarning(Warning):
    """The base of every public warning genlm_lab issues."""
