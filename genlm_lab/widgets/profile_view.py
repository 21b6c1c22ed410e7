"""`ProfileView`: where an SMC run's (or a byte beam's) wall time went, step by step.

One stacked bar per step (a colour per component: LM forwards, each
potential's methods, the sampler, resampling, observers, ...) and a table of
the whole run (calls, seconds, share). The data is a profiled record's
`profile` rows (`SMCRecord.profile_rows`, see `genlm_lab.smc.profile`):
from a saved record, or live, from the rows each step entry of a profiled
run carries ("profile"), replaced at the end by the record's complete rows.
A profiled byte beam's rows (`ByteBeamState.profile`) draw the same way
(`ProfileView.from_rows`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from genlm_lab.widgets.base import LiveView, esm
from genlm_lab.widgets.render import CATEGORY_COLOURS, bar, esc, fmt, table, wrap
from genlm_lab.widgets.smc_data import as_record

__all__ = ["ProfileView", "profile_data", "profile_html"]

#: Components drawn in their own colour; the rest share "the rest".
MAX_COLOURED = 9
#: Counters: rows whose seconds are always 0 (shown in the table, not in the bars).
COUNTERS = ("lm.batch_rows", "lm.cache_hits", "lm.calls")


def _rows_of(profile: Any) -> list[list[Any]]:
    """`[step, component, calls, seconds]` rows from rows, a DataFrame or a record."""
    if profile is None:
        return []
    if hasattr(profile, "profile_rows"):
        return [list(r) for r in profile.profile_rows or []]
    if hasattr(profile, "itertuples"):
        return [[r.step, r.component, r.calls, r.seconds] for r in profile.itertuples()]
    return [list(r) for r in profile]


def profile_data(profile: Any, *, done: bool = True, run_id: str | None = None) -> dict:
    """View data of a run's profile: per-step stacks, a whole-run table, totals.

    Args:
        profile: `SMCRecord.profile_rows`, the `record.profile` DataFrame or a record.
        done: whether the run has ended.
        run_id: the run the rows belong to.

    Returns:
        {"kind", "run_id", "done", "steps": [int], "components": [names, largest
        first; beyond `MAX_COLOURED` the rest are merged into "the rest"],
        "stacks": [[seconds per component] per step], "table": [{component,
        calls, seconds, share}], "total": seconds, "counters": {name: count}}.
    """
    rows = _rows_of(profile)
    seconds: dict[str, float] = {}
    calls: dict[str, int] = {}
    by_step: dict[int, dict[str, float]] = {}
    for step, component, n, s in rows:
        component, s = str(component), float(s)
        calls[component] = calls.get(component, 0) + int(n)
        if component in COUNTERS:
            continue
        seconds[component] = seconds.get(component, 0.0) + s
        cell = by_step.setdefault(int(step), {})
        cell[component] = cell.get(component, 0.0) + s
    total = sum(seconds.values())
    order = sorted(seconds, key=lambda c: -seconds[c])
    coloured = order if len(order) <= MAX_COLOURED else order[: MAX_COLOURED - 1]
    rest = [c for c in order if c not in coloured]
    components = coloured + (["the rest"] if rest else [])
    steps = sorted(by_step)
    stacks = []
    for step in steps:
        cell = by_step[step]
        stack = [cell.get(c, 0.0) for c in coloured]
        if rest:
            stack.append(sum(cell.get(c, 0.0) for c in rest))
        stacks.append(stack)
    return {
        "kind": "profile",
        "run_id": run_id,
        "done": done,
        "steps": steps,
        "components": components,
        "stacks": stacks,
        "table": [
            {
                "component": c,
                "calls": calls.get(c, 0),
                "seconds": seconds[c],
                "share": seconds[c] / total if total > 0 else 0.0,
            }
            for c in order
        ],
        "total": total,
        "counters": {c: calls[c] for c in COUNTERS if c in calls},
    }


def _colour(i: int) -> str:
    return CATEGORY_COLOURS[i % len(CATEGORY_COLOURS)]


def bars_svg(data: dict, height: int = 140) -> str:
    """Static SVG: one stacked bar per step, heights in seconds, a tooltip per segment."""
    stacks = data["stacks"]
    if not stacks:
        return ""
    top = max(sum(s) for s in stacks) or 1.0
    n = len(stacks)
    dx = max(3, min(24, 560 // max(1, n)))
    left, width = 40, 40 + dx * n + 10
    out = [
        f"<svg width='{width}' height='{height + 30}' class='genlm-profile-bars' role='img' "
        "aria-label='seconds per step, stacked by component' xmlns='http://www.w3.org/2000/svg'>",
        f"<text x='0' y='10' font-size='10'>{esc(fmt(top, 3))} s</text>",
        f"<text x='0' y='{height + 24}' font-size='10'>step →</text>",
    ]
    for t, (step, stack) in enumerate(zip(data["steps"], stacks, strict=True)):
        y = height + 10
        for i, (name, s) in enumerate(zip(data["components"], stack, strict=True)):
            h = height * s / top
            if h <= 0:
                continue
            y -= h
            out.append(
                f"<rect x='{left + t * dx}' y='{y:.2f}' width='{dx - 1}' height='{h:.2f}' "
                f"fill='{_colour(i)}' data-step='{step}' data-component='{esc(name)}'>"
                f"<title>step {step}: {esc(name)} {esc(fmt(s, 4))} s</title></rect>"
            )
    out.append("</svg>")
    return "".join(out)


def _legend(components: Sequence[str]) -> str:
    return (
        "<div class='genlm-profile-legend'>"
        + "".join(
            f"<span><svg width='10' height='10'><rect width='10' height='10' fill='{_colour(i)}'/>"
            f"</svg> {esc(c)}</span> "
            for i, c in enumerate(components)
        )
        + "</div>"
    )


def profile_html(data: dict) -> str:
    """Static HTML of `profile_data`: a title, the stacked bars, a legend and the table."""
    if not data["table"]:
        body = "<div class='genlm-note'>no profile: run with profile=True</div>"
        return wrap(body, "profile")
    counters = ", ".join(f"{esc(k)} {v}" for k, v in data["counters"].items())
    head = (
        f"Profile{'' if data['done'] else ' (running)'}: {fmt(data['total'], 3)} s over "
        f"{len(data['steps'])} steps" + (f"; {counters}" if counters else "")
    )
    rows = [
        f"<tr data-component='{esc(r['component'])}'><td>{esc(r['component'])}</td>"
        f"<td class='genlm-num'>{r['calls']}</td>"
        f"<td class='genlm-num'>{esc(fmt(r['seconds'], 4))}</td>"
        f"<td>{bar(r['share'])}<span class='genlm-num'>{r['share']:.1%}</span></td></tr>"
        for r in data["table"]
    ]
    body = (
        f"<div class='genlm-title genlm-status'>{esc(head)}</div>"
        + bars_svg(data)
        + _legend(data["components"])
        + table(["component", "calls", "seconds", "share"], rows)
    )
    return wrap(body, "profile")


class ProfileView(LiveView):
    """Where a profiled SMC run's time goes: pass it as an observer, or build it from a record.

    Live: `await smc(..., profile=True, observers=[view])` (or `smc_standard`);
    every step adds its bar, and the end brings the complete profile.
    """

    _esm = esm("profile.js")

    def __init__(self) -> None:
        super().__init__()
        self._rows: list[list[Any]] = []
        self._run_id: str | None = None
        self._send_now(profile_data([], done=False))

    @classmethod
    def from_rows(cls, profile: Any) -> ProfileView:
        """A finished view of profile rows, a profile DataFrame or a profiled beam."""
        view = cls()
        view._send_now(profile_data(profile))
        return view

    @classmethod
    def from_record(cls, record: Any) -> ProfileView:
        """A finished view of a saved record (object, dict, JSON or path)."""
        view = cls()
        rec = as_record(record)
        view._run_id = rec.run_id
        view._send_now(profile_data(rec.profile_rows, run_id=rec.run_id))
        return view

    def on_step(self, entry: dict) -> None:
        """Add the step's profile rows (a new run starts the view afresh)."""
        if entry.get("run_id") != self._run_id:
            self._rows, self._run_id = [], entry.get("run_id")
        self._rows.extend(entry.get("profile") or [])
        rows, run_id = list(self._rows), self._run_id
        self.push(lambda: profile_data(rows, done=False, run_id=run_id))

    def on_finish(self, record: Any) -> None:
        """Show the record's complete profile."""
        rec = as_record(record)
        self._run_id = rec.run_id
        self.push(lambda: profile_data(rec.profile_rows, run_id=rec.run_id), final=True)

    @staticmethod
    def to_html(data: dict) -> str:
        return profile_html(data)
