"""The CFG family: context-free grammars in Lark syntax.

`potential` is the constraint (`BoolCFG`, masked by llguidance's Earley
parser). `earley` is our own Earley reading of the grammar (terminals as
regexes), which `finish` uses to write a short completion of a prefix and
`superset` to write a regular grammar as a regex holding every text it
derives (the lower bound of its token budget). `from_cfg` writes a grammar
object (genlm-grammar's `CFG`) as Lark text, for `BoolCFG(cfg)`.
"""

from genlm_lab.control.constraint.cfg.potential import BoolCFG

__all__ = ["BoolCFG"]
