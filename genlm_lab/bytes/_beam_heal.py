"""Token healing for a byte beam: what to do when no candidate can read the next byte.

Mixed into `ByteBeamState`. With healing on, the beam backs off inside one
candidate's last tokens and retokenizes so the byte can be read
(`genlm_lab.bytes.heal.TokenHealer`); otherwise the step yields an empty beam
whose `EmptyBeamError` says why no candidate read the byte.
"""

from __future__ import annotations

from genlm_lab.bytes.heal import TokenHealer
from genlm_lab.bytes.params import EmptyBeamError
from genlm_lab.bytes.probs import EOS
from genlm_lab.bytes.record import HealEvent
from genlm_lab.bytes.trie_state import LazyTrieState


class HealingMixin:
    """Why a byte is unreadable, and the healed candidate when healing finds one."""

    async def _why_unreadable(
        self, a: int, heals: list[HealEvent]
    ) -> LazyTrieState | EmptyBeamError:
        """No candidate reads `a`: the healed candidate, or the error saying why there is none."""
        if self.terminated:
            return EmptyBeamError(a, self.position, "the beam has ended (EOS consumed)")
        if a == EOS and not self.params.eos_byte_strings:
            return EmptyBeamError(
                a,
                self.position,
                "no EOS tokens are configured (BeamParams(eos_byte_strings=[...]) names them)",
            )
        if not self.params.heal:
            return EmptyBeamError(
                a, self.position, "healing is off (BeamParams(heal=True) may repair it)"
            )
        healed = await self._heal(a, heals)
        if healed is None:
            return EmptyBeamError(
                a,
                self.position,
                f"token healing found no other tokenization ({len(heals)} candidates tried)",
            )
        return healed

    async def _heal(self, a: int, events: list[HealEvent]) -> LazyTrieState | None:
        healer = TokenHealer(
            self.params.heal_max_backoff, self.params.heal_max_splits, self.params.verbose
        )
        for i, s in enumerate(self.states):
            event = HealEvent(byte=a, position=self.position, candidate=i)
            events.append(event)
            healed = await healer.try_heal(s, a, event)
            if healed is not None:
                return healed
        return None
