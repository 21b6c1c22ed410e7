"""How a `ByteBeamState` records its steps and shows itself (text and HTML)."""

from __future__ import annotations

import html
import math
from typing import Any

from genlm_lab.bytes.record import BeamStep, CandidateRow
from genlm_lab.util import escape_bytes

MAX_ROWS = 20
"""Most candidates listed by `_repr_html_` and the long text form."""


class BeamDisplay:
    """Step records, `repr` and the HTML table of a beam (mixed into `ByteBeamState`)."""

    states: list
    position: int
    params: Any
    logZ: float
    logZ_upper: float
    _history: list[BeamStep]
    _hlen: int
    _base_len: int
    _rows: list[CandidateRow] | None

    def _record(self, byte: int | None, status: dict[int, str], **info: Any) -> None:
        logZ = self.logZ
        rows = []
        for s in self.states:
            ids = list(s.lm_state.context[self._base_len :])
            rows.append(
                CandidateRow(
                    token_ids=ids,
                    tokens=list(s.lm_state.tokens[self._base_len :]),
                    partial=s.partial,
                    log_weight=s.weight,
                    share=math.exp(s.weight - logZ) if math.isfinite(logZ) else 0.0,
                    status=status.get(id(s), "kept"),
                    terminated=s.terminated,
                )
            )
        self._rows = rows
        step = BeamStep(
            position=self.position,
            byte=byte,
            candidates=list(rows),
            logZ=logZ,
            logZ_upper=self.logZ_upper,
            **info,
        )
        self._history.append(step)
        self._hlen = len(self._history)

    def _shares(self) -> list[float]:
        z = self.logZ
        return [math.exp(s.weight - z) if math.isfinite(z) else 0.0 for s in self.states]

    def _text(self, s: Any) -> tuple[list[str], str]:
        """A candidate's committed tokens (after the initial context) and partial, escaped."""
        tokens = s.lm_state.tokens[self._base_len :]
        return [escape_bytes(t, visible_space=True) for t in tokens], escape_bytes(
            s.partial, visible_space=True
        )

    def __repr__(self) -> str:
        head = (
            f"ByteBeamState(position={self.position}, {len(self.states)} candidates, "
            f"logZ={self.logZ:.4f}, logZ_upper={self.logZ_upper:.4f}, K={self.params.K})"
        )
        if not self.states:
            return head
        tokens, partial = self._text(self.states[0])
        share = self._shares()[0]
        return f"{head}\n  best ({share:.3f}): {'|'.join([*tokens, partial])}"

    def show(self, rows: int = MAX_ROWS) -> str:
        """Every candidate (at most `rows`), one line each: share, weight, tokens|partial."""
        lines = [repr(self).split("\n")[0]]
        for s, share in list(zip(self.states, self._shares(), strict=True))[:rows]:
            lines.append(f"  ({share:.4f}) {s!r}")
        if len(self.states) > rows:
            lines.append(f"  ... {len(self.states) - rows} more")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        """The beam as a table: candidates (tokens escaped), log weights and shares (bounded)."""
        esc = html.escape
        width = self.logZ_upper - self.logZ if math.isfinite(self.logZ) else math.inf
        head = (
            f"ByteBeamState: {self.position} bytes read, {len(self.states)} candidates, "
            f"K={self.params.K}; logZ {self.logZ:.4f}, certified interval "
            f"[{self.logZ:.4f}, {self.logZ_upper:.4f}] (width {width:.3g} nats)"
        )
        body = []
        for s, share in list(zip(self.states, self._shares(), strict=True))[:MAX_ROWS]:
            tokens, partial = self._text(s)
            cells = "".join(f"<code>{esc(t)}</code>|" for t in tokens)
            end = " <i>EOS</i>" if s.terminated else ""
            body.append(
                f"<tr><td>{cells}<code><u>{esc(partial)}</u></code>{end}</td>"
                f"<td style='text-align:right'>{s.weight:.4f}</td>"
                f"<td style='text-align:right'>{share:.4f}</td></tr>"
            )
        if len(self.states) > MAX_ROWS:
            body.append(f"<tr><td colspan=3>… {len(self.states) - MAX_ROWS} more</td></tr>")
        return (
            f"<div class='genlm-beam-state'><div><b>{esc(head)}</b></div>"
            "<table><thead><tr><th>tokens | partial</th><th>log weight</th><th>share</th>"
            f"</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
        )
