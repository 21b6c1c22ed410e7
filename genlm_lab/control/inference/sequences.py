"""`Sequences`: the particles of a controlled-generation run, as weighted token sequences.

The weights are properly weighted for the target (the sampler's potential,
times the critic): `log_ml` (the log of their mean) estimates the log
normaliser, and the normalised weights give the posterior over sequences.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterator, Sequence
from functools import cached_property
from typing import Any

import numpy as np

from genlm_lab.control.core.constant import EndOfSequence
from genlm_lab.control.core.tokens import join_bytes, token_label
from genlm_lab.control.errors import SequencesLengthError
from genlm_lab.smc.record import SMCRecord
from genlm_lab.smc.result import effective_sample_size
from genlm_lab.util import Chart, logmeanexp, logsumexp, normalize_log_weights

__all__ = ["Sequences", "SequencesLengthError"]

_HTML_ROWS = 10


def _sorted_chart(pairs: dict) -> Chart:
    return Chart(0.0, sorted(pairs.items(), key=lambda kv: -kv[1]))


class Sequences:
    """Token sequences with log importance weights (genlm-control's `Sequences`).

    Args:
        contexts: one token list per particle; a finished one ends with EOS.
        log_weights: one log-weight per particle (-inf for a dead particle).
        record: the run's `SMCRecord`, if any.
        status: how the run ended: "finished", "all_dead", ...

    Raises:
        SequencesLengthError: if the lengths differ (a ValueError, and an
            AssertionError as genlm-control raises).
        ValueError: if a weight is NaN or +inf.
    """

    def __init__(
        self,
        contexts: Sequence[Sequence[Any]],
        log_weights: Sequence[float],
        record: SMCRecord | None = None,
        status: str = "finished",
    ) -> None:
        self.contexts = [list(c) for c in contexts]
        self.log_weights = np.asarray(log_weights, dtype=np.float64).reshape(-1)
        if len(self.contexts) != len(self.log_weights):
            raise SequencesLengthError(
                f"{len(self.contexts)} contexts but {len(self.log_weights)} log-weights"
            )
        bad = np.flatnonzero(np.isnan(self.log_weights) | (self.log_weights == math.inf))
        if bad.size:
            raise ValueError(
                f"log-weight {self.log_weights[bad[0]]} of sequence {int(bad[0])}: "
                "log-weights must be finite or -inf"
            )
        self.record = record
        self.status = status

    # ------------------------------------------------------------ estimates
    @property
    def size(self) -> int:
        return len(self.contexts)

    @property
    def log_ml(self) -> float:
        """Estimate of the log normaliser: logmeanexp of the weights (-inf when all died)."""
        return logmeanexp(self.log_weights)

    @property
    def log_total(self) -> float:
        """Log of the sum of the weights."""
        return logsumexp(self.log_weights)

    @property
    def normalized_weights(self) -> np.ndarray:
        """Weights that sum to one (all zero when every particle died)."""
        return normalize_log_weights(self.log_weights)

    @property
    def log_normalized_weights(self) -> np.ndarray:
        """Logs of `normalized_weights` (all -inf when every particle died)."""
        with np.errstate(divide="ignore"):
            return np.log(self.normalized_weights)

    @property
    def ess(self) -> float:
        """Effective sample size, 1 / sum of squared normalised weights (0 when all died)."""
        return effective_sample_size(self.log_weights)

    @property
    def log_ess(self) -> float:
        """Log of `ess` (-inf when all died)."""
        ess = self.ess
        return math.log(ess) if ess > 0 else -math.inf

    @property
    def finished(self) -> list[bool]:
        """Whether each sequence ends with EOS (live or not; see `ended_valid`)."""
        return [bool(c) and isinstance(c[-1], EndOfSequence) for c in self.contexts]

    @property
    def ended_valid(self) -> list[bool]:
        """Whether each sequence ended as a valid sample: EOS drawn and weight above zero.

        False for a particle cut at `max_tokens` (no EOS) and for one killed
        (weight zero), even after its EOS.
        """
        return [
            done and w > -math.inf
            for done, w in zip(self.finished, self.log_weights.tolist(), strict=True)
        ]

    @cached_property
    def posterior(self) -> Chart:
        """Normalised weight of each distinct sequence of weight > 0 (a tuple of tokens), greatest first.

        A multi-token unit in a context becomes a tuple inside the key.
        """
        out: dict = {}
        for context, w in zip(self.contexts, self.normalized_weights, strict=True):
            if w == 0:
                continue
            key = tuple(tuple(t) if isinstance(t, list) else t for t in context)  # units: tuples
            out[key] = out.get(key, 0.0) + float(w)
        return _sorted_chart(out)

    @cached_property
    def decoded_posterior(self) -> Chart:
        """Posterior over the texts of finished, UTF-8-decodable sequences, renormalised over them."""
        out: dict = {}
        for context, done, w in zip(
            self.contexts, self.finished, self.normalized_weights, strict=True
        ):
            if not done or w == 0:
                continue
            try:
                text = join_bytes(context[:-1]).decode("utf-8")
            except UnicodeDecodeError:
                continue
            out[text] = out.get(text, 0.0) + float(w)
        total = sum(out.values())
        return _sorted_chart({k: v / total for k, v in out.items()} if total > 0 else {})

    @property
    def deaths(self) -> Any:
        """Why particles died: a DataFrame of particle, step, factor, reason (and text).

        One row per death over the whole run (a particle's index is its
        place in that step's list), e.g. factor "JsonSchema" with reason
        "at $.rank, keyword type: 'x' is not of type 'integer'", or "cut at
        max_tokens inside a string at $.name". Empty without a record.
        """
        if self.record is None:
            from genlm_lab.smc.deaths import deaths_frame

            return deaths_frame([])
        return self.record.deaths

    @property
    def alarms(self) -> list[tuple[int, str, str]]:
        """The run's alarms, `(step, kind, sentence)` (see `genlm_lab.smc.alarms`)."""
        return [] if self.record is None else list(self.record.alarms)

    # ------------------------------------------------------------ container
    def __len__(self) -> int:
        return len(self.contexts)

    def __iter__(self) -> Iterator[tuple[list[Any], float]]:
        return iter(zip(self.contexts, self.log_weights.tolist(), strict=True))

    def __getitem__(self, i: int) -> tuple[list[Any], float]:
        return self.contexts[i], float(self.log_weights[i])

    def texts(self) -> list[str]:
        """Each sequence's text (without EOS; invalid UTF-8 replaced)."""
        return [join_bytes(c).decode("utf-8", errors="replace") for c in self.contexts]

    def to_pandas(self) -> Any:
        """One row per particle: text, tokens, log_weight, weight (normalised), finished.

        `finished` is `ended_valid`: True only for a particle that drew EOS
        and kept a weight above zero, not for one cut at `max_tokens` or killed.
        """
        import pandas as pd

        return pd.DataFrame(
            {
                "text": self.texts(),
                "tokens": [[token_label(t) for t in c] for c in self.contexts],
                "log_weight": self.log_weights,
                "weight": self.normalized_weights,
                "finished": self.ended_valid,
            }
        )

    # ------------------------------------------------------------ display
    def _summary(self) -> str:
        return (
            f"{len(self)} sequences, log_ml={self.log_ml:.4f}, ess={self.ess:.2f}, "
            f"status={self.status}"
        )

    def __repr__(self) -> str:
        return f"Sequences({self._summary()})"

    def show(self, top: int = _HTML_ROWS) -> None:
        """Print the summary and the `top` heaviest sequences with their normalised weights."""
        print(self._summary())
        weights, texts = self.normalized_weights, self.texts()
        for i in np.argsort(-weights, kind="stable")[:top]:
            print(f"{weights[i]:.4f}  {texts[i]!r}")

    def _repr_html_(self) -> str:
        """A summary line and the heaviest distinct texts (at most 10 rows)."""
        chart: dict = {}
        for text, done, w in zip(self.texts(), self.finished, self.normalized_weights, strict=True):
            key = (text, done)
            chart[key] = chart.get(key, 0.0) + float(w)
        rows = sorted(chart.items(), key=lambda kv: -kv[1])
        body = "".join(
            f"<tr><td>{w:.4f}</td><td><code>{html.escape(repr(text)[:200])}</code></td>"
            f"<td>{'' if done else 'unfinished'}</td></tr>"
            for (text, done), w in rows[:_HTML_ROWS]
        )
        more = len(rows) - _HTML_ROWS
        tail = f"<p>... {more} more distinct sequences</p>" if more > 0 else ""
        return (
            f"<div><p>{html.escape(self._summary())}</p><table><tr><th>weight</th>"
            f"<th>text</th><th></th></tr>{body}</table>{tail}</div>"
        )
