"""Probabilistic programs over language models, and SMC to run them.

Write a `Model` with an async `step`; draw from distributions (`LMContext`
for tokens, `ByteLMContext` for bytes) and weight with `observe`,
`condition`, `score`; run `smc_standard`, `smc_steer`, `importance_sampling`
or `csmc_standard` (conditional SMC around a retained path) to get an
`SMCResult` and its `SMCRecord`. A record says why particles died
(`deaths`), what went wrong (`alarms`) and, with `profile=True`, where the
time went (`profile`).
"""

from genlm_lab.smc.alarms import ALARM_KINDS, AlarmThresholds
from genlm_lab.smc.byte_context import ByteLMContext, ByteMask, NextByte, byte_mask
from genlm_lab.smc.cached_lm import CachedCausalLM
from genlm_lab.smc.csmc import csmc_standard
from genlm_lab.smc.deaths import AllParticlesDied
from genlm_lab.smc.distributions import (
    Bernoulli,
    Distribution,
    Geometric,
    LogCategorical,
    TokenCategorical,
    Transformer,
)
from genlm_lab.smc.inference import importance_sampling, smc_standard
from genlm_lab.smc.lm_context import LMContext, LMNextToken, LMTokenMask
from genlm_lab.smc.masks import TokenMasks, as_mask, token_masks
from genlm_lab.smc.model import Model, SubModel, submodel
from genlm_lab.smc.observers import CollectingObserver, Observer, PrintingObserver
from genlm_lab.smc.options import RunOptions
from genlm_lab.smc.profile import Profiler
from genlm_lab.smc.record import SMCRecord
from genlm_lab.smc.resample import RESAMPLING_METHODS, resample
from genlm_lab.smc.result import SMCResult, effective_sample_size
from genlm_lab.smc.rng import get_rng, make_rng, using_rng
from genlm_lab.smc.steer import smc_steer

__all__ = [
    "ALARM_KINDS",
    "AlarmThresholds",
    "AllParticlesDied",
    "Profiler",
    "RunOptions",
    "get_rng",
    "make_rng",
    "using_rng",
    "RESAMPLING_METHODS",
    "Bernoulli",
    "ByteLMContext",
    "CachedCausalLM",
    "ByteMask",
    "CollectingObserver",
    "Distribution",
    "Geometric",
    "LMContext",
    "LMNextToken",
    "LMTokenMask",
    "LogCategorical",
    "Model",
    "NextByte",
    "Observer",
    "PrintingObserver",
    "SMCRecord",
    "SMCResult",
    "SubModel",
    "TokenCategorical",
    "TokenMasks",
    "Transformer",
    "as_mask",
    "byte_mask",
    "csmc_standard",
    "effective_sample_size",
    "importance_sampling",
    "resample",
    "smc_standard",
    "smc_steer",
    "submodel",
    "token_masks",
]
