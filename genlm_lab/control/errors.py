"""What controlled generation raises and warns: one module, the bottom of `control`'s rooms.

Every room of `control` may import it. `InvalidGrammar` is raised when a regex,
Lark grammar or JSON schema cannot be compiled (by llguidance, Python's `regex`
module or the JSON reader); `FinishWarning` says a JSON prefix the mask keeps
alive could not be finished, so a token budget cannot tell whether it ends in
time; `BudgetTooSmall` says an `SMC` run's `max_tokens` cannot end any text of a
constraint; `SequencesLengthError` is a `Sequences` given unequal contexts and
weights; `HarmonyFormatError` is a token sequence that no Harmony chat starts
with; `BatchAbandoned` is what an `AutoBatched` caller gets when its batch is
dropped before it ran. `InvalidSchema` is a JSON schema its metaschema rejects;
`ParseError` and `Incomplete` are what the streaming JSON parser raises on text
that cannot continue, and on text that ended before it could decide.
"""

from __future__ import annotations

from genlm_lab.util.errors import GenlmLabError, GenlmLabWarning
from genlm_lab.util.jsonschema_import import import_jsonschema

import_jsonschema()  # first: jsonschema's IRI parser waits until an IRI is checked
from jsonschema.exceptions import SchemaError  # noqa: E402

__all__ = [
    "BatchAbandoned",
    "BudgetTooSmall",
    "FinishWarning",
    "HarmonyFormatError",
    "Incomplete",
    "InvalidGrammar",
    "InvalidSchema",
    "ParseError",
    "SequencesLengthError",
]


class InvalidGrammar(GenlmLabError, ValueError):
    """A regex, Lark grammar or JSON schema that cannot be compiled; the message names where."""


class InvalidSchema(InvalidGrammar, SchemaError):
    """A JSON schema its draft's metaschema rejects.

    Also `jsonschema`'s `SchemaError`, which genlm-control's `JsonSchema`
    raises, so code written against either catches it.
    """

    def __init__(self, message: str) -> None:
        SchemaError.__init__(self, message)
        self.args = (message,)

    def __reduce__(self) -> tuple:
        return (type(self), self.args)  # jsonschema's unset markers do not survive a pickle


class ParseError(GenlmLabError, Exception):
    """The text read so far cannot continue into anything the streaming parser accepts."""


class Incomplete(GenlmLabError, Exception):
    """The text ended before the streaming parser could decide; more text might still parse."""


class FinishWarning(GenlmLabWarning, UserWarning):
    """A document prefix the mask keeps alive that `JsonSchema.finish` cannot complete: a
    budget cannot tell whether it ends in time (said once per path and keyword)."""


class BudgetTooSmall(GenlmLabWarning, UserWarning):
    """A run's `max_tokens` is too small for a constraint to end any text (budgets on)."""


class SequencesLengthError(GenlmLabError, ValueError, AssertionError):
    """`Sequences` got a different number of contexts and log-weights."""


class HarmonyFormatError(GenlmLabError, ValueError, AssertionError):
    """Tokens that no chat in the Harmony format starts with; the message names the token.

    A ValueError; also an AssertionError, which is what genlm-control's HarmonyChat raises.
    """


class BatchAbandoned(GenlmLabError, RuntimeError):
    """The batch a call was queued in was dropped (its wrapper was cleaned up) before it ran."""
