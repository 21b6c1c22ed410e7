"""genlm_lab.compat: GenLM module paths resolve to genlm_lab, and only where safe."""

from __future__ import annotations

import importlib
import importlib.util
import os
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

from genlm_lab import compat

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def hooked():
    compat.install()
    yield
    compat.uninstall()


def test_every_mapped_path_imports_to_the_named_genlm_lab_module(hooked):
    assert "genlm.control" in compat.MODULE_MAP and "genlm.backend" in compat.MODULE_MAP
    for name, dest in compat.MODULE_MAP.items():
        module = importlib.import_module(name)
        if isinstance(dest, str):
            assert module is importlib.import_module(dest), name
        else:
            assert module.__name__ == name
            for attr in module.__all__:
                owner = next(
                    importlib.import_module(s)
                    for s in dest
                    if hasattr(importlib.import_module(s), attr)
                )
                assert getattr(module, attr) is getattr(owner, attr), (name, attr)


def test_paths_with_children_are_reexports_so_no_genlm_lab_attribute_is_shadowed():
    names = set(compat.MODULE_MAP)
    assert any(name.rpartition(".")[0] in names for name in names)  # some path has a child
    for name in names:
        parent = name.rpartition(".")[0]
        if parent in names:
            assert isinstance(compat.MODULE_MAP[parent], tuple), parent


def test_genlm_names_are_genlm_lab_objects(hooked):
    from genlm.backend import AsyncTransformer, load_model_by_name
    from genlm.backend.llm import MockAsyncLM
    from genlm.bytes import BeamParams, ByteBeamState, TokenByteTrie
    from llamppl import Model, smc_standard

    import genlm_lab.backend as lab_backend
    import genlm_lab.bytes as lab_bytes
    import genlm_lab.smc as lab_smc

    assert AsyncTransformer is lab_backend.AsyncTransformer
    assert load_model_by_name is lab_backend.load_model_by_name
    assert MockAsyncLM is lab_backend.MockAsyncLM
    assert (BeamParams, ByteBeamState, TokenByteTrie) == (
        lab_bytes.BeamParams,
        lab_bytes.ByteBeamState,
        lab_bytes.TokenByteTrie,
    )
    assert (Model, smc_standard) == (lab_smc.Model, lab_smc.smc_standard)


def test_alias_keeps_the_genlm_lab_module_spec_and_monkeypatch_reaches_it(hooked, monkeypatch):
    import genlm.backend.llm.hf as hf

    import genlm_lab.backend.hf as lab_hf

    assert hf is lab_hf and lab_hf.__spec__.name == "genlm_lab.backend.hf"
    monkeypatch.setattr("genlm.backend.llm.hf.AsyncTransformer.batch_size_hint", 7, raising=False)
    assert lab_hf.AsyncTransformer.batch_size_hint == 7


def test_unmapped_genlm_path_is_refused_with_the_reason(hooked):
    with pytest.raises(ModuleNotFoundError, match="genlm.backend.llm.mlx.*MLX"):
        importlib.import_module("genlm.backend.llm.mlx")
    with pytest.raises(ModuleNotFoundError, match="genlm.bytes.nothing_here"):
        importlib.import_module("genlm.bytes.nothing_here")


def test_unknown_name_on_a_reexport_says_where_it_looked(hooked):
    import genlm.bytes

    with pytest.raises(AttributeError, match="genlm.bytes.*genlm_lab.bytes.*no_such_name"):
        genlm.bytes.no_such_name  # noqa: B018


def test_install_refuses_when_a_real_genlm_package_is_imported(monkeypatch):
    real = types.ModuleType("genlm.bytes")
    real.__file__ = "/site-packages/genlm/bytes/__init__.py"
    monkeypatch.setitem(sys.modules, "genlm.bytes", real)
    with pytest.raises(
        compat.CompatError,
        match="real GenLM packages are already imported in this process: genlm-bytes ",
    ):
        compat.install()
    assert not compat.installed()


def test_uninstall_forgets_the_aliases(hooked):
    import genlm.backend  # noqa: F401

    compat.uninstall()
    assert not compat.installed()
    assert not [n for n in sys.modules if n == "genlm" or n.startswith(("genlm.", "llamppl"))]
    compat.install()  # for the fixture's own uninstall


@pytest.mark.skipif(
    importlib.util.find_spec("genlm") is None, reason="the real genlm-bytes is not installed"
)
def test_install_refuses_after_the_real_genlm_bytes_was_imported():
    code = (
        "import genlm.bytes\n"
        "from genlm_lab import compat\n"
        "try:\n"
        "    compat.install()\n"
        "except compat.CompatError as exc:\n"
        "    print('refused:', exc)\n"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1")
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )
    if "No module named" in out.stderr:
        pytest.skip(f"the real genlm-bytes does not import here: {out.stderr.splitlines()[-1]}")
    assert out.stdout.startswith("refused: real GenLM packages are already imported")
    assert "genlm-bytes" in out.stdout


def test_model_alias_loads_the_embedded_model_under_a_hub_name(hooked):
    from genlm_lab.backend.models import _ALIASES, register_model_alias, resolve_model_name

    register_model_alias("Some-Org/hub-model", "tiny-random")
    try:
        assert resolve_model_name("some-org/hub-model") == "tiny-random"
    finally:
        _ALIASES.pop("some-org/hub-model")
    with pytest.raises(ValueError, match="points at itself"):
        register_model_alias("x-model", "x-model")


@pytest.mark.integration
def test_genlm_lab_run_runs_a_genlm_script_with_its_arguments(tmp_path):
    script = tmp_path / "genlm_script.py"
    script.write_text(
        textwrap.dedent(
            """
            import asyncio, sys
            from genlm.backend import load_model_by_name
            from genlm.backend.llm import MockAsyncLM
            from llamppl import Model, smc_standard

            llm = load_model_by_name("tiny-random", backend="mock")
            assert isinstance(llm, MockAsyncLM)
            logps = asyncio.run(llm.next_token_logprobs([1, 2, 3]))
            print(type(llm).__module__, len(logps), sys.argv[1:])
            """
        )
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1")
    out = subprocess.run(
        [sys.executable, "-m", "genlm_lab.cli", "run", str(script), "--flag", "x"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    module, n, argv = out.stdout.split(maxsplit=2)
    assert module == "genlm_lab.backend.mock" and int(n) == 49152
    assert argv.strip() == "['--flag', 'x']"


def test_genlm_lab_run_refuses_a_missing_script(tmp_path):
    from genlm_lab.cli import main

    assert main(["run", str(tmp_path / "absent.py")]) == 2
