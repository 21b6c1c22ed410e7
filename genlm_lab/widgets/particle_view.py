"""`ParticleView`: particles of an SMC run, live while it runs and from a saved record.

The view's data is `particle_data` (genlm_lab.widgets.particle_data); its
static HTML is `particles_html` (genlm_lab.widgets.particle_html), both
re-exported here; `record_html` is what `SMCRecord._repr_html_` shows.
"""

from __future__ import annotations

from typing import Any

from genlm_lab.widgets._factor_data import FactorTally
from genlm_lab.widgets.base import LiveView, esm
from genlm_lab.widgets.particle_data import (
    death_reasons,
    final_status,
    particle_data,
    record_data,
    resampling_draw,
)
from genlm_lab.widgets.particle_html import (
    REST_NOTE,
    RETAINED_NOTE,
    TEXT_SHOWN,
    awrs_tip,
    count_text,
    draws_html,
    ess_axis,
    factor_header,
    genealogy_svg,
    particles_html,
    record_html,
    rest_line,
    text_cell,
)
from genlm_lab.widgets.smc_data import as_record, normalize_entry, step_entries, summary_point

__all__ = [
    "REST_NOTE",
    "RETAINED_NOTE",
    "TEXT_SHOWN",
    "ParticleView",
    "awrs_tip",
    "count_text",
    "death_reasons",
    "draws_html",
    "ess_axis",
    "factor_header",
    "final_status",
    "genealogy_svg",
    "particle_data",
    "particles_html",
    "record_data",
    "record_html",
    "rest_line",
    "text_cell",
]


class ParticleView(LiveView):
    """Live view of an SMC run: pass it as an observer, or build it from a record.

    Live: `await smc_standard(model, n, observers=[view])`; one row per
    particle (text, normalised weight as bar and number, finished/dead), ESS
    and log_ml over steps, resampling events, the run's alarms; at the end,
    the genealogy. For a `control.SMC` run each row also splits its
    log-weight by factor, with a "rest" column for what the factors leave out
    (the proposal's correction, the start weight, resampling), and a killed
    particle says by what and why (e.g. "cut at max_tokens inside a string at
    $.name"). A finished run that ended on a resampling shows the particles
    the result holds. Each resampling lists its draws (the scheme, how many
    copies each particle got, which it dropped) as it happens; in a
    conditional SMC run (`csmc_standard`, `ParticleGibbs`) the retained
    particle is marked in its row and in the genealogy; a tempered factor's
    column names its temperature.
    Updates are throttled (at most one push per `throttle_s` seconds), the
    final state is always sent. A view may follow several runs in turn (each
    new run starts afresh), but not two at once.
    """

    _esm = esm("particles.js")

    def __init__(self) -> None:
        super().__init__()
        self._raw: list[dict] = []
        self._tally = FactorTally()
        self._reasons: dict[tuple[int, int], str] = {}
        self._alarms: list = []
        self._draws: list[dict] = []
        self._retained: int | None = None
        self._points: list[tuple] = []
        self._entries: list[dict] = []
        self._run_id: str | None = None
        self._done = False
        self._send_now(particle_data([]))

    @classmethod
    def from_record(cls, record: Any) -> ParticleView:
        """A finished view of a saved `SMCRecord` (object, dict, JSON or path)."""
        view = cls()
        rec = as_record(record)
        data = record_data(rec)
        view._run_id, view._entries, view._done = data["run_id"], step_entries(rec)[1], True
        view._send_now(data)
        return view

    @property
    def run_id(self) -> str | None:
        """The run this view shows (None before the first step)."""
        return self._run_id

    # -- observer protocol --------------------------------------------------------
    def on_step(self, entry: dict) -> None:
        """Keep one step entry (cheap); the view data is built only when pushed.

        Raises:
            ValueError: if the entry is malformed, or belongs to another run while one
                is going on; the view is then left as it was.
        """
        point = summary_point(entry)  # checked before the view changes: a bad entry leaves it
        try:
            draw = resampling_draw(entry)
        except (TypeError, ValueError) as err:
            raise ValueError(f"step entry {entry.get('step')!r}: bad ancestors ({err})") from None
        run_id = entry.get("run_id")
        if self._done or self._run_id is None:
            self._raw, self._points, self._entries, self._done = [], [], [], False
            self._tally = FactorTally()
            self._reasons, self._alarms, self._draws, self._retained = {}, [], [], None
            self._run_id = run_id
        elif run_id != self._run_id:
            raise ValueError(
                f"step entry of run {run_id!r} reached a view following run {self._run_id!r}; "
                "use one ParticleView per concurrent run"
            )
        self._tally.add(entry)  # O(particles x factors): weights split by factor
        self._reasons.update(death_reasons([entry]))
        self._alarms.extend(entry.get("alarms") or [])
        if draw is not None:
            self._draws.append(draw)
        if entry.get("retained") is not None:
            self._retained = int(entry["retained"])
        self._raw.append(entry)
        self._points.append(point)
        self.push(self._build_live)

    def on_finish(self, record: Any) -> None:
        """Show the whole record (genealogy included) and push it at once.

        Raises:
            ValueError: if the record is of a different run than the steps seen.
        """
        rec = as_record(record)
        run_id, entries = step_entries(rec, run_id=self._run_id)
        self._run_id, self._entries, self._raw, self._done = run_id, entries, [], True
        self.push(lambda: record_data(rec), final=True)

    def _build_live(self) -> dict:
        # Only the newest entry's texts are read: the cost of a push does not grow with steps.
        last = normalize_entry(self._raw[-1], f"step entry {len(self._raw) - 1}")
        steps, ess, log_ml, resampled = zip(*self._points, strict=True)
        summary = {
            "n_particles": len(last["particles"]),
            "steps": list(steps),
            "ess": list(ess),
            "log_ml": list(log_ml),
            "resampled": [t for t, r in zip(steps, resampled, strict=True) if r],
        }
        return particle_data(
            [last],
            run_id=self._run_id,
            summary=summary,
            factors=self._tally.view(),
            reasons=self._reasons,
            alarms=self._alarms,
            resampling_method=next((d["method"] for d in reversed(self._draws)), None),
            resamplings=list(self._draws),
            retained=self._retained,
        )

    @staticmethod
    def to_html(data: dict) -> str:
        return particles_html(data)
