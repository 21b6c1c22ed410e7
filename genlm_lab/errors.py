"""Every public error and warning of genlm_lab, in one place.

Each is a `GenlmLabError` (or a `GenlmLabWarning`) and also the built-in class
it always was, so `except GenlmLabError` catches all of them and `except
ValueError` still catches `InvalidGrammar`. Each layer defines its own in its
`errors` module (`genlm_lab.bytes.errors`, ...); the classes are also importable
from where users met them first (`genlm_lab.control.InvalidGrammar`).

| Layer | Class | Built-in base | Raised or warned when |
| --- | --- | --- | --- |
| util | `GenlmLabError` | `Exception` | the base of every error below |
| util | `GenlmLabWarning` | `Warning` | the base of every warning below |
| tokenization | `ByteVocabError` | `ValueError` | no byte encoding decodes a tokenizer's vocabulary |
| tokenization | `ByteDecoderError` | `ValueError` | a character-to-byte map does not decode a vocabulary |
| backend | `ModelNotFoundError` | `ValueError` | a model name resolves to no weights on this machine |
| bytes | `EmptyBeamError` | `ValueError` | no candidate of a byte beam can read the next byte |
| bytes | `ByteProbsLengthError` | `ValueError`, `AssertionError` | `LazyByteProbs` gets other than 258 values |
| bytes | `IntervalWarning` | `RuntimeWarning` | a beam's certified interval grows past `max_width` |
| smc | `AllParticlesDied` | `RuntimeWarning` | every particle of a run has weight zero |
| control | `InvalidGrammar` | `ValueError` | a regex, grammar or JSON schema cannot be compiled |
| control | `InvalidSchema` | `ValueError` | a JSON schema its metaschema rejects (also an `InvalidGrammar` and jsonschema's `SchemaError`) |
| control | `ParseError` | `Exception` | the streaming JSON parser reads text that cannot continue |
| control | `Incomplete` | `Exception` | the streaming JSON parser's text ended before it could decide |
| control | `FinishWarning` | `UserWarning` | a live JSON prefix cannot be finished, so a budget cannot tell if it ends in time |
| control | `BudgetTooSmall` | `UserWarning` | an `SMC` run's `max_tokens` cannot end any text of a constraint |
| control | `SequencesLengthError` | `ValueError`, `AssertionError` | `Sequences` gets unequal numbers of contexts and weights |
| control | `HarmonyFormatError` | `ValueError`, `AssertionError` | tokens that no Harmony chat (gpt-oss's format) starts with |
| control | `BatchAbandoned` | `RuntimeError` | an `AutoBatched` call's batch was dropped before it ran |
| compat | `CompatError` | `ImportError` | `compat.install()` meets a real GenLM package already imported |
| workshop_checks | `AnswerError` | `AssertionError` | a workshop exercise's answer has the wrong form |
"""

from __future__ import annotations

from genlm_lab.backend.errors import ModelNotFoundError
from genlm_lab.bytes.errors import ByteProbsLengthError, EmptyBeamError, IntervalWarning
from genlm_lab.compat import CompatError
from genlm_lab.control.errors import (
    BatchAbandoned,
    BudgetTooSmall,
    FinishWarning,
    HarmonyFormatError,
    Incomplete,
    InvalidGrammar,
    InvalidSchema,
    ParseError,
    SequencesLengthError,
)
from genlm_lab.smc.errors import AllParticlesDied
from genlm_lab.tokenization.errors import ByteDecoderError, ByteVocabError
from genlm_lab.util.errors import GenlmLabError, GenlmLabWarning
from genlm_lab.workshop_checks import AnswerError

__all__ = [
    "AllParticlesDied",
    "AnswerError",
    "BatchAbandoned",
    "BudgetTooSmall",
    "ByteDecoderError",
    "ByteProbsLengthError",
    "ByteVocabError",
    "CompatError",
    "EmptyBeamError",
    "FinishWarning",
    "GenlmLabError",
    "GenlmLabWarning",
    "HarmonyFormatError",
    "Incomplete",
    "IntervalWarning",
    "InvalidGrammar",
    "InvalidSchema",
    "ModelNotFoundError",
    "ParseError",
    "SequencesLengthError",
]
