"""scripts/conformance.py: how a suite's score is counted, and the exclusions file."""

import importlib.util
import tomllib
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"
_spec = importlib.util.spec_from_file_location("conformance", SCRIPTS / "conformance.py")
conformance = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(conformance)


def test_score_counts_only_tests_passing_on_the_original_less_exclusions():
    baseline = {"s": {"passed": ["a", "b", "c", "d"]}}
    ours = {
        "outcomes": {"a": "passed", "b": "failed", "e": "passed", "d": "skipped"},
        "excluded": {"c": "private internal"},
    }
    ok, counted, missing = conformance.score("s", ours, baseline)
    # e passes only here (not in the baseline): it does not count; c is excluded
    assert (ok, counted, missing) == (1, 3, ["b", "d"])
    assert conformance.counts(ours)["excluded"] == 1


def test_every_exclusion_names_a_suite_a_pattern_and_a_reason():
    data = tomllib.loads((SCRIPTS / "conformance_exclusions.toml").read_text())
    assert set(data) <= set(conformance.SUITES)
    for suite, table in data.items():
        for entry in table.get("exclude", []):
            assert entry["test"].startswith("tests/"), (suite, entry)
            assert len(entry["reason"]) > 10, (suite, entry)
