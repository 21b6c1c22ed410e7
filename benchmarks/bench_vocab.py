"""decode_vocab on the tokenizer panel: strategy, size, ids without bytes, time vs genlm-backend.

Every tokenizer of the panel (`tests/tokenizer_panel.py`, fetched by `make
setup`) is decoded by ours and, side by side in the same process, by
genlm-backend 0.3.1's `decode_vocab` (installed by `make bench`). Time is one
cold call each (the tokenizer loaded beforehand), ours first.

    python benchmarks/bench_vocab.py
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from _row import result_row  # noqa: E402


def _baseline(tokenizer):
    try:
        from genlm.backend.tokenization import decode_vocab as theirs
    except ImportError:
        return None, "genlm-backend not installed"
    start = time.perf_counter()
    try:
        theirs(tokenizer)
    except Exception as exc:  # their failure is a finding, not a crash of the benchmark
        return None, f"genlm-backend fails: {type(exc).__name__}"
    return time.perf_counter() - start, ""


def run() -> list[dict]:
    import pytest
    from tokenizer_panel import panel_dir, panel_names

    from genlm_lab.tokenization import inspect_vocab
    from genlm_lab.tokenization.report import TokenizerReport

    rows = []
    for name in panel_names():
        if panel_dir(name) is None:
            print(f"{name}: not fetched (run make setup)")
            continue
        try:
            from tokenizer_panel import load_panel_tokenizer

            tokenizer = load_panel_tokenizer(name)
        except pytest.skip.Exception as exc:
            print(f"{name}: {exc}")
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            start = time.perf_counter()
            found = inspect_vocab(tokenizer)
            ours = time.perf_counter() - start
            theirs, why = _baseline(tokenizer)
        report = TokenizerReport(tokenizer)
        unmapped = len(found.unmapped)
        note = (
            f"{found.strategy}; {len(found.byte_vocab):,} ids; {len(found.special_ids)} special; "
            f"{unmapped} without bytes; round trip {'ok' if report.ok else 'MISMATCH'}"
            + (f"; {why}" if why else "")
        )
        rows.append(
            result_row(
                f"decode_vocab {name}",
                "seconds, one call",
                f"{ours:.2f}",
                f"{theirs:.2f}" if theirs is not None else "n/a",
                f"{ours / theirs:.2f}x" if theirs else "n/a",
                "loads; round trip ok",
                report.ok,
                note,
            )
        )
        print(f"{name:<12} ours {ours:6.2f} s  genlm-backend {rows[-1]['baseline']:>5}  {note}")
    print(f"load average {os.getloadavg()}")
    return rows


if __name__ == "__main__":
    run()
