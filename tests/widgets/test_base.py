import json
import math

import pytest

from genlm_lab.widgets._base import Throttle, asset, jsonable


def test_jsonable_makes_strict_json_of_non_finite_floats():
    data = {"a": [1.0, -math.inf, math.inf, math.nan], "b": {"c": (2, "x")}}
    out = jsonable(data)
    json.dumps(out, allow_nan=False)  # raises on any inf / nan left
    assert out == {"a": [1.0, "-Infinity", "Infinity", "NaN"], "b": {"c": [2, "x"]}}


def test_throttle_sends_first_at_once_then_only_the_latest_on_flush():
    sent = []
    th = Throttle(sent.append, interval=60.0)  # no running loop: no timer
    th.request(lambda: 1)
    th.request(lambda: 2)
    th.request(lambda: 3)
    assert sent == [1]
    th.flush()
    assert sent == [1, 3]
    th.flush()  # nothing pending
    assert sent == [1, 3]


def test_throttle_builds_data_only_when_sending():
    built = []

    def build(x):
        built.append(x)
        return x

    th = Throttle(lambda _: None, interval=60.0)
    for i in range(100):
        th.request(lambda i=i: build(i))
    th.flush()
    assert built == [0, 99]


def test_assets_exist_and_views_are_plain_esm():
    for name in (
        "_common.js",
        "genlm.css",
        "particles.js",
        "beam.js",
        "trie.js",
        "monitor.js",
        "mask.js",
    ):
        text = asset(name)
        assert text.strip()
        assert "http://" not in text.replace("http://www.w3.org", "")  # no CDN
        assert "https://" not in text
    for name in ("particles.js", "beam.js", "trie.js", "monitor.js", "mask.js"):
        assert "export default" in asset(name)
        assert "innerHTML" not in asset(name)


def test_views_offer_static_html_next_to_the_widget_view():
    from genlm_lab.backend import ToyLM
    from genlm_lab.widgets import BackendMonitor
    from genlm_lab.widgets._safe import stored_html

    mon = BackendMonitor(ToyLM([b"a", b"<b>"]))
    data, _metadata = mon._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in data
    assert data["text/html"] == stored_html(mon._repr_html_())  # the form untrusted pages read
    assert mon._repr_html_().startswith("<div class='genlm-view genlm-monitor'><style>")
    assert "var(--jp-ui-font-color1" in data["text/html"]  # follows the JupyterLab theme


def test_jsonable_reads_numpy_and_torch_arrays_as_lists():
    # .item() was called on every array: ValueError for more than one element
    import numpy as np
    import torch

    data = {
        "w": np.array([0.5, -np.inf]),
        "t": torch.tensor([[1.0, float("nan")]]),
        "s": np.int64(3),
    }
    out = jsonable(data)
    json.dumps(out, allow_nan=False)
    assert out == {"w": [0.5, "-Infinity"], "t": [[1.0, "NaN"]], "s": 3}
    assert type(out["s"]) is int


def _package_without_assets(monkeypatch, tmp_path, repo_dir):
    from genlm_lab.widgets import _base

    pkg = tmp_path / "pkg"
    pkg.mkdir()
    monkeypatch.setattr(_base.importlib.resources, "files", lambda name: pkg)
    monkeypatch.setattr(_base, "_REPO_WIDGETS", repo_dir)
    return _base.asset.__wrapped__  # the uncached function


def test_asset_missing_from_the_package_and_the_repo_names_the_path(monkeypatch, tmp_path):
    # a wheel without its assets fell back silently to a repo copy (or failed far away)
    read = _package_without_assets(monkeypatch, tmp_path, tmp_path / "no-repo")
    with pytest.raises(FileNotFoundError) as info:
        read("particles.js")
    assert str(tmp_path / "pkg" / "_widgets" / "particles.js") in str(info.value)
    assert "reinstall" in str(info.value)


def test_asset_from_the_repo_copy_warns_naming_both_paths(monkeypatch, tmp_path):
    repo = tmp_path / "widgets"
    repo.mkdir()
    (repo / "x.js").write_text("export default {};")
    read = _package_without_assets(monkeypatch, tmp_path, repo)
    with pytest.warns(RuntimeWarning, match="missing") as caught:
        assert read("x.js") == "export default {};"
    assert str(repo / "x.js") in str(caught[0].message)


def test_asset_reads_the_packaged_file_without_warning():
    import importlib.resources
    import warnings

    from genlm_lab.widgets._base import asset

    packaged = importlib.resources.files("genlm_lab") / "_widgets" / "genlm.css"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert asset.__wrapped__("genlm.css") == packaged.read_text(encoding="utf-8")
