"""`Tempered`: a potential raised to a power, genlm-control's name for `p ** beta`.

Every finite log-weight of `p` is multiplied by `beta` (`1 / temperature`);
weight zero stays zero. The result is unnormalised: `(p ** (1 / tau)).normalize()`
is `p` at temperature `tau` token by token, while SMC over `lm * Tempered(p, beta)`
targets the whole-sequence tempered posterior, proportional to
`lm(x) * p(x) ** beta`. It is a `Power` (the arithmetic lives there) that also
answers to genlm-control's attribute names, `p` and `beta`.
"""

from __future__ import annotations

import math

from genlm_lab.control.potential.base import Potential
from genlm_lab.control.potential.operators import Power

__all__ = ["Tempered"]


class Tempered(Power):
    """`p ** beta`: every finite log-weight of `p` times `beta`; zero stays zero.

    Args:
        p: the potential to temper.
        beta: the exponent, `1 / temperature` (> 1 sharpens, < 1 flattens,
            0 keeps only the support).

    Raises:
        ValueError: unless `p` is a Potential and `beta` a finite number.
    """

    def __init__(self, p: Potential, beta: float) -> None:
        if not isinstance(p, Potential):
            raise ValueError(f"Tempered needs a Potential to temper, got {type(p).__name__}")
        super().__init__(p, beta)

    @property
    def p(self) -> Potential:
        """The tempered potential (genlm-control's name for `potential`)."""
        return self.potential

    @property
    def beta(self) -> float:
        """The exponent, `1 / temperature` (genlm-control's name for `exponent`)."""
        return self.exponent

    @property
    def temperature(self) -> float:
        """`1 / beta`: inf for beta 0 (only the support is kept), negative for beta < 0."""
        return math.inf if self.beta == 0 else 1.0 / self.beta

    def spawn(self) -> Tempered:
        return Tempered(self.potential.spawn(), self.beta)
