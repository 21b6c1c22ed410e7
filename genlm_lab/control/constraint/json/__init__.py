"""The JSON family: `JsonSchema` and the pieces behind it.

`schema` is the constraint. `reading` reads the schema the user gave and its
draft's validator; `relax` rewrites the schema so llguidance's mask
over-approximates it; `objects` reads what an open object may hold, and
`keys` and `engine` add those key rules on top of the mask; `finish` writes
a short ending for a prefix; `empty` says why a schema admits no document;
`budget` says how a document closes, for token budgets. `stream` holds
genlm-control's streaming parsers and its two other potentials
(`ParserPotential`, `FullValidatorJsonSchema`), for code written against them.
"""

from genlm_lab.control.constraint.json.empty import why_empty
from genlm_lab.control.constraint.json.engine import KeyedEngine
from genlm_lab.control.constraint.json.finish import finish, formats
from genlm_lab.control.constraint.json.keys import KeyRules
from genlm_lab.control.constraint.json.objects import ObjectSchemas
from genlm_lab.control.constraint.json.reading import InvalidSchema, load_schema, validator_for
from genlm_lab.control.constraint.json.relax import relax
from genlm_lab.control.constraint.json.schema import FinishWarning, JsonSchema

__all__ = [
    "FinishWarning",
    "InvalidSchema",
    "JsonSchema",
    "KeyRules",
    "KeyedEngine",
    "ObjectSchemas",
    "finish",
    "formats",
    "load_schema",
    "relax",
    "validator_for",
    "why_empty",
]
