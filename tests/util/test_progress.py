"""progress_bar / progress_enabled: explicit choice wins, notebooks default on, silence is silent."""

import sys
import types

import pytest
import tqdm.auto

from genlm_lab.util import progress as progress_mod
from genlm_lab.util.progress import NullBar, progress_bar, progress_enabled


def _fake_ipython(monkeypatch, shell):
    fake = types.ModuleType("IPython")
    fake.get_ipython = lambda: shell
    monkeypatch.setitem(sys.modules, "IPython", fake)


def test_explicit_choice_wins_over_the_environment(monkeypatch):
    _fake_ipython(monkeypatch, types.SimpleNamespace(kernel=object(), config={}))
    assert progress_enabled(False) is False
    monkeypatch.delitem(sys.modules, "IPython")
    assert progress_enabled(True) is True


def test_default_is_off_outside_a_kernel(monkeypatch):
    monkeypatch.delitem(sys.modules, "IPython", raising=False)
    assert progress_enabled(None) is False
    # a terminal IPython shell is not a kernel: no bars there by default either
    _fake_ipython(monkeypatch, types.SimpleNamespace(config={"TerminalIPythonApp": {}}))
    assert progress_enabled(None) is False
    _fake_ipython(monkeypatch, None)
    assert progress_enabled(None) is False


@pytest.mark.parametrize(
    "shell",
    [
        types.SimpleNamespace(kernel=object(), config={}),
        types.SimpleNamespace(config={"IPKernelApp": {"connection_file": "x.json"}}),
    ],
)
def test_default_is_on_in_a_kernel(monkeypatch, shell):
    monkeypatch.delenv("GENLM_LAB_PROGRESS", raising=False)
    _fake_ipython(monkeypatch, shell)
    assert progress_enabled(None) is True


@pytest.mark.parametrize("value", ["0", "false", "OFF"])
def test_env_var_turns_the_kernel_default_off_but_not_an_explicit_true(monkeypatch, value):
    # stored notebooks got run-dependent bars from the runner's kernel
    monkeypatch.setenv("GENLM_LAB_PROGRESS", value)
    _fake_ipython(monkeypatch, types.SimpleNamespace(kernel=object(), config={}))
    assert progress_enabled(None) is False
    assert progress_enabled(True) is True


def test_disabled_bar_prints_nothing_and_keeps_the_api(capsys):
    with progress_bar(total=3, desc="quiet", enabled=False) as bar:
        assert isinstance(bar, NullBar)
        for _ in range(3):
            bar.update()
        bar.set_postfix(alive=2, ess=1.5)
        bar.set_postfix_str("x")
        bar.set_description("still quiet")
    assert bar.n == 3 and bar.postfix == {"alive": 2, "ess": 1.5}
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""


def test_enabled_bar_is_a_tqdm_that_writes_to_stderr(capsys):
    with progress_bar(total=4, desc="loud", enabled=True) as bar:
        assert isinstance(bar, tqdm.auto.tqdm)
        bar.update(4)
        bar.set_postfix(alive=3)
    err = capsys.readouterr().err
    assert "loud" in err and "4/4" in err and "alive=3" in err


def test_default_in_a_kernel_builds_a_tqdm_auto_bar(monkeypatch):
    made = []

    class Counting(tqdm.auto.tqdm):
        def __init__(self, *args, **kwargs):
            made.append(kwargs)
            super().__init__(*args, disable=True, **kwargs)

    monkeypatch.setattr(tqdm.auto, "tqdm", Counting)
    monkeypatch.setattr(progress_mod, "_in_kernel", lambda: True)
    monkeypatch.delenv("GENLM_LAB_PROGRESS", raising=False)
    bar = progress_bar(total=2, desc="kernel")
    bar.close()
    assert len(made) == 1 and made[0]["desc"] == "kernel" and made[0]["total"] == 2


def test_a_notebook_bar_that_ends_early_is_drawn_full():
    # the widget's fill reads its own `max`: setting `.total` alone left it a third full
    from tqdm.notebook import tqdm as notebook_tqdm

    from genlm_lab.util.progress import finish_early

    bar = notebook_tqdm(total=21, display=False)
    bar.update(7)
    finish_early(bar, 7)
    fill = bar.container.children[1]
    assert (bar.n, bar.total) == (7, 7)
    assert (fill.value, fill.max) == (7, 7)
    bar.close()


def test_finish_early_on_a_silent_bar():
    from genlm_lab.util.progress import NullBar, finish_early

    bar = NullBar(total=30)
    bar.update(12)
    finish_early(bar, 12)
    assert (bar.n, bar.total) == (12, 12)


def test_a_bar_that_ends_early_shows_the_runs_average_rate():
    import io
    import re
    import time

    from tqdm import tqdm

    from genlm_lab.util.progress import finish_early

    out = io.StringIO()
    bar = tqdm(total=30, file=out, unit="step", mininterval=0)
    for _ in range(4):
        time.sleep(0.05)
        bar.update(1)
    finish_early(bar, 4)
    shown = out.getvalue().split("\r")[-1]
    bar.close()
    rate = float(re.search(r"([\d.]+)step/s", shown).group(1))
    assert (bar.n, bar.total) == (4, 4) and "4/4" in shown
    assert 4 / 2.0 < rate <= 4 / 0.2  # 4 steps in about 0.2 s: about 20 step/s, not thousands
