"""The JSON family: `JsonSchema` and the pieces behind it.

`schema` is the constraint; `relax` rewrites a schema so llguidance's mask
over-approximates it, `objects` reads what an object may hold, `keys` and
`engine` add the object-key rules on top of that mask, `finish` writes a
short ending for a prefix, `empty` says why a schema admits no document, and
`budget` (`WithinBudget`) also asks the document to end within a number of
tokens.
"""

from genlm_lab.control.constraint.json.budget import WithinBudget
from genlm_lab.control.constraint.json.empty import why_empty
from genlm_lab.control.constraint.json.engine import KeyedEngine
from genlm_lab.control.constraint.json.finish import finish, formats
from genlm_lab.control.constraint.json.keys import KeyRules
from genlm_lab.control.constraint.json.objects import ObjectSchemas
from genlm_lab.control.constraint.json.relax import relax
from genlm_lab.control.constraint.json.schema import FinishWarning, JsonSchema

__all__ = [
    "FinishWarning",
    "JsonSchema",
    "KeyRules",
    "KeyedEngine",
    "ObjectSchemas",
    "WithinBudget",
    "finish",
    "formats",
    "relax",
    "why_empty",
]
