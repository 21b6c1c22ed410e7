"""`BeamParams`: how a byte beam prunes, ends and heals (`EmptyBeamError` is in `errors`)."""

from __future__ import annotations

import math
from dataclasses import InitVar, asdict, dataclass, field
from typing import Any

from genlm_lab.bytes.alarms import BeamAlarmThresholds
from genlm_lab.bytes.errors import EmptyBeamError as EmptyBeamError  # its first home
from genlm_lab.util.renamed import renamed_argument


def _check_optional_count(name: str, value: Any) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise ValueError(f"{name} must be None or an int >= 0, got {value!r}")


def _check_eos_tokens(eos_tokens: Any, name: str = "eos_byte_strings") -> list:
    """EOS tokens as a list of bytes (a `Token` kept as is) and int ids."""
    if eos_tokens is None:
        return []
    if isinstance(eos_tokens, (bytes, bytearray, str, int)) or not hasattr(eos_tokens, "__iter__"):
        raise ValueError(
            f"{name} must be a list of tokens (bytes, Token or id), got {eos_tokens!r}; "
            f"write [{eos_tokens!r}] for one token"
        )
    out = []
    for t in eos_tokens:
        if isinstance(t, bytearray):
            t = bytes(t)
        elif not isinstance(t, bytes) and (isinstance(t, bool) or not hasattr(t, "__index__")):
            raise ValueError(
                f"EOS token {t!r} is a {type(t).__name__}; give bytes (e.g. b'<|im_end|>'), "
                "a Token or an int token id"
            )
        out.append(t if isinstance(t, bytes) else int(t))
    return out


@dataclass
class BeamParams:
    """Parameters of the byte-level beam.

    Args:
        K: beam width, the most candidates kept by `prune()` (>= 1).
        prune_threshold: candidates whose share of the beam is at most this
            are dropped by `prune()`, and extensions below it are never
            evaluated (0 keeps all, as in genlm-bytes).
        verbose: print the beam after each byte.
        eos_byte_strings: byte strings (or Tokens / ids) of the tokens that
            end the sequence; their probability goes to the EOS slot (257) at
            token boundaries. None or empty: no EOS. Kept as a set, as in
            genlm-bytes 0.2.
        heal: repair a beam that would become empty (see `TokenHealer`).
        heal_max_backoff: most bytes healing may un-read (None: no limit).
        heal_max_splits: most extra tokens healing may commit while replaying.
        extend_threshold: skip evaluating the lightest token extensions while
            their summed weight (an upper bound on what they can add) stays at
            most this share of the beam; 0 (default) evaluates every one.
            Saves LM calls for a bounded loss of mass per byte: each
            `logp_next` is within this total variation of the one with every
            extension evaluated, and logZ only falls (it stays a lower bound).
            The bound is on the share when skipped, not on what the skipped
            branch would have held later, so raising it can drop a branch that
            was light at one byte and heavy afterwards (on one untuned
            sentence, 0.01 lost 4 nats). Whatever it skips is counted in the
            beam's certified interval: `beam.logZ_upper` says how far logZ
            may be below the exact value.
        max_width: largest allowed width of the certified interval
            `logZ_upper - logZ` (nats; see `genlm_lab.bytes.interval`), or
            None (no check). Past it, `on_wide` decides.
        on_wide: "warn" (an `IntervalWarning`, once per chain of beams) or
            "widen": `prune()` keeps candidates beyond K and `prune_threshold`,
            heaviest first, until the width is within `max_width` again or
            4K candidates are kept, and warns where that is not enough (mass
            dropped earlier cannot be recovered, and its bound loosens as
            the kept candidates read on).
        eos_tokens: the name of `eos_byte_strings` before genlm-bytes 0.2;
            still accepted with a `DeprecationWarning` (giving both is a
            `TypeError`), and reads back as the same set.
        profile: charge each step's wall time to components (`beam.profile`,
            `BeamStep.profile`; see `genlm_lab.bytes.beam`). Off: nothing is timed.
        alarms: when the beam's alarms go off (`beam.alarms`, see
            `genlm_lab.bytes.alarms`); None turns the checks off.
    """

    K: int
    prune_threshold: float = 0.0
    verbose: bool = False
    eos_byte_strings: Any = None
    heal: bool = True
    heal_max_backoff: int | None = None
    heal_max_splits: int | None = None
    extend_threshold: float = field(default=0.0)
    max_width: float | None = None
    on_wide: str = "warn"
    eos_tokens: InitVar[Any] = None
    profile: bool = False
    alarms: BeamAlarmThresholds | None = BeamAlarmThresholds()

    def __post_init__(self, eos_tokens: Any) -> None:
        if not isinstance(eos_tokens, _OldName):  # not passed back by dataclasses.replace
            self.eos_byte_strings = renamed_argument(
                "BeamParams", "eos_byte_strings", self.eos_byte_strings, "eos_tokens", eos_tokens
            )
        if isinstance(self.K, bool) or not isinstance(self.K, int) or self.K < 1:
            raise ValueError(f"K (beam width) must be an int >= 1, got {self.K!r}")
        for name in ("prune_threshold", "extend_threshold"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not 0 <= value < 1:
                raise ValueError(f"{name} must be a number in [0, 1), got {value!r}")
        if self.max_width is not None and (
            isinstance(self.max_width, bool)
            or not isinstance(self.max_width, (int, float))
            or not self.max_width > 0
        ):
            raise ValueError(
                f"max_width must be None or a number > 0 (nats), got {self.max_width!r}"
            )
        if self.on_wide not in ("warn", "widen"):
            raise ValueError(f"on_wide must be 'warn' or 'widen', got {self.on_wide!r}")
        if not isinstance(self.profile, bool):
            raise ValueError(f"profile must be True or False, got {self.profile!r}")
        if self.alarms is not None and not isinstance(self.alarms, BeamAlarmThresholds):
            raise ValueError(
                f"alarms must be a BeamAlarmThresholds or None, got {type(self.alarms).__name__}"
            )
        _check_optional_count("heal_max_backoff", self.heal_max_backoff)
        _check_optional_count("heal_max_splits", self.heal_max_splits)
        self.eos_byte_strings = set(_check_eos_tokens(self.eos_byte_strings))

    @property
    def widens(self) -> bool:
        """Whether `prune()` keeps extra candidates to hold the interval within `max_width`."""
        return self.max_width is not None and self.on_wide == "widen"

    @property
    def log_prune_threshold(self) -> float:
        """log(prune_threshold), -inf for 0."""
        return math.log(self.prune_threshold) if self.prune_threshold > 0 else -math.inf

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready parameters (EOS tokens as lists of ints)."""
        out = asdict(self)
        out["eos_byte_strings"] = sorted(
            (
                list(t) if isinstance(t, (bytes, bytearray)) else int(t)
                for t in self.eos_byte_strings
            ),
            key=repr,
        )
        return out


class _OldName(frozenset):
    """What `params.eos_tokens` reads: a copy of `eos_byte_strings`.

    Its own type, so that `dataclasses.replace(params, ...)`, which passes every
    init argument back by reading it, is not taken for a second, deprecated one.
    """


def _eos_tokens(self: BeamParams) -> frozenset:
    return _OldName(self.eos_byte_strings)


# Read access under the old name; set after the decorator, which keeps the InitVar's default.
BeamParams.eos_tokens = property(_eos_tokens, doc="The old name of `eos_byte_strings`.")  # type: ignore[assignment]
