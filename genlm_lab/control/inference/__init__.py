"""`SMC` over a token sampler and a critic, the `Sequences` it returns, and particle Gibbs."""

from genlm_lab.control.inference.budgets import Budget, BudgetedSampler, budget_for, with_budget
from genlm_lab.control.inference.csmc import RetainedTokenSampler, csmc_standard
from genlm_lab.control.inference.ensemble import EnsembleSMC, SequencesExt
from genlm_lab.control.inference.gibbs import ParticleGibbs, ParticleGibbsChain
from genlm_lab.control.inference.particle import SequenceModel, UnitSampler
from genlm_lab.control.inference.sequences import Sequences, SequencesLengthError
from genlm_lab.control.inference.smc import SMC, BudgetTooSmall

__all__ = [
    "Budget",
    "BudgetTooSmall",
    "BudgetedSampler",
    "EnsembleSMC",
    "ParticleGibbs",
    "ParticleGibbsChain",
    "RetainedTokenSampler",
    "SMC",
    "SequenceModel",
    "Sequences",
    "SequencesExt",
    "SequencesLengthError",
    "UnitSampler",
    "budget_for",
    "csmc_standard",
    "with_budget",
]
