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


class _SlowRay:
    """A `ray` whose first `init` times out as a loaded machine's does."""

    def __init__(self, failures: int, message: str) -> None:
        self.failures, self.message = failures, message
        self.inits = self.shutdowns = 0

    def is_initialized(self) -> bool:
        return False

    def init(self, **options) -> None:
        self.inits += 1
        if self.inits <= self.failures:
            raise Exception(self.message)

    def shutdown(self) -> None:
        self.shutdowns += 1


TIMEOUT = "The current node timed out during startup. This could happen because ..."


def test_a_local_start_that_times_out_is_tried_again(monkeypatch):
    slow = _SlowRay(failures=1, message=TIMEOUT)
    monkeypatch.setattr("genlm_lab.eval.ray_cluster.require_ray", lambda: slow)
    assert RayCluster("local").connect() is slow
    assert (slow.inits, slow.shutdowns) == (2, 1)


def test_other_start_errors_and_a_third_timeout_are_raised(monkeypatch):
    slow = _SlowRay(failures=5, message=TIMEOUT)
    monkeypatch.setattr("genlm_lab.eval.ray_cluster.require_ray", lambda: slow)
    with pytest.raises(Exception, match="timed out during startup"):
        RayCluster("local").connect()
    assert slow.inits == 3
    broken = _SlowRay(failures=1, message="no such option")
    monkeypatch.setattr("genlm_lab.eval.ray_cluster.require_ray", lambda: broken)
    with pytest.raises(Exception, match="no such option"):
        RayCluster("local").connect()
    assert broken.inits == 1
