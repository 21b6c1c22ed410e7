"""Byte-level language models over token LMs: token-byte trie, beam state, healing."""

from genlm_lab.bytes.base import StatefulByteLM, sample_dict
from genlm_lab.bytes.beam import ByteBeamState
from genlm_lab.bytes.heal import TokenHealer
from genlm_lab.bytes.lm_state import StatefulTokenizedLM
from genlm_lab.bytes.params import BeamParams, EmptyBeamError
from genlm_lab.bytes.probs import EOT, LazyByteProbs
from genlm_lab.bytes.record import BeamStep, CandidateRow, HealEvent
from genlm_lab.bytes.trie import EOS, AsyncTokenByteTrie, TokenByteTrie, TrieMode, TrieOp
from genlm_lab.bytes.trie_state import LazyTrieState

__all__ = [
    "EOS",
    "EOT",
    "AsyncTokenByteTrie",
    "BeamParams",
    "BeamStep",
    "ByteBeamState",
    "CandidateRow",
    "EmptyBeamError",
    "HealEvent",
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
