"""genlm-control main's tests of the features issue 55 ports, run against genlm_lab.

scripts/conformance.py measures the PyPI sdists (genlm-control 0.4.1). The
features genlm-control's main branch added since (conditional SMC, the KL
metrics, the resampling registry, the Python syntax potential, the byte-level
ensemble, the Harmony chat potentials) have tests only on main. Their files
are not committed here (genlm-control's code stays out of this repository):
save the versions `MAIN_FEATURE_TESTS` names under
.cache/conformance/main-features/tests/ (with main's tests/conftest.py and a
pytest.ini like the sdist runs'), then run
`python scripts/conformance.py --main-features`. The files run unchanged
through `genlm_lab.compat`, except the one variant `MAIN_FEATURE_TESTS` says
is one. There is no original to compare with on this machine (the installed
genlm-control is 0.4.1), so CONFORMANCE.md gets genlm_lab's counts alone.
"""

from __future__ import annotations

import fnmatch
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "scripts"
WHERE = ROOT / ".cache" / "conformance" / "main-features"
OUT = ROOT / ".cache" / "conformance" / "results" / "genlm-control-main-ours.json"

#: test file -> the version of genlm/genlm-control main it is (read from the code index).
MAIN_FEATURE_TESTS: dict[str, str] = {
    "tests/sampler/test_csmc.py": "commit 5a6466c",
    "tests/sampler/test_csmc_memory.py": "commit c04e57a (csmc's earlier module name)",
    "tests/sampler/test_resampling.py": "commit 56e5005",
    "tests/evaluation/test_metrics.py": "commit d61f508",
    "tests/potential/test_python_parser.py": "commit 604caee",
    "tests/potential/test_python_parser_public.py": (
        "our variant of test_python_parser.py: the same file without its import of "
        "two private names (_PythonLexer, _build_grammar), so that its public tests collect"
    ),
    "tests/potential/test_ensemble.py": "the code index's 36,013-character version (ByteEnsemble)",
    "tests/potential/test_ensemble_public.py": (
        "our variant of test_ensemble.py without its import of the private "
        "_weighted_extremum, so that its other tests collect"
    ),
    "tests/potential/test_harmony.py": "commit 533a36e (the stored git snapshot)",
    "tests/conftest.py": "commit 533a36e (the stored git snapshot)",
}

#: node-id pattern -> why genlm_lab fails it (printed beside the failing tests).
WHY: dict[str, str] = {
    "tests/potential/test_python_parser.py": (
        "imports genlm-control's private lexer (_PythonLexer, _build_grammar); genlm_lab's "
        "PythonParser asks CPython's own parser"
    ),
    "tests/potential/test_python_parser_public.py::test_lexer_*": "genlm-control's private lexer",
    "tests/potential/test_python_parser_public.py::test_memoization_*": (
        "genlm-control's private lexer"
    ),
    "tests/potential/test_python_parser_public.py::test_grammar_build_*": (
        "genlm-control's private grammar build"
    ),
    "tests/potential/test_harmony.py": "needs the gpt-oss-20b model, not on this machine",
    "tests/potential/test_ensemble.py": "imports genlm-control's private _weighted_extremum",
    "tests/potential/test_ensemble_public.py::test_weighted_extremum_*": (
        "genlm-control's private _weighted_extremum"
    ),
    "tests/potential/test_ensemble_public.py::test_ensemble_logw*_next*": (
        "genlm_lab's Ensemble is a whole potential: logw_next gives the ensemble's weights "
        "(main's raises NotImplementedError) and there is no logws_next"
    ),
    "tests/potential/test_ensemble_public.py::test_ensemble_warns_on_different_vocabularies": (
        "different vocabularies are one ValueError naming a token of each (main warns, then fails)"
    ),
    "tests/potential/test_ensemble_public.py::test_convert_to_weighted_logop_invalid_a": (
        "the error says what a must be in genlm_lab's words"
    ),
    "tests/potential/test_ensemble_public.py::test_ensemble_smc_weight_extraction": (
        "EnsembleSMC takes a TokenSampler, and the test's mock is not one"
    ),
    "tests/potential/test_ensemble_public.py::test_byte_ensemble_cleanup_cache*": (
        "main's private _cleanup_cache and assignable beam caches"
    ),
    "tests/potential/test_ensemble_public.py::test_byte_ensemble_empty_beam_error_covered": (
        "prune_threshold=100.0 is refused by name (it must be in [0, 1))"
    ),
    "tests/potential/test_ensemble_public.py::test_byte_ensemble_empty_beam_error": (
        "patches ByteBeamState inside genlm-control's ensemble module"
    ),
    "tests/evaluation/test_metrics.py::*test_mock_potentials": (
        "the KL metrics take Potentials (an AsyncMock is refused by name)"
    ),
    "tests/evaluation/test_metrics.py::*test_empty_sequences_error": (
        "the error says no sequence has positive weight, in genlm_lab's words"
    ),
}


def run(timeout: int) -> dict:
    """Run the saved files with pytest through compat; the plugin's outcomes as a dict."""
    tests = WHERE / "tests"
    if not tests.is_dir():
        raise SystemExit(
            f"no {tests.relative_to(ROOT)}: save genlm-control main's test files there first "
            "(scripts/conformance_main.py lists them)"
        )
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.unlink(missing_ok=True)
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(ROOT), str(SCRIPTS), str(WHERE)]),
        GENLM_CONFORMANCE_MODE="ours",
        GENLM_CONFORMANCE_SUITE="genlm-control-main",
        GENLM_CONFORMANCE_OUT=str(OUT),
        GENLM_CONFORMANCE_TIMEOUT=str(timeout),
        HF_HUB_OFFLINE="1",
        OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"),
        GENLM_CONFORMANCE_COUNTED="",
    )
    files = [p for p in MAIN_FEATURE_TESTS if p != "tests/conftest.py" and (WHERE / p).exists()]
    cmd = [sys.executable, "-m", "pytest", *files, "-p", "conformance_plugin", "-q"]
    cmd += ["-p", "no:cacheprovider", "--tb=short", "-rN", "--continue-on-collection-errors"]
    print("conformance: genlm-control main's feature tests (ours) ...", flush=True)
    with OUT.with_suffix(".log").open("w") as fh:
        subprocess.run(cmd, cwd=WHERE, env=env, stdout=fh, stderr=subprocess.STDOUT)
    if not OUT.exists():
        raise RuntimeError(f"pytest wrote no results; see {OUT.with_suffix('.log')}")
    return json.loads(OUT.read_text())


def _shown(node: str) -> str:
    """A node id on one line (parametrised ids may hold newlines)."""
    return node.replace("\n", "\\n")


def _why(node: str) -> str:
    return next((r for p, r in WHY.items() if fnmatch.fnmatchcase(node, p + "*")), "")


def report_lines() -> list[str]:
    """CONFORMANCE.md's section for these tests (empty if they were never run here)."""
    if not OUT.exists():
        return []
    result = json.loads(OUT.read_text())
    outcomes: dict[str, str] = result["outcomes"]
    errors: dict[str, str] = result.get("collection_errors", {})
    total = Counter(outcomes.values())
    lines = [
        "## genlm-control main (features of issue 55)",
        "",
        "genlm-control main's tests of the features issue 55 ports, run through",
        "`genlm_lab.compat` like the suites above; not committed and not part of `make test`.",
        "Reproduce: save the files below under `.cache/conformance/main-features/tests/`",
        "(see scripts/conformance_main.py), then `python scripts/conformance.py --main-features`.",
        "No original was measured (the installed genlm-control is 0.4.1).",
        "",
        "| suite | genlm_lab: passed / failed / skipped | files that did not collect | time (s) |",
        "|---|---|---|---|",
        f"| genlm-control main (features of issue 55) | {total['passed']} / {total['failed']} "
        f"/ {total['skipped']} | {len(errors)} | {result['seconds']:.0f} |",
        "",
        "| file | version | passed / failed / skipped |",
        "|---|---|---|",
    ]
    for path, version in MAIN_FEATURE_TESTS.items():
        if path == "tests/conftest.py":
            continue
        mine = Counter(o for n, o in outcomes.items() if n.startswith(f"{path}::"))
        state = (
            "did not collect"
            if path in errors
            else f"{mine['passed']} / {mine['failed']} / {mine['skipped']}"
        )
        lines.append(f"| `{path}` | {version} | {state} |")
    lines += ["", "Failing here, and why:", ""]
    by_reason: dict[str, list[str]] = {}
    for n in sorted(n for n, o in outcomes.items() if o == "failed"):
        by_reason.setdefault(_why(n), []).append(n)
    for why, nodes in by_reason.items():
        names = ", ".join(f"`{_shown(n)}`" for n in nodes[:3]) + (", ..." * (len(nodes) > 3))
        lines.append(f"- {len(nodes)} test{'s' if len(nodes) > 1 else ''} ({names})")
        lines[-1] += f": {why}" if why else ": not yet explained"
    lines += [f"- `{p}` did not collect: {_why(p) or m}" for p, m in errors.items()]
    return [*lines, ""]
