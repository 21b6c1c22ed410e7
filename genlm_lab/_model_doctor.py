"""`genlm-lab doctor --model PATH`: the model doctor on the command line (see backend/doctor.py)."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The doctor's options for a model the user brings."""
    parser.add_argument(
        "--model",
        metavar="PATH",
        help="check a model: a local HF directory, a registry name, or a hub id in the local cache",
    )
    parser.add_argument(
        "--no-cache-check",
        action="store_true",
        help="with --model: skip the cached-vs-full forward comparison",
    )


def run(args: argparse.Namespace) -> int:
    """Print the model report; exit 1 where it found a problem, 0 otherwise."""
    from genlm_lab.backend.doctor import model_report

    report = model_report(args.model, check_cache=not args.no_cache_check)
    print(str(report))
    print(f"{'verdict':<18} {'ok' if report.ok else 'PROBLEMS: see above'}")
    return 0 if report.ok else 1
