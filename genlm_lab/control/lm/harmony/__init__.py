"""The Harmony chat format of gpt-oss: `HarmonyChat` reads a turn's channels, and
`HarmonyPotential` constrains some of them with a base potential (genlm-control's names).

`grammar` is the format itself, token by token; `chat` its reading over a
tokenizer; `potential` the weights.
"""

from genlm_lab.control.lm.harmony.chat import HarmonyChat
from genlm_lab.control.lm.harmony.grammar import CHANNELS, Message, Reading
from genlm_lab.control.lm.harmony.potential import VALID_CHANNELS, HarmonyPotential

__all__ = ["CHANNELS", "VALID_CHANNELS", "HarmonyChat", "HarmonyPotential", "Message", "Reading"]
