"""Token samplers: direct, set-based (eager, top-k), AWRS, and multi-token units with boundaries."""

from genlm_lab.control.sampler.awrs import AWRS
from genlm_lab.control.sampler.awrs_estimators import geometric_awrs, recursive_awrs
from genlm_lab.control.sampler.awrs_order import (
    UnseenTokens,
    draw_from_cdf,
    pick_weighted,
    skipped_draws,
)
from genlm_lab.control.sampler.boundaries import (
    BoundaryPredicate,
    CFGBoundary,
    FixedLengthBoundary,
    TokenSetBoundary,
)
from genlm_lab.control.sampler.byte_ensemble import ByteEnsembleTokenSampler, token_shares
from genlm_lab.control.sampler.draws import (
    DRAW_METHODS,
    draw_from,
    draw_indices,
    gumbel_max,
    inverse_cdf,
    multinomial,
    set_draw_method,
)
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
from genlm_lab.control.sampler.token import (
    DirectTokenSampler,
    FactorRows,
    TokenSampler,
    direct_token_sampler,
)
from genlm_lab.control.sampler.unit import MultiTokenUnitSampler, flatten_units

__all__ = [
    "AWRS",
    "BoundaryPredicate",
    "ByteEnsembleTokenSampler",
    "CFGBoundary",
    "CriticBoundary",
    "DRAW_METHODS",
    "DirectTokenSampler",
    "EagerSetSampler",
    "FactorRows",
    "FixedLengthBoundary",
    "MultiTokenUnitSampler",
    "SetSampler",
    "SetTokenSampler",
    "SurpriseBoundary",
    "TokenSampler",
    "TokenSetBoundary",
    "TopKSetSampler",
    "TrieSetSampler",
    "UnseenTokens",
    "direct_token_sampler",
    "draw_from",
    "draw_from_cdf",
    "draw_indices",
    "eager_token_sampler",
    "flatten_units",
    "geometric_awrs",
    "gumbel_max",
    "inverse_cdf",
    "multinomial",
    "pick_weighted",
    "recursive_awrs",
    "set_draw_method",
    "skipped_draws",
    "token_shares",
    "topk_token_sampler",
]
