"""bench_json_gen's RESULTS.md section: the summary table, the notes, one row per schema.

Every method's cell is the same dict (solved, valid_mass, cut, tokens, wall,
per_step; `error` where it measured nothing). A column may cover only some
schemas (the foreign ones run on the panel's first N, or come from an
earlier run's `--json` rows through `--merge`): its counts say out of how many.
"""

from __future__ import annotations

import math
import statistics
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
LABELS = {
    "gc": "genlm-control 0.4.1",
    "gc-ws": "genlm-control 0.4.1, leading whitespace fixed",
    "xgr": "xgrammar 0.2.8's mask",
    "outlines": "outlines 1.3.3's mask",
}
NATIVE = {  # the foreign masks: what the adapter's step does, what the tool's own step is
    "xgr": ("fork, `accept_token`, `fill_next_token_bitmask`, unpack onto our vocabulary",
            "xgrammar's own (`accept_token` + `fill_next_token_bitmask` on one matcher)"),
    "outlines": ("next state, `get_allowed_tokens` onto our vocabulary, cached per state",
                 "outlines' own, as its logits processor steps (`Guide.advance` + "
                 "`fill_next_token_bitmask`)"),
}  # fmt: skip
OURS = ("default", "off", "greedy", "direct")  # methods that use our JsonSchema's mask


def mask_of(row: dict, method: str) -> float:
    """Seconds per step of the mask `method` applies (nan where not measured)."""
    if method in OURS:
        return row.get("mask_ours", math.nan)
    if method == "llg":
        return row.get("mask_bare", math.nan)
    return row.get(method, {}).get("mask", math.nan)


def _median(values: list[float]) -> float:
    values = [v for v in values if not math.isnan(v)]
    return statistics.median(values) if values else math.nan


def _mean(values: list[float]) -> float:
    values = [v for v in values if not math.isnan(v)]
    return statistics.mean(values) if values else math.nan


def line(row: dict, methods: list[str]) -> str:
    """One schema's progress line."""
    cells = []
    for m in methods:
        r = row.get(m)
        if r is None:
            continue
        if "error" in r:
            cells.append(f"{m}: {r['error'][:60]} {r['wall']:.0f}s")
            continue
        cells.append(f"{m}: {'solved' if r['solved'] else '-'} mass {r['valid_mass']:.2f} "
                     f"cut {r['cut']} {r['tokens']:.0f} tok {r['wall']:.1f}s "
                     f"{r['per_step'] * 1e3:.0f}ms/step mask {mask_of(row, m) * 1e3:.2f}ms")  # fmt: skip
    return f"{row['id']} (budget {row['budget']}): " + " | ".join(cells)


def summary_rows(rows: list[dict], methods: list[str]) -> list[str]:
    """The summary table: per method, over the schemas it ran on."""
    out = [
        "| method | schemas | solved | valid mass on solved (mean / min) | schemas with a "
        "particle cut at max_tokens | failed to run | mean tokens | mean wall (s) | wall / "
        "particle-step (ms, median) | mask / step (ms, median) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for m in methods:
        ran = [r for r in rows if m in r]
        if not ran:
            continue
        cells = [r[m] for r in ran]
        solved = [c for c in cells if c.get("solved")]
        masses = [c["valid_mass"] for c in solved]
        failed = sum("error" in c for c in cells)
        label = LABELS.get(m, m)
        cap = cells[0].get("cap")
        label += f" (capped at {cap:.0f} s)" if cap else ""
        out.append(
            f"| {label} | {len(ran)} | {len(solved)}/{len(ran)} | "
            f"{_mean(masses):.3f} / {min(masses, default=math.nan):.3f} | "
            f"{sum(c.get('cut', 0) > 0 for c in cells)} | {failed} | "
            f"{_mean([c.get('tokens', math.nan) for c in cells]):.0f} | "
            f"{_mean([c['wall'] for c in cells]):.1f} | "
            f"{_median([c.get('per_step', math.nan) for c in cells]) * 1e3:.0f} | "
            f"{_median([mask_of(r, m) for r in ran]) * 1e3:.3f} |"
        )
    return out


def notes(rows: list[dict], methods: list[str]) -> list[str]:
    """What the greedy and budget columns refused, and the foreign columns' failures."""
    head: list[str] = []
    if "greedy" in methods:
        stats = [r["greedy"].get("budget_stats", {}) for r in rows if "greedy" in r]
        total = {k: sum(x.get(k, 0) for x in stats) for k in ("checked", "reused", "refused",
                                                              "unknown")}  # fmt: skip
        head += [
            "",
            "`greedy` is `WithinBudget(JsonSchema(schema), llm, budget, greedy=True)`: the same "
            "mask, and a token is refused once the schema's greedy `finish`, in tokens, plus EOS "
            "no longer fits. The run keeps only documents within `max_tokens` either way; what "
            "it may set aside is a prefix that only a completion shorter than the greedy finish "
            f"could have ended in time. Over the panel: {total['checked']} finishes walked, "
            f"{total['reused']} taken over from the parent, {total['refused']} tokens refused, "
            f"{total['unknown']} prefixes with no finish found (nothing refused there).",
        ]
    for m in ("default", "direct"):
        if m in methods:
            stats = [r[m].get("budget_stats", {}) for r in rows if m in r]
            total = {k: sum(x.get(k, 0) for x in stats) for k in ("kept", "refused", "unproven")}
            head += [
                "",
                f"`{m}`'s budget (sound: refused only where no completion fits): "
                f"{total['refused']} tokens refused, {total['kept']} proven to fit, "
                f"{total['unproven']} kept unproven (too far from the end, or too many tokens "
                "allowed, for the search to decide).",
            ]
    for m in methods:
        errors = [f"{r['id']}: {r[m]['error']}" for r in rows if "error" in r.get(m, {})]
        if errors:
            head += ["", f"`{m}` measured nothing on {len(errors)} schemas: " + "; ".join(errors)]
    for m in ("gc", "gc-ws"):
        died = [t for r in rows for t in r.get(m, {}).get("died", [])]
        if died:
            starts = {repr(t[:2]) for t in died}
            head += ["", f"`{m}`: {len(died)} dead particles shown, their texts starting with "
                     f"{', '.join(sorted(starts))} (first: {died[0]!r})."]  # fmt: skip
    for m, (adapter, own) in NATIVE.items():
        native = [r[m]["mask_native"] for r in rows if "mask_native" in r.get(m, {})]
        built = [r[m]["compile"] for r in rows if "compile" in r.get(m, {})]
        if not native:
            continue
        head += ["", f"`{m}`'s mask per step is the adapter's ({adapter}); {own}: "
                 f"median {statistics.median(native) * 1e3:.3f} ms."]  # fmt: skip
        if built:
            head[-1] += (f" Compiling the schema (in no column's wall): median "
                         f"{statistics.median(built):.2f} s, worst {max(built):.2f} s.")  # fmt: skip
    return head


def render(rows: list[dict], methods: list[str], options: dict, elapsed: float,
           prompt_chars: int, particles: int, seed: int = 0,
           title: str = "bench_json_gen") -> str:  # fmt: skip
    """The RESULTS.md section `title`: a summary table and one row per schema."""
    head = [
        f"## {title} ({time.strftime('%Y-%m-%d %H:%M')}, {elapsed:.0f} s)",
        "",
        f'SmolLM2-135M ("default"), CPU, {particles} particles, seed {seed}, budget 2 x the '
        "shortest valid document's tokens + 40; prompt: the schema (compact, cut at "
        f"{prompt_chars} chars). Our options: {options or 'the defaults'}. Schemas: SchemaStore "
        "files vendored by check-jsonschema (licence per row). Mask: median per step along the "
        "shortest document, a fresh state each schema (ours: our coerced mask; llg: "
        "llguidance's mask of the same grammar alone; xgr, outlines: theirs; genlm-control: its "
        "`logw_next`, every token checked, timed once, halfway).",
        "",
        "Per schema: solved (a finished document valid under jsonschema; 'budget: cut' when "
        "particles were cut at max_tokens), valid mass, mean tokens, wall.",
        "",
        *summary_rows(rows, methods),
        *notes(rows, methods),
    ]
    ratios = [r["mask_ours"] / r["mask_bare"] for r in rows if "mask_ours" in r]
    if ratios:
        head += [
            "",
            f"Mask per step, ours / llguidance alone: median {statistics.median(ratios):.2f}x, "
            f"worst {max(ratios):.2f}x (target <= 4x).",
        ]
    head += [
        "",
        "| schema | licence | budget | " + " | ".join(methods) + " | mask ours / bare |",
        "|---|---|---|" + "---|" * len(methods) + "---|",
    ]
    for r in rows:
        cells = []
        for m in methods:
            x = r.get(m)
            if x is None or "error" in x:
                cells.append("" if x is None else f"failed ({x['error'][:40]})")
                continue
            why = "" if x["solved"] else (" (budget: cut)" if x["cut"] else " (mask/model)")
            mass = f" {x['valid_mass']:.2f}" if x["solved"] else ""
            cells.append(f"{'yes' if x['solved'] else 'no'}{why}{mass} "
                         f"{x['tokens']:.0f}t {x['wall']:.0f}s")  # fmt: skip
        mask = (f"{r['mask_ours'] * 1e3:.2f} / {r['mask_bare'] * 1e3:.2f} ms"
                if "mask_ours" in r else "")  # fmt: skip
        head.append(f"| {r['id']} | {r['licence']} | {r['budget']} | " + " | ".join(cells)
                    + f" | {mask} |")  # fmt: skip
    return "\n".join(head) + "\n"


def write_section(report: str, title: str = "bench_json_gen") -> None:
    """Replace the `title` section of RESULTS.md, leaving the others alone; a new one goes
    after the other bench_json_gen sections (a `--quick` run has its own: it does not
    overwrite the whole panel's)."""
    path = HERE / "RESULTS.md"
    text = path.read_text()
    start = text.find(f"\n## {title} (")
    if start >= 0:
        end = text.find("\n## ", start + 1)
        text = text[: start + 1] + report + ("" if end < 0 else text[end:])
    elif (last := text.rfind("\n## bench_json_gen")) >= 0:
        end = text.find("\n## ", last + 1)
        end = len(text) if end < 0 else end
        text = text[:end].rstrip("\n") + "\n\n" + report + text[end:]
    else:
        text = text.rstrip("\n") + "\n\n" + report
    path.write_text(text)


def merge(rows: list[dict], saved: list[dict], methods: list[str]) -> list[str]:
    """Copy into `rows` the columns of `saved` rows (same schema id) this run did not measure;
    return the methods it added, in their saved order."""
    by_id = {r["id"]: r for r in saved}
    added: list[str] = []
    for row in rows:
        old = by_id.get(row["id"], {})
        for key, value in old.items():
            if isinstance(value, dict) and "solved" in value and key not in methods:
                row.setdefault(key, value)
                if key not in added:
                    added.append(key)
    return added
