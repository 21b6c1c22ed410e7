"""Controlled generation: constraints and critics as potentials, and samplers over them.

A `Potential` weighs token sequences; language models (`PromptedLLM`,
`ByteLLM`), regexes (`BoolFSA`), Python `regex` patterns (`PythonRegex`),
grammars (`BoolCFG`), JSON schemas (`JsonSchema`) and Python checks
(`BoolPredicate`) are all potentials, and
`*`, `coerce` and `**` combine them. Token samplers (`direct_token_sampler`,
`AWRS`, ...) draw properly weighted next tokens from a potential; `SMC` runs
them as particles on `genlm_lab.smc`'s machinery and returns `Sequences`.
The names follow genlm-control.
"""

from genlm_lab.control._guidance import InvalidGrammar
from genlm_lab.control.awrs import AWRS
from genlm_lab.control.bytellm import ByteLLM
from genlm_lab.control.cfg import BoolCFG
from genlm_lab.control.coerce import Coerced, coerce
from genlm_lab.control.constant import EOS, EOT, EndOfSequence
from genlm_lab.control.fsa import WFSA, BoolFSA
from genlm_lab.control.grammar_base import GrammarPotential, TokenConstraint
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
from genlm_lab.control.weights import LazyWeights

__all__ = [
    "AWRS",
    "EOS",
    "EOT",
    "SMC",
    "WFSA",
    "AutoBatched",
    "AutoBatchedPotential",
    "BoolCFG",
    "BoolFSA",
    "BoolPredicate",
    "ByteLLM",
    "Coerced",
    "DirectTokenSampler",
    "EagerSetSampler",
    "EndOfSequence",
    "GrammarPotential",
    "InvalidGrammar",
    "JsonSchema",
    "LazyWeights",
    "MultiProcPotential",
    "Normalized",
    "Potential",
    "Power",
    "Product",
    "PromptedLLM",
    "PythonRegex",
    "SequenceModel",
    "Sequences",
    "SetSampler",
    "SetTokenSampler",
    "TokenConstraint",
    "TokenSampler",
    "TopKSetSampler",
    "TrieSetSampler",
    "coerce",
    "direct_token_sampler",
    "eager_token_sampler",
    "sql_grammar",
    "topk_token_sampler",
]
