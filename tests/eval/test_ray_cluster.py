"""RayCluster without starting Ray: the missing extra is named, one cluster is kept per address."""

import sys

import pytest

from genlm_lab.eval.ray_cluster import RAY_MISSING, RayCluster, cluster_for, require_ray


def test_without_ray_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(ImportError, match=r"pip install 'genlm-lab\[ray\]'") as info:
        require_ray()
    assert str(info.value) == RAY_MISSING


def test_one_cluster_is_kept_per_address():
    given = RayCluster("ray://nowhere:1")
    assert cluster_for(given) is given
    assert cluster_for("local") is cluster_for(True) is cluster_for(None)
    assert cluster_for("local").address == "local"
    assert cluster_for("ray://head:10001") is cluster_for("ray://head:10001")
    assert cluster_for("ray://head:10001") is not cluster_for("local")
    with pytest.raises(TypeError, match="RayCluster or a Ray address"):
        cluster_for(3)
