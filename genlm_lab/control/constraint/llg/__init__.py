"""llg: the adapter to llguidance, the Rust engine behind regex, grammar and JSON masks.

`engine` compiles a grammar for a vocabulary and answers masks per context
(`Engine`), `matcher_cache` keeps its matcher states per context in linear
time, `mask_weights` holds a mask as packed bits (`MaskWeights`), and
`grammar` turns an engine into a potential (`GrammarPotential` over bytes,
`TokenConstraint` over a model's tokens). Named `llg`, not `llguidance`, so
it never reads like the third-party package itself.
"""

from genlm_lab.control.constraint.llg.engine import (
    Engine,
    GreedyTokenizer,
    check_grammar,
    llg_tokenizer,
)
from genlm_lab.control.constraint.llg.grammar import (
    GrammarPotential,
    MaskedPotential,
    TokenConstraint,
)
from genlm_lab.control.constraint.llg.mask_weights import MaskWeights, unpack_mask
from genlm_lab.control.constraint.llg.matcher_cache import Key, StateCache, as_key

__all__ = [
    "Engine",
    "GrammarPotential",
    "GreedyTokenizer",
    "Key",
    "MaskWeights",
    "MaskedPotential",
    "StateCache",
    "TokenConstraint",
    "as_key",
    "check_grammar",
    "llg_tokenizer",
    "unpack_mask",
]
