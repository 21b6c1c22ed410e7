"""`Potential`, the weight function over token sequences, and its algebra.

Products, powers (`Tempered`), coercions, normalisation, autobatching, worker processes,
ensembles, stateful and streaming potentials. The base class builds its
operators' subclasses in methods (`p * q`, `p.coerce(...)`), and those
subclasses' modules import the base: the one import circle of `control`,
kept inside this room on purpose (each import in `base.py` is deferred to
the method that needs it).
"""

from genlm_lab.control.potential.base import Potential, factor_names
from genlm_lab.control.potential.checks import PotentialChecks
from genlm_lab.control.potential.coerce import Coerced, coerce, is_join
from genlm_lab.control.potential.ensemble import Ensemble, convert_to_weighted_logop
from genlm_lab.control.potential.logops import WeightedLogOp
from genlm_lab.control.potential.multi_proc import MultiProcPotential
from genlm_lab.control.potential.normalized import Normalized
from genlm_lab.control.potential.operators import (
    AutoBatched,
    AutoBatchedPotential,
    Power,
    Product,
    autobatched,
)
from genlm_lab.control.potential.stateful import (
    ParticleState,
    PriorityMap,
    StatefulPotential,
    make_immutable,
)
from genlm_lab.control.potential.streaming import (
    KEEP_ALIVE_SET,
    PING_TOKEN,
    SHUTDOWN_TOKEN,
    AsyncSource,
    AsyncStreamingPotential,
    AsyncStreamingState,
    Chunks,
    Responses,
    RunningInTask,
    UniqueIdentifier,
)
from genlm_lab.control.potential.tempered import Tempered

__all__ = [
    "AsyncSource",
    "AsyncStreamingPotential",
    "AsyncStreamingState",
    "AutoBatched",
    "AutoBatchedPotential",
    "Chunks",
    "Coerced",
    "Ensemble",
    "KEEP_ALIVE_SET",
    "MultiProcPotential",
    "Normalized",
    "PING_TOKEN",
    "ParticleState",
    "Potential",
    "PotentialChecks",
    "Power",
    "PriorityMap",
    "Product",
    "Responses",
    "RunningInTask",
    "SHUTDOWN_TOKEN",
    "StatefulPotential",
    "Tempered",
    "UniqueIdentifier",
    "WeightedLogOp",
    "autobatched",
    "coerce",
    "convert_to_weighted_logop",
    "factor_names",
    "is_join",
    "make_immutable",
]
