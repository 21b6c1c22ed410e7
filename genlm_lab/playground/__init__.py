"""The Playground: try a prompt, a model, a constraint and a method in one widget.

`Playground()` in a notebook; `PlaygroundConfig` holds one run's choices,
`to_code` writes the Python that reproduces it, and `Playground.save(store)` /
`Playground.reopen(store, run_id)` file a run in a `ResultsStore` and bring it back.
"""

from genlm_lab.playground.config import (
    CONSTRAINT_KINDS,
    METHODS,
    ConstraintError,
    PlaygroundConfig,
    build_run,
    constraint_error,
    to_code,
)
from genlm_lab.playground.steps import context_at
from genlm_lab.playground.widget import Playground

__all__ = [
    "CONSTRAINT_KINDS",
    "METHODS",
    "ConstraintError",
    "Playground",
    "PlaygroundConfig",
    "build_run",
    "constraint_error",
    "context_at",
    "to_code",
]
