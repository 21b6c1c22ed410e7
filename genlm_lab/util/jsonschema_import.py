"""`jsonschema`, imported without building rfc3987-syntax's parser until an IRI is checked.

When the `rfc3987-syntax` package is installed (Jupyter's `jupyter-events` brings it,
through `jsonschema[format-nongpl]`), `import jsonschema` builds that package's Earley
parser for the "iri" formats: 2 of the 2.4 s the import takes, more than half of what
`import genlm_lab.control` costs, in every kernel, worker and test process, though
few programs ever check an IRI. `import_jsonschema` hands jsonschema a stand-in module
whose `is_valid_syntax` imports the real package on its first call, so the formats are
checked exactly as before, only the parser is built when first needed. The stand-in is
seen by jsonschema's import alone: afterwards `import rfc3987_syntax` is the real one.
"""

from __future__ import annotations

import importlib.util
import sys
import types
from typing import Any

__all__ = ["import_jsonschema"]

_IRI_PACKAGE = "rfc3987_syntax"


def import_jsonschema() -> types.ModuleType:
    """The `jsonschema` module (imported here once, with the IRI parser deferred)."""
    if "jsonschema" in sys.modules or _IRI_PACKAGE in sys.modules:
        return importlib.import_module("jsonschema")
    if importlib.util.find_spec(_IRI_PACKAGE) is None:
        return importlib.import_module("jsonschema")
    stand_in = types.ModuleType(_IRI_PACKAGE)
    stand_in.is_valid_syntax = _is_valid_syntax  # what jsonschema._format imports
    sys.modules[_IRI_PACKAGE] = stand_in
    try:
        return importlib.import_module("jsonschema")
    finally:
        if sys.modules.get(_IRI_PACKAGE) is stand_in:
            del sys.modules[_IRI_PACKAGE]


def _is_valid_syntax(term: str, value: str) -> Any:
    """rfc3987-syntax's `is_valid_syntax`, its package imported on the first call."""
    return importlib.import_module(_IRI_PACKAGE).is_valid_syntax(term, value)
