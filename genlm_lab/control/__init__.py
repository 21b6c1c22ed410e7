"""Controlled generation: constraints and critics as potentials, and samplers over them.

A `Potential` weighs token sequences; language models (`PromptedLLM`,
`ByteLLM`), regexes (`BoolFSA`), Python `regex` patterns (`PythonRegex`),
grammars (`BoolCFG`; weighted: `WCFG`), JSON schemas (`JsonSchema`) and Python checks
(`BoolPredicate`) are all potentials, and
`*`, `coerce` and `**` combine them (`Ensemble`: two by a weighted mean).
Token samplers (`direct_token_sampler`, `AWRS`, ...) draw properly weighted
next tokens from a potential; `SMC` runs them as particles on
`genlm_lab.smc`'s machinery and returns `Sequences`. The names follow
genlm-control.
"""

from genlm_lab.control._guidance import InvalidGrammar
from genlm_lab.control.awrs import AWRS
from genlm_lab.control.boundaries import (
    BoundaryPredicate,
    CFGBoundary,
    FixedLengthBoundary,
    TokenSetBoundary,
)
from genlm_lab.control.bytellm import ByteLLM
from genlm_lab.control.canonical import CanonicalTokenization
from genlm_lab.control.cfg import BoolCFG
from genlm_lab.control.coerce import Coerced, coerce
from genlm_lab.control.constant import EOS, EOT, EndOfSequence
from genlm_lab.control.ensemble import Ensemble, convert_to_weighted_logop
from genlm_lab.control.fsa import WFSA, BoolFSA
from genlm_lab.control.grammar_base import GrammarPotential, TokenConstraint
from genlm_lab.control.helpers import flatten_units
from genlm_lab.control.json_schema import JsonSchema
from genlm_lab.control.llm import PromptedLLM
from genlm_lab.control.multi_proc import MultiProcPotential
from genlm_lab.control.normalized import Normalized
from genlm_lab.control.operators import AutoBatched, AutoBatchedPotential, Power, Product
from genlm_lab.control.potential import Potential
from genlm_lab.control.predicate import BoolPredicate
from genlm_lab.control.python_regex import PythonRegex
from genlm_lab.control.samplers import DirectTokenSampler, TokenSampler, direct_token_sampler
from genlm_lab.control.sequences import Sequences
from genlm_lab.control.set_samplers import (
    EagerSetSampler,
    SetSampler,
    SetTokenSampler,
    TopKSetSampler,
    TrieSetSampler,
    eager_token_sampler,
    topk_token_sampler,
)
from genlm_lab.control.smc import SMC, SequenceModel
from genlm_lab.control.sql import sql_grammar
from genlm_lab.control.stateful import (
    ParticleState,
    PriorityMap,
    StatefulPotential,
    make_immutable,
)
from genlm_lab.control.streaming import AsyncSource, AsyncStreamingPotential, AsyncStreamingState
from genlm_lab.control.unit_sampler import MultiTokenUnitSampler
from genlm_lab.control.wcfg import WCFG, WeightedGrammar
from genlm_lab.control.weights import LazyWeights

__all__ = [
    "AWRS",
    "EOS",
    "EOT",
    "SMC",
    "WCFG",
    "WFSA",
    "AsyncSource",
    "AsyncStreamingPotential",
    "AsyncStreamingState",
    "AutoBatched",
    "AutoBatchedPotential",
    "BoolCFG",
    "BoolFSA",
    "BoolPredicate",
    "BoundaryPredicate",
    "ByteLLM",
    "CanonicalTokenization",
    "CFGBoundary",
    "Coerced",
    "DirectTokenSampler",
    "EagerSetSampler",
    "EndOfSequence",
    "Ensemble",
    "FixedLengthBoundary",
    "GrammarPotential",
    "InvalidGrammar",
    "JsonSchema",
    "LazyWeights",
    "MultiProcPotential",
    "MultiTokenUnitSampler",
    "Normalized",
    "ParticleState",
    "Potential",
    "Power",
    "PriorityMap",
    "Product",
    "PromptedLLM",
    "PythonRegex",
    "SequenceModel",
    "Sequences",
    "SetSampler",
    "SetTokenSampler",
    "StatefulPotential",
    "TokenConstraint",
    "TokenSampler",
    "TokenSetBoundary",
    "TopKSetSampler",
    "TrieSetSampler",
    "WeightedGrammar",
    "coerce",
    "convert_to_weighted_logop",
    "direct_token_sampler",
    "eager_token_sampler",
    "flatten_units",
    "make_immutable",
    "sql_grammar",
    "topk_token_sampler",
]
