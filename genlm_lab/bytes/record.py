"""Plain records of what a byte beam did at each step, for views and logs.

Every `await (beam << byte)` appends one `BeamStep` to the beam's history
(`beam.history`, a list shared along a chain of beams; `beam.last_step` is
the newest). The first entry (position 0, byte None) describes the initial
beam. Records hold only numbers, strings, bytes and lists: no model, trie or
array, so keeping them is cheap and views draw them without recomputing.

`BeamStep` fields:
    position: bytes consumed after this step (0 for the initial beam).
    byte: the byte consumed (0..255, or 257 for EOS); None for the initial beam.
    candidates: one `CandidateRow` per candidate of the new beam (before any
        pruning), heaviest first.
    logZ: log of the summed candidate weights after the step (the estimated
        log-probability of the bytes consumed so far).
    lm_calls: LM calls made by this `<<` (extensions not already computed,
        healing replays).
    lm_calls_next: LM calls made by `logp_next()` on the beam of this step.
    skipped: extension candidates never evaluated because their weight (an
        upper bound on every continuation) was below the cut-off.
    healing: one `HealEvent` per healing attempt of this step.
    next_logprobs: the normalised next-byte log-distribution over 258 slots
        (bytes, EOT=256, EOS=257) if `logp_next()` was called on this beam.
    pruned_logZ: logZ after `prune()` was called on this beam, if it was.
    logZ_upper: upper end of the certified interval after the step: logZ plus
        the weight of every candidate dropped so far (pruned or left
        unevaluated); the exact log-probability of the bytes consumed lies in
        [logZ, logZ_upper] (pruning leaves the upper end unchanged).
    profile: with `BeamParams(profile=True)`, `[position, component, calls,
        seconds]` rows: the wall time of the `<<` that made this step, and of
        `prune()` and `logp_next()` on its beam, by component (see
        `genlm_lab.bytes.beam`); empty otherwise.
    alarms: the alarms this step raised, `Alarm(position, kind, sentence)`
        (see `genlm_lab.bytes.alarms`); empty for a healthy beam.

`CandidateRow` fields:
    token_ids: committed token ids after the initial context (e.g. BOS).
    tokens: their byte strings.
    partial: bytes read of the token in progress.
    log_weight: log-probability of the consumed bytes along this candidate.
    share: exp(log_weight - logZ), its share of the beam.
    status: "new" (initial beam), "kept" (advanced within its token),
        "extended" (committed a token, then read the byte), "healed"
        (produced by token healing) or "pruned" (dropped by a later
        `prune()`; set on the record when that happens).
    terminated: whether the candidate consumed EOS.

`to_dict()` gives JSON-ready data: bytes become lists of ints (`tokens`,
`partial`) with readable twins (`tokens_text`, `partial_text`), -inf
log-probabilities become None, and alarms `[position, kind, sentence]` lists.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from genlm_lab.util import escape_bytes
from genlm_lab.util.alarms import Alarm

STATUSES = ("new", "kept", "extended", "healed", "pruned")


def _num(x: float) -> float | None:
    return None if x is None or math.isinf(x) or math.isnan(x) else float(x)


@dataclass
class CandidateRow:
    """One candidate tokenization in a `BeamStep` (see the module docstring)."""

    token_ids: list[int]
    tokens: list[bytes]
    partial: bytes
    log_weight: float
    share: float
    status: str
    terminated: bool = False

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict of this record."""
        return {
            "token_ids": list(self.token_ids),
            "tokens": [list(t) for t in self.tokens],
            "tokens_text": [escape_bytes(t, visible_space=True) for t in self.tokens],
            "partial": list(self.partial),
            "partial_text": escape_bytes(self.partial, visible_space=True),
            "log_weight": _num(self.log_weight),
            "share": float(self.share),
            "status": self.status,
            "terminated": self.terminated,
        }


@dataclass
class HealEvent:
    """One healing attempt: which candidate, where it backed off, what it committed.

    Attributes:
        byte: the byte the beam could not read.
        position: bytes consumed before it.
        candidate: index (heaviest first) of the candidate healed, or None.
        partial: bytes of that candidate's token in progress.
        backoff: bytes un-read from the end of `partial` (the commit keeps
            `len(partial) - backoff` bytes as a token).
        committed: token ids committed during the heal (the shorter token,
            then any splits of the replayed bytes).
        lm_calls: LM calls the attempt made.
        success: whether a candidate could read `byte` afterwards.
    """

    byte: int
    position: int
    candidate: int | None = None
    partial: bytes = b""
    backoff: int | None = None
    committed: list[int] = field(default_factory=list)
    lm_calls: int = 0
    success: bool = False

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict of this record."""
        return {
            "byte": self.byte,
            "position": self.position,
            "candidate": self.candidate,
            "partial": list(self.partial),
            "partial_text": escape_bytes(self.partial, visible_space=True),
            "backoff": self.backoff,
            "committed": list(self.committed),
            "lm_calls": self.lm_calls,
            "success": self.success,
        }


@dataclass
class BeamStep:
    """What one `<<` did to the beam (see the module docstring)."""

    position: int
    byte: int | None
    candidates: list[CandidateRow]
    logZ: float
    lm_calls: int = 0
    lm_calls_next: int = 0
    skipped: int = 0
    healing: list[HealEvent] = field(default_factory=list)
    next_logprobs: list[float] | None = None
    pruned_logZ: float | None = None
    logZ_upper: float | None = None
    profile: list[list[Any]] = field(default_factory=list)
    alarms: list[Alarm] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict of this record."""
        return {
            "position": self.position,
            "byte": self.byte,
            "candidates": [c.to_dict() for c in self.candidates],
            "logZ": _num(self.logZ),
            "lm_calls": self.lm_calls,
            "lm_calls_next": self.lm_calls_next,
            "skipped": self.skipped,
            "healing": [h.to_dict() for h in self.healing],
            "next_logprobs": None
            if self.next_logprobs is None
            else [_num(x) for x in self.next_logprobs],
            "pruned_logZ": _num(self.pruned_logZ) if self.pruned_logZ is not None else None,
            "logZ_upper": _num(self.logZ_upper) if self.logZ_upper is not None else None,
            "profile": [[int(t), str(c), int(n), float(x)] for t, c, n, x in self.profile],
            "alarms": [[int(p), str(k), str(m)] for p, k, m in self.alarms],
        }
