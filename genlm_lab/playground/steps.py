"""A particle's tokens at any step of a recorded `control.SMC` run, read back from its record.

Steps are numbered as the record, its alarms and the genealogy number them:
step 1 draws the first token (step entry 0, whose "step" key is 1).
Each step entry of the record holds the label of the token every particle
drew (`extras[i]["token"]`, None where a finished particle did not step) and,
through `SMCRecord.parents()`, which particle of the previous step it
continues. Walking those links back from (step, particle) gives the exact
tokens it had, so a mask can be drawn at any step without re-running.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from genlm_lab.control.core.tokens import token_label

__all__ = ["context_at"]


def context_at(record: Any, step: int, particle: int, vocab_eos: Sequence[Any]) -> list[Any]:
    """The tokens the particle in slot `particle` of step `step` held before that step's draw.

    Args:
        record: the `SMCRecord` of a `control.SMC` run (its `Sequences.record`).
        step: a step as alarms and the genealogy number it: 1 draws the first
            token (so its context is empty), `len(record.steps)` the last.
        particle: a slot of that step's population (its index in the step's lists).
        vocab_eos: the target's tokens and EOS, to turn recorded labels back into tokens.

    Raises:
        ValueError: a step or particle out of range, or a label no token of
            `vocab_eos` has (a record of another vocabulary).
    """
    steps = record.steps
    if not 1 <= step <= len(steps):
        raise ValueError(
            f"step must be in [1, {len(steps)}] (step 1 draws the first token), got {step}"
        )
    entry = step - 1  # the step's entry in record.steps
    n = len(steps[entry]["log_weights"])
    if not 0 <= particle < n:
        raise ValueError(f"particle must be in [0, {n - 1}] at step {step}, got {particle}")
    by_label = {}
    for token in vocab_eos:
        by_label.setdefault(token_label(token), token)
    parents = record.parents()
    labels = []
    here = particle
    for t in range(entry - 1, -1, -1):
        links = parents[t + 1]
        here = here if links is None else links[here]
        extras = steps[t].get("extras") or [None] * len(steps[t]["log_weights"])
        drawn = extras[here]
        if drawn is not None and drawn.get("token") is not None:
            labels.append(drawn["token"])
    labels.reverse()
    missing = [label for label in labels if label not in by_label]
    if missing:
        raise ValueError(
            f"the record holds tokens this vocabulary lacks ({missing[:3]}); "
            "was it recorded with another model?"
        )
    return [by_label[label] for label in labels]
