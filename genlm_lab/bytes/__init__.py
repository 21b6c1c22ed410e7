"""Byte-level language models over token LMs: token-byte trie, beam state, healing.

Typical use::

    beam = await ByteBeamState.initial(llm, BeamParams(K=5, eos_byte_strings=[b"<|im_end|>"]))
    beam = await beam.prefill(b"The quick brown")
    q = await beam.logp_next()          # LazyByteProbs over bytes and EOS
    beam = await (beam.prune() << ord(" "))
    beam.logZ                           # log P(bytes read so far), summed over tokenizations
    beam.logZ_upper                     # the exact value lies in [logZ, logZ_upper]
    beam.history[-1].to_dict()          # what the last step did, for views
    beam.alarms                         # what went wrong, one sentence each (bytes.alarms)
    beam.profile                        # with BeamParams(profile=True): where the time went

Reading a known text, `beam.expect(text)` (and `prefill`, which does it by
default) batches the next byte's token extensions into the forward of this
one: the same results in about half the forwards.
"""

from genlm_lab.bytes.alarms import BEAM_ALARM_KINDS, BeamAlarmThresholds
from genlm_lab.bytes.base import StatefulByteLM, sample_dict
from genlm_lab.bytes.beam import ByteBeamState
from genlm_lab.bytes.heal import TokenHealer
from genlm_lab.bytes.interval import IntervalWarning
from genlm_lab.bytes.lm_state import StatefulTokenizedLM
from genlm_lab.bytes.params import BeamParams, EmptyBeamError
from genlm_lab.bytes.probs import EOT, ByteProbsLengthError, LazyByteProbs
from genlm_lab.bytes.record import BeamStep, CandidateRow, HealEvent
from genlm_lab.bytes.trie import EOS, AsyncTokenByteTrie, TokenByteTrie, TrieMode, TrieOp
from genlm_lab.bytes.trie_state import LazyTrieState

__all__ = [
    "BEAM_ALARM_KINDS",
    "EOS",
    "EOT",
    "AsyncTokenByteTrie",
    "BeamAlarmThresholds",
    "BeamParams",
    "BeamStep",
    "ByteBeamState",
    "CandidateRow",
    "EmptyBeamError",
    "HealEvent",
    "IntervalWarning",
    "ByteProbsLengthError",
    "LazyByteProbs",
    "LazyTrieState",
    "StatefulByteLM",
    "StatefulTokenizedLM",
    "TokenByteTrie",
    "TokenHealer",
    "TrieMode",
    "TrieOp",
    "sample_dict",
]
