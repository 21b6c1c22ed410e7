"""genlm_lab.control's door: the names a user imports, pinned so that none appears or goes unseen.

Adding or removing a public name is a decision: change `PUBLIC` here with it. Internals
stay importable from their own modules (`genlm_lab.control.potential.streaming`, ...).
"""

from __future__ import annotations

import inspect

import genlm_lab.control as control

PUBLIC = [
    "AWRS",
    "AsyncSource",
    "AsyncStreamingPotential",
    "AsyncStreamingState",
    "AutoBatched",
    "AutoBatchedPotential",
    "BoolCFG",
    "BoolFSA",
    "BoolPredicate",
    "BoundaryPredicate",
    "BudgetTooSmall",
    "ByteEnsemble",
    "ByteEnsembleTokenSampler",
    "ByteLLM",
    "CFGBoundary",
    "CanonicalTokenization",
    "Coerced",
    "CriticBoundary",
    "DirectTokenSampler",
    "EOS",
    "EOT",
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
    "SMC",
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
    "WCFG",
    "WFSA",
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

#: Public attributes of the package that are deliberately not part of the door.
EXCLUDED: set[str] = set()

#: genlm-control 0.4.1's names in `genlm.control`, `genlm.control.potential` and
#: `genlm.control.sampler` that genlm_lab implements: `genlm_lab.compat` serves those
#: three paths from `genlm_lab.control.__all__`, so none may leave it.
GENLM_CONTROL = [
    "AWRS",
    "AutoBatchedPotential",
    "BoolCFG",
    "BoolFSA",
    "BoundaryPredicate",
    "ByteLLM",
    "CFGBoundary",
    "CanonicalTokenization",
    "Coerced",
    "DirectTokenSampler",
    "EOS",
    "EOT",
    "EagerSetSampler",
    "Ensemble",
    "FixedLengthBoundary",
    "JsonSchema",
    "MultiProcPotential",
    "MultiTokenUnitSampler",
    "Potential",
    "Product",
    "PromptedLLM",
    "SMC",
    "Sequences",
    "SetTokenSampler",
    "TokenSampler",
    "TokenSetBoundary",
    "TopKSetSampler",
    "WCFG",
    "WFSA",
    "convert_to_weighted_logop",
    "direct_token_sampler",
    "eager_token_sampler",
    "flatten_units",
    "topk_token_sampler",
]


def test_the_door_lists_exactly_the_pinned_names():
    assert PUBLIC == sorted(PUBLIC)
    assert len(control.__all__) == len(set(control.__all__))
    assert sorted(control.__all__) == PUBLIC


def test_every_listed_name_imports():
    namespace: dict = {}
    exec("from genlm_lab.control import *", namespace)
    assert sorted(n for n in namespace if n != "__builtins__") == PUBLIC
    for name in PUBLIC:
        assert namespace[name] is getattr(control, name)


def test_every_public_class_or_function_of_the_package_is_listed_or_excluded():
    unlisted = [
        name
        for name, obj in vars(control).items()
        if not name.startswith("_")
        and (inspect.isclass(obj) or inspect.isfunction(obj))
        and obj.__module__.startswith("genlm_lab")
        and name not in control.__all__
        and name not in EXCLUDED
    ]
    assert not unlisted, f"add to __all__ and PUBLIC, or to EXCLUDED: {unlisted}"


def test_genlm_controls_own_names_stay_in_the_door():
    assert not set(GENLM_CONTROL) - set(control.__all__)
