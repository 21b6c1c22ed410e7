"""What every room of `control` shares: EOS and EOT, token types, lazy weight rows, token helpers."""

from genlm_lab.control.core.constant import EOS, EOT, EndOfSequence
from genlm_lab.control.core.token_types import (
    Atomic,
    Sequence,
    TokenType,
    infer_type,
    infer_vocabulary_type,
)
from genlm_lab.control.core.util import (
    BatchAbandoned,
    LRUCache,
    escape,
    flatten_units,
    load_trie,
    string_for_serialization,
)
from genlm_lab.control.core.weights import LazyWeights, WeightsBatch, split_rows

__all__ = [
    "Atomic",
    "BatchAbandoned",
    "EOS",
    "EOT",
    "EndOfSequence",
    "LRUCache",
    "LazyWeights",
    "Sequence",
    "TokenType",
    "WeightsBatch",
    "escape",
    "flatten_units",
    "infer_type",
    "infer_vocabulary_type",
    "load_trie",
    "split_rows",
    "string_for_serialization",
]
