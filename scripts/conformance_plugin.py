"""pytest plugin behind scripts/conformance.py: runs a GenLM test suite on genlm_lab or the original.

Loaded with `-p conformance_plugin` (scripts/ on PYTHONPATH), so it is
imported before the suite's own conftest.py. Environment:

* `GENLM_CONFORMANCE_MODE`: `ours` installs `genlm_lab.compat` (GenLM module
  paths resolve to genlm_lab); `original` leaves the real packages in place.
* `GENLM_CONFORMANCE_SUITE`: the suite's name, e.g. `genlm-bytes`, for the
  exclusions of that suite (applied in `ours` mode only).
* `GENLM_CONFORMANCE_OUT`: where to write the JSON of per-test outcomes.
* `GENLM_CONFORMANCE_TIMEOUT`: seconds one test may take (default 180).
* `GENLM_CONFORMANCE_COUNTED`: a file of node ids, one per line; if set, only
  those run (`--fast`: the tests the score counts). The others are reported
  as a number, `not_counted`.

In both modes hub model names (`"gpt2"`, ...) load the embedded SmolLM2: no
hub is reachable here, and the originals are measured on the same model.
"""

from __future__ import annotations

import fnmatch
import gc
import json
import os
import signal
import sys
import time
import tomllib
from pathlib import Path

import pytest

MODE = os.environ.get("GENLM_CONFORMANCE_MODE", "ours")
SUITE = os.environ.get("GENLM_CONFORMANCE_SUITE", "")
OUT = os.environ.get("GENLM_CONFORMANCE_OUT")
TIMEOUT = int(os.environ.get("GENLM_CONFORMANCE_TIMEOUT", "180"))
EXCLUSIONS = Path(__file__).with_name("conformance_exclusions.toml")
COUNTED = os.environ.get("GENLM_CONFORMANCE_COUNTED", "")

#: Hub names the suites load; all served by the embedded SmolLM2-135M-Instruct.
HUB_NAMES = (
    "gpt2",
    "gpt2-medium",
    "openai-community/gpt2",
    "HuggingFaceTB/SmolLM-135M",
)

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("GENLM_LAB_PROGRESS", "0")


def _redirect_hub_names() -> None:
    """`from_pretrained("gpt2")` (tokenizer, config, model) reads the converted SmolLM2 copy."""
    import transformers

    from genlm_lab.backend.models import default_model_status, load_tokenizer

    load_tokenizer("default")  # converts the embedded GGUF once, if not done yet
    local = str(default_model_status()["cache_dir"])
    names = {n.lower() for n in HUB_NAMES}
    for cls in (
        transformers.AutoTokenizer,
        transformers.AutoConfig,
        transformers.AutoModelForCausalLM,
    ):
        original = cls.from_pretrained.__func__

        def from_pretrained(klass, name, *args, _original=original, **kwargs):
            if isinstance(name, str) and name.lower() in names:
                name = local
            return _original(klass, name, *args, **kwargs)

        cls.from_pretrained = classmethod(from_pretrained)


_redirect_hub_names()
if MODE == "ours":
    from genlm_lab import compat

    compat.install(model_aliases={name: "default" for name in HUB_NAMES})


def load_exclusions(suite: str) -> list[tuple[str, str]]:
    """(node-id pattern, reason) pairs excluded from `suite`'s run on genlm_lab."""
    data = tomllib.loads(EXCLUSIONS.read_text())
    return [(e["test"], e["reason"]) for e in data.get(suite, {}).get("exclude", [])]


_outcomes: dict[str, str] = {}
_excluded: dict[str, str] = {}
_collection_errors: dict[str, str] = {}
_not_counted: list[str] = []
_started = time.monotonic()


def pytest_collection_finish(session):
    """Freeze what collection imported (torch, transformers, genlm_lab): the garbage
    collector stops walking those objects, which live until exit, at every full pass."""
    gc.collect()
    gc.freeze()


def pytest_collection_modifyitems(config, items):
    rules = load_exclusions(SUITE) if MODE == "ours" and SUITE else []
    counted = set(Path(COUNTED).read_text().splitlines()) if COUNTED else None
    kept = []
    for item in items:
        reason = next((r for p, r in rules if fnmatch.fnmatchcase(item.nodeid, p)), None)
        if reason is not None:
            _excluded[item.nodeid] = reason
        elif counted is not None and item.nodeid not in counted:
            _not_counted.append(item.nodeid)
        else:
            kept.append(item)
    if len(kept) != len(items):
        left_out = set(_excluded) | set(_not_counted)
        config.hook.pytest_deselected(items=[i for i in items if i.nodeid in left_out])
        items[:] = kept


class _TestTimeout(Exception):
    pass


def _alarm(signum, frame):
    raise _TestTimeout(f"test ran past {TIMEOUT} s (conformance plugin timeout)")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(TIMEOUT)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def pytest_collectreport(report):
    if report.failed:
        _collection_errors[report.nodeid] = str(report.longrepr).strip().splitlines()[-1][:300]


def pytest_runtest_logreport(report):
    node = report.nodeid
    if report.failed:
        _outcomes[node] = "failed"
    elif report.skipped and _outcomes.get(node) != "failed":
        _outcomes[node] = "xfailed" if hasattr(report, "wasxfail") else "skipped"
    elif report.when == "call" and report.passed and node not in _outcomes:
        _outcomes[node] = "passed"


def pytest_sessionfinish(session, exitstatus):
    if not OUT:
        return
    Path(OUT).write_text(
        json.dumps(
            {
                "suite": SUITE,
                "mode": MODE,
                "python": sys.version.split()[0],
                "seconds": round(time.monotonic() - _started, 1),
                "outcomes": dict(sorted(_outcomes.items())),
                "excluded": dict(sorted(_excluded.items())),
                "collection_errors": _collection_errors,
                "not_counted": len(_not_counted),
            },
            indent=1,
        )
    )
