"""Controlled generation: constraints and critics as potentials, and samplers over them.

A `Potential` weighs token sequences; language models (`PromptedLLM`,
`ByteLLM`), regexes (`BoolFSA`), Python `regex` patterns (`PythonRegex`),
Python syntax (`PythonParser`), grammars (`BoolCFG`; weighted: `WCFG`), JSON schemas (`JsonSchema`) and Python checks
(`BoolPredicate`) are all potentials, as is gpt-oss's Harmony chat format with a
constraint on some of its channels (`HarmonyPotential`), and
`*`, `coerce` and `**` (`Tempered`) combine them (`Ensemble`: two by a weighted mean;
`ByteEnsemble`: two models of any tokenizers, byte by byte).
Token samplers (`direct_token_sampler`, `AWRS`, ...) draw properly weighted
next tokens from a potential; `SMC` runs them as particles on
`genlm_lab.smc`'s machinery and returns `Sequences` (`ParticleGibbs`: conditional
SMC sweeps around a retained path, `RetainedTokenSampler`); the KL metrics
(`kl_divergence_*`) compare runs and models. The names follow genlm-control.
"""

from importlib import import_module
from typing import Any

from genlm_lab.control.constraint.budget.within import WithinBudget
from genlm_lab.control.constraint.cfg import BoolCFG
from genlm_lab.control.constraint.errors import FinishWarning, InvalidGrammar
from genlm_lab.control.constraint.fsa import WFSA, BoolFSA
from genlm_lab.control.constraint.json.schema import JsonSchema
from genlm_lab.control.constraint.llg.grammar import GrammarPotential, TokenConstraint
from genlm_lab.control.constraint.predicate import BoolPredicate
from genlm_lab.control.constraint.python_regex import PythonRegex
from genlm_lab.control.constraint.python_syntax import PythonParser
from genlm_lab.control.core.constant import EOS, EOT, EndOfSequence
from genlm_lab.control.core.util import flatten_units
from genlm_lab.control.core.weights import LazyWeights
from genlm_lab.control.evaluation.metrics import (
    effective_sample_size,
    kl_divergence_direct,
    kl_divergence_potentials,
    kl_divergence_sequences,
    perplexity_from_kl,
)
from genlm_lab.control.inference.csmc import RetainedTokenSampler, csmc_standard
from genlm_lab.control.inference.ensemble import EnsembleSMC, SequencesExt
from genlm_lab.control.inference.gibbs import ParticleGibbs, ParticleGibbsChain
from genlm_lab.control.inference.particle import SequenceModel
from genlm_lab.control.inference.sequences import Sequences
from genlm_lab.control.inference.smc import SMC, BudgetTooSmall
from genlm_lab.control.lm.byte_ensemble import ByteEnsemble
from genlm_lab.control.lm.bytellm import ByteLLM
from genlm_lab.control.lm.canonical import CanonicalTokenization
from genlm_lab.control.lm.harmony import HarmonyChat, HarmonyPotential
from genlm_lab.control.lm.llm import PromptedLLM
from genlm_lab.control.potential.base import Potential
from genlm_lab.control.potential.coerce import Coerced, coerce
from genlm_lab.control.potential.ensemble import Ensemble, convert_to_weighted_logop
from genlm_lab.control.potential.multi_proc import MultiProcPotential
from genlm_lab.control.potential.normalized import Normalized
from genlm_lab.control.potential.operators import AutoBatched, AutoBatchedPotential, Power, Product
from genlm_lab.control.potential.stateful import (
    ParticleState,
    PriorityMap,
    StatefulPotential,
    make_immutable,
)
from genlm_lab.control.potential.streaming import (
    AsyncSource,
    AsyncStreamingPotential,
    AsyncStreamingState,
)
from genlm_lab.control.potential.tempered import Tempered
from genlm_lab.control.sampler.awrs import AWRS
from genlm_lab.control.sampler.awrs_estimators import geometric_awrs, recursive_awrs
from genlm_lab.control.sampler.boundaries import (
    BoundaryPredicate,
    CFGBoundary,
    FixedLengthBoundary,
    TokenSetBoundary,
)
from genlm_lab.control.sampler.byte_ensemble import ByteEnsembleTokenSampler
from genlm_lab.control.sampler.set import (
    EagerSetSampler,
    SetSampler,
    SetTokenSampler,
    TopKSetSampler,
    TrieSetSampler,
    eager_token_sampler,
    topk_token_sampler,
)
from genlm_lab.control.sampler.signal_boundaries import CriticBoundary, SurpriseBoundary
from genlm_lab.control.sampler.token import DirectTokenSampler, TokenSampler, direct_token_sampler
from genlm_lab.control.sampler.unit import MultiTokenUnitSampler
from genlm_lab.control.wcfg.potential import WCFG, WeightedGrammar

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
    "ByteEnsemble",
    "ByteEnsembleTokenSampler",
    "ByteLLM",
    "CanonicalTokenization",
    "BudgetTooSmall",
    "CFGBoundary",
    "Coerced",
    "CriticBoundary",
    "DirectTokenSampler",
    "EagerSetSampler",
    "EndOfSequence",
    "Ensemble",
    "EnsembleSMC",
    "FinishWarning",
    "FixedLengthBoundary",
    "GrammarPotential",
    "HarmonyChat",
    "HarmonyPotential",
    "InferenceVisualizer",
    "InvalidGrammar",
    "JsonSchema",
    "LazyWeights",
    "MultiProcPotential",
    "MultiTokenUnitSampler",
    "Normalized",
    "ParticleGibbs",
    "ParticleGibbsChain",
    "ParticleState",
    "Potential",
    "Power",
    "PriorityMap",
    "Product",
    "PromptedLLM",
    "PythonParser",
    "PythonRegex",
    "RetainedTokenSampler",
    "SequenceModel",
    "Sequences",
    "SequencesExt",
    "SetSampler",
    "SetTokenSampler",
    "StatefulPotential",
    "SurpriseBoundary",
    "Tempered",
    "TokenConstraint",
    "TokenSampler",
    "TokenSetBoundary",
    "TopKSetSampler",
    "TrieSetSampler",
    "WeightedGrammar",
    "WithinBudget",
    "coerce",
    "convert_to_weighted_logop",
    "csmc_standard",
    "direct_token_sampler",
    "eager_token_sampler",
    "effective_sample_size",
    "flatten_units",
    "geometric_awrs",
    "kl_divergence_direct",
    "kl_divergence_potentials",
    "kl_divergence_sequences",
    "make_immutable",
    "perplexity_from_kl",
    "recursive_awrs",
    "topk_token_sampler",
]

#: Names whose home is a layer above control, looked up by name on first use so that
#: control never imports it: genlm-control's door has `InferenceVisualizer`, which here
#: opens genlm_lab's own views (`genlm_lab.widgets`) instead of serving a page.
_LATE = {"InferenceVisualizer": "genlm_lab.widgets.inference_visualizer"}


def __getattr__(name: str) -> Any:
    if name in _LATE:
        value = getattr(import_module(_LATE[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'genlm_lab.control' has no attribute {name!r}")
