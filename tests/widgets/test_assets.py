"""Browser assets: packaged, free of CDN links, and a missing one named clearly."""

import pytest

from genlm_lab.widgets._assets import asset


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


def _package_without_assets(monkeypatch, tmp_path, repo_dir):
    from genlm_lab.widgets import _assets

    pkg = tmp_path / "pkg"
    pkg.mkdir()
    monkeypatch.setattr(_assets.importlib.resources, "files", lambda name: pkg)
    monkeypatch.setattr(_assets, "_REPO_WIDGETS", repo_dir)
    return _assets.asset.__wrapped__  # the uncached function


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

    packaged = importlib.resources.files("genlm_lab") / "_widgets" / "genlm.css"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert asset.__wrapped__("genlm.css") == packaged.read_text(encoding="utf-8")
