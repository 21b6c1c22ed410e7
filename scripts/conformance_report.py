"""CONFORMANCE.md: written from the latest `ours` result of every suite and the baseline.

genlm-control main's feature tests add their own section
(scripts/conformance_main.py, imported on use).
"""

from __future__ import annotations

import fnmatch
import os
import sys
import tomllib

import conformance_config as config
from conformance_score import cached_result, counts, score


def main_features():
    """scripts/conformance_main.py: genlm-control main's feature tests (imported on use)."""
    if str(config.SCRIPTS) not in sys.path:
        sys.path.insert(0, str(config.SCRIPTS))
    import conformance_main

    return conformance_main


def write_report(baseline: dict) -> None:
    """CONFORMANCE.md from the latest `ours` result of every suite."""
    rules = tomllib.loads(config.EXCLUSIONS.read_text())
    load = os.getloadavg()
    lines = [
        "# Conformance: the GenLM packages' own tests, run against genlm_lab",
        "",
        "Written by `make conformance` (scripts/conformance.py). Each suite is the `tests/`",
        "folder of the PyPI sdist, run unchanged with pytest while `genlm_lab.compat` makes",
        "`genlm.backend`, `genlm.bytes`, `genlm.control` and `llamppl` resolve to genlm_lab.",
        "Hub model names (`gpt2`, ...) load the embedded SmolLM2-135M-Instruct in both runs.",
        "*Original* is the same tests against the PyPI packages on this machine",
        "(`python scripts/conformance.py --original`, needs `scripts/setup.sh bench`), with",
        "the suites' test dependencies installed (scripts/setup.sh: hypothesis-jsonschema,",
        "nltk with its CMU dictionary): every test file collects there, and a file that does",
        "not fails the measurement instead of leaving the denominator.",
        "*Score* = tests passing on genlm_lab / tests passing on the original, less exclusions",
        "(*excluded*: of the tests that pass on the original). The next column counts the",
        "excluded ones as failures.",
        "",
        "| suite | original: passed / failed / skipped | genlm_lab: passed / failed / skipped "
        "/ excluded* | score | of all passing on the original | target | time (s) |",
        "|---|---|---|---|---|---|---|",
    ]
    gaps = []
    for suite, (_, version, target, _) in config.SUITES.items():
        ours = cached_result(suite)
        if suite not in baseline or ours is None:
            lines.append(f"| {suite} {version} | not measured | not run | | | {target:.0%} | |")
            continue
        b, c = baseline[suite]["counts"], counts(ours)
        ok, counted, missing = score(suite, ours, baseline)
        pct = ok / counted if counted else 1.0
        every = b["passed"]
        broken = b.get("collection_errors", 0)
        flag = f" ({broken} test files did not collect: incomplete)" if broken else ""
        lines.append(
            f"| {suite} {version} | {b['passed']} / {b['failed']} / {b['skipped']}{flag} "
            f"| {c['passed']} / {c['failed']} / {c['skipped']} / {every - counted} "
            f"| {ok}/{counted} = {pct:.0%} | {ok}/{every} = {ok / max(every, 1):.0%} "
            f"| {target:.0%} | {ours['seconds']:.0f} |"
        )
        gaps.append((suite, missing, ours.get("collection_errors", {})))
    lines += [
        "",
        f"Load average while writing: {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} "
        "(the machine is shared; times are wall-clock).",
        "",
        "Reproduce: `make conformance` (all suites, this page); `python scripts/conformance.py",
        "--suite genlm-bytes` (one); `scripts/setup.sh bench && python scripts/conformance.py",
        "--original` re-measures the baseline (scripts/conformance_baseline.json). `make test`",
        "runs the suites marked fast in scripts/conformance.py ("
        + ", ".join(s for s, v in config.SUITES.items() if v[3])
        + ") with",
        "`--check`, which fails below each suite's recorded floor.",
        "",
        "## Exclusions (scripts/conformance_exclusions.toml)",
        "",
        "Left out of the genlm_lab run only; a test excluded here still counts in *original*.",
        "",
    ]
    for suite in config.SUITES:
        entries = rules.get(suite, {}).get("exclude", [])
        if entries:
            lines.append(f"**{suite}**")
            lines.append("")
            lines += [f"- `{e['test']}`: {e['reason']}" for e in entries]
            lines.append("")
    lines += main_features().report_lines()
    lines += [
        "## Passing on the original, failing on genlm_lab",
        "",
        "A reason beside a test is where genlm_lab differs on purpose (the `differs` lists",
        "of scripts/conformance_exclusions.toml); those tests still run and count.",
        "",
    ]
    for suite, missing, errors in gaps:
        differs = [(e["test"], e["reason"]) for e in rules.get(suite, {}).get("differs", [])]
        lines.append(f"**{suite}** ({len(missing)})")
        lines.append("")
        for n in missing:
            why = next((r for p, r in differs if fnmatch.fnmatchcase(n, p)), None)
            lines.append(f"- `{n}`" + (f": {why}" if why else ""))
        if not missing:
            lines.append("- none")
        lines += [f"- collection error in `{f}`: {m}" for f, m in errors.items()]
        lines.append("")
    config.REPORT.write_text("\n".join(lines))
