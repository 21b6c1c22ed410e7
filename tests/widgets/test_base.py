import json
import math

from genlm_lab.widgets.base import Throttle, jsonable


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
