"""Worked example models, used by the notebooks, tests and benchmarks.

- `Lipogram`: text without given letters (e.g. no "e"), token by token.
- `ShortLine`: one line of at most a given number of bytes (a haiku-like line).
- `RegexBytes`: bytes that must match a regular expression, checked byte by byte.
- `Coins`, `GeometricWalk`: toy models with exactly computable evidence.
"""

from genlm_lab.smc.examples.haiku import ShortLine
from genlm_lab.smc.examples.lipogram import Lipogram
from genlm_lab.smc.examples.regex_bytes import RegexBytes
from genlm_lab.smc.examples.toy import Coins, GeometricWalk

__all__ = ["Coins", "GeometricWalk", "Lipogram", "RegexBytes", "ShortLine"]
