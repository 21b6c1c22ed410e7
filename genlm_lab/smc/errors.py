"""What SMC warns: a run whose particles all died.

`smc_standard`, `importance_sampling` and `smc_steer` warn `AllParticlesDied`
when every particle's weight is zero; the run stops with log_ml = -inf.
"""

from __future__ import annotations

from genlm_lab.util.errors import GenlmLabWarning

__all__ = ["AllParticlesDied"]


class AllParticlesDied(GenlmLabWarning, RuntimeWarning):
    """Every particle of a run has weight zero: the run stops with log_ml = -inf."""
