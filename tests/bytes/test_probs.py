"""LazyByteProbs: indexing by slot, Chart views and readable rendering."""

from __future__ import annotations

import math

import numpy as np
import pytest

from genlm_lab.bytes import LazyByteProbs


def make():
    p = np.zeros(258)
    p[ord("a")], p[ord(" ")], p[ord("\n")], p[256], p[257] = 0.4, 0.3, 0.1, 0.05, 0.15
    with np.errstate(divide="ignore"):
        return LazyByteProbs(np.log(p)), p


def test_indexing_by_byte_eot_and_eos():
    q, p = make()
    assert q[ord("a")] == pytest.approx(math.log(0.4))
    assert q[None] == q[256] == pytest.approx(math.log(0.05))
    assert q.prob(257) == pytest.approx(0.15)
    assert q.total() == pytest.approx(1.0)


@pytest.mark.parametrize("bad", [-1, 258, "a"])
def test_bad_slot_raises_value_error(bad):
    q, _ = make()
    with pytest.raises(ValueError, match="slot"):
        q[bad]


def test_wrong_length_raises_value_error():
    with pytest.raises(ValueError, match="258"):
        LazyByteProbs(np.zeros(10))


def test_materialize_is_a_chart_of_nonzero_slots():
    q, p = make()
    chart = q.materialize()
    assert set(chart) == {None if i == 256 else i for i in range(258)}  # EOT keyed None
    assert {k for k, v in chart.items() if v > -math.inf} == {
        None if i == 256 else i for i in range(258) if p[i] > 0
    }
    assert chart.argmax() == ord("a")
    assert chart[ord("z")] == -math.inf


def test_pretty_and_html_show_readable_labels():
    q, _ = make()
    pretty = q.pretty()
    assert list(pretty) == ["a", "␣", "EOS", "\\n", "EOT"]
    html = q._repr_html_()
    assert "␣" in html and "EOS" in html and "\\n" in html
    assert "'a'" in repr(q)


def test_iterating_gives_the_258_slot_values():
    # With __len__ and __getitem__ but no __iter__, iteration ran on to slot 258
    # and list(q), sum(q) or a for loop raised the out-of-range ValueError.
    q, p = make()
    values = list(q)
    assert len(values) == len(q) == 258
    assert values == [q[i] for i in range(258)]
    assert sum(math.exp(v) for v in q) == pytest.approx(p.sum())
