"""Scoring a suite's run against the baseline, and storing that baseline.

The baseline (scripts/conformance_baseline.json) holds what passes against the
original packages; a suite's score is the share of those tests, less the
exclusions of scripts/conformance_exclusions.toml, that pass on genlm_lab.
"""

from __future__ import annotations

import datetime
import fnmatch
import json
import tomllib

import conformance_config as config


def counts(result: dict) -> dict[str, int]:
    c = {"passed": 0, "failed": 0, "skipped": 0, "xfailed": 0}
    for outcome in result["outcomes"].values():
        c[outcome] += 1
    c["excluded"] = len(result.get("excluded", {}))
    c["collection_errors"] = len(result.get("collection_errors", {}))
    if result.get("not_counted"):
        c["not_run_not_counted"] = result["not_counted"]
    return c


def score(suite: str, ours: dict, baseline: dict) -> tuple[int, int, list[str]]:
    """(passing on genlm_lab, baseline-passing minus excluded, baseline-passing tests we fail)."""
    base = set(baseline[suite]["passed"])
    # the rules as they stand now, also for results run before a rule was added
    rules = [p for p, _ in exclusion_rules(suite)]
    excluded = set(ours.get("excluded", {}))
    excluded |= {n for n in base if any(fnmatch.fnmatchcase(n, p) for p in rules)}
    counted = base - excluded
    ok = {n for n, o in ours["outcomes"].items() if o == "passed"} & counted
    return len(ok), len(counted), sorted(counted - ok)


def exclusion_rules(suite: str) -> list[tuple[str, str]]:
    """(node-id pattern, reason) pairs of `suite` in the exclusions file."""
    if not config.EXCLUSIONS.exists():
        return []
    data = tomllib.loads(config.EXCLUSIONS.read_text())
    return [(e["test"], e["reason"]) for e in data.get(suite, {}).get("exclude", [])]


def load_baseline() -> dict:
    return json.loads(config.BASELINE.read_text()) if config.BASELINE.exists() else {}


def record_baseline(results: dict[str, dict]) -> None:
    """Store the original's passes; a suite whose run had collection errors is not stored."""
    data = load_baseline()
    for suite, result in results.items():
        if result.get("collection_errors"):
            continue
        data[suite] = {
            "version": config.SUITES[suite][1],
            "measured": datetime.date.today().isoformat(),
            "counts": counts(result),
            "seconds": result["seconds"],
            "passed": sorted(n for n, o in result["outcomes"].items() if o == "passed"),
        }
    config.BASELINE.write_text(json.dumps(data, indent=1) + "\n")


def add_to_baseline(suite: str, only: list[str], result: dict) -> None:
    """Add the original's outcomes of test files that failed to collect in the stored baseline.

    Those files contributed no test to it, so their counts add up. A file with
    a stored pass was measured already: re-measure the whole suite instead.
    """
    data = load_baseline()
    entry = data[suite]
    measured = [p for p in only if any(n.startswith(f"{p}::") for n in entry["passed"])]
    if measured:
        raise SystemExit(f"{suite}: {measured} already measured; re-run --original on the suite")
    stored = entry["counts"].get("collection_errors", 0)
    if stored < len(only):
        raise SystemExit(f"{suite}: the baseline has {stored} collection errors, not {len(only)}")
    new = counts(result)
    for key in ("passed", "failed", "skipped", "xfailed"):
        entry["counts"][key] = entry["counts"].get(key, 0) + new[key]
    entry["counts"]["collection_errors"] = stored - len(only)
    entry["passed"] = sorted(
        set(entry["passed"]) | {n for n, o in result["outcomes"].items() if o == "passed"}
    )
    entry.setdefault("added", []).append(
        {"files": only, "measured": datetime.date.today().isoformat(), "counts": new}
    )
    config.BASELINE.write_text(json.dumps(data, indent=1) + "\n")


def cached_result(suite: str) -> dict | None:
    path = config.CACHE / "results" / f"{suite}-ours.json"
    return json.loads(path.read_text()) if path.exists() else None
