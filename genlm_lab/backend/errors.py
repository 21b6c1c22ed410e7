"""What the backend raises: a model name with no weights on this machine.

`load_model_by_name` raises `ModelNotFoundError` when a name resolves to no
weights (an unknown name, an uninstalled embedded model, nothing in the cache).
"""

from __future__ import annotations

from genlm_lab.util.errors import GenlmLabError

__all__ = ["ModelNotFoundError"]


class ModelNotFoundError(GenlmLabError, ValueError):
    """A model name that resolves to no weights on this machine."""
