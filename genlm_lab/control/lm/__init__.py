"""Language models as potentials: `PromptedLLM`, `ByteLLM`, `ByteEnsemble`, token maps, canonical
tokenization, and gpt-oss's Harmony chat format (`HarmonyChat`, `HarmonyPotential`)."""

from genlm_lab.control.lm.byte_ensemble import ByteEnsemble, EnsembleRows
from genlm_lab.control.lm.bytellm import ByteLLM
from genlm_lab.control.lm.canonical import CanonicalTokenization, FastCanonicalityFilterBPE
from genlm_lab.control.lm.harmony import HarmonyChat, HarmonyPotential
from genlm_lab.control.lm.llm import PromptedLLM, TokenMappings
from genlm_lab.control.lm.token_maps import TokenIndex, eos_order

__all__ = [
    "ByteEnsemble",
    "ByteLLM",
    "CanonicalTokenization",
    "EnsembleRows",
    "FastCanonicalityFilterBPE",
    "HarmonyChat",
    "HarmonyPotential",
    "PromptedLLM",
    "TokenIndex",
    "TokenMappings",
    "eos_order",
]
