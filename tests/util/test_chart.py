"""Chart: defaults, pointwise algebra, ordering helpers and readable rendering."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from genlm_lab.util import Chart

values = st.dictionaries(st.integers(0, 20), st.floats(0, 10, allow_nan=False), max_size=12)


def test_missing_keys_read_as_zero_without_being_stored():
    chart = Chart(0.0, {"a": 1.0})
    assert chart["b"] == 0.0
    assert "b" not in chart


@given(values, values)
def test_add_is_pointwise_over_the_union(a, b):
    total = Chart(0.0, a) + Chart(0.0, b)
    for key in a.keys() | b.keys():
        assert total[key] == pytest.approx(a.get(key, 0.0) + b.get(key, 0.0))


@given(values, values)
def test_mul_is_pointwise_and_drops_zeros(a, b):
    product = Chart(0.0, a) * Chart(0.0, b)
    for key in a.keys() | b.keys():
        assert product[key] == pytest.approx(a.get(key, 0.0) * b.get(key, 0.0))
    assert all(v != 0.0 for v in product.values())


@given(values)
def test_normalize_sums_to_one_and_keeps_ratios(a):
    chart = Chart(0.0, a)
    norm = chart.normalize()
    total = sum(a.values())
    if total == 0:
        assert norm == chart
    else:
        assert norm.sum() == pytest.approx(1.0)
        for key, value in a.items():
            assert norm[key] == pytest.approx(value / total)


@given(values, st.integers(0, 15))
def test_top_keeps_the_k_largest_in_order(a, k):
    top = Chart(0.0, a).top(k)
    assert len(top) == min(k, len(a))
    kept = list(top.values())
    assert kept == sorted(kept, reverse=True)
    dropped = [v for key, v in a.items() if key not in top]
    assert not kept or not dropped or min(kept) >= max(dropped)


def test_argmax_project_and_map_values():
    chart = Chart(0, {b"ab": 2, b"ac": 3, b"b": 4})
    assert chart.argmax() == b"b"
    assert chart.project(lambda k: k[:1]) == {b"a": 5, b"b": 4}
    with np.errstate(divide="ignore"):
        logs = Chart(0.0, {"x": 1.0}).map_values(np.log)
    assert logs.zero == -math.inf and logs["x"] == 0.0


def test_assert_equal_names_every_differing_key():
    chart = Chart(0.0, {"a": 1.0, "b": 2.0})
    chart.assert_equal({"a": 1.0, "b": 2.0 + 1e-7})
    with pytest.raises(AssertionError) as err:
        chart.assert_equal({"a": 1.5, "c": 1.0})
    assert "'a'" in str(err.value) and "'c'" in str(err.value) and "'b'" in str(err.value)


def test_html_table_escapes_keys_and_sorts_rows():
    chart = Chart(0.0, {b"<script>": 0.25, b"\n": 0.75, b"zero": 0.0})
    html = chart._repr_html_()
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert html.index("\\n") < html.index("&lt;script&gt;")
    assert "zero" not in html


def test_to_pandas_orders_by_value():
    frame = Chart(0.0, {"a": 0.1, "b": 0.9}).to_pandas()
    assert list(frame["key"]) == ["b", "a"]
    assert list(frame["value"]) == [0.9, 0.1]


def test_equal_infinities_do_not_differ():
    # log-space charts hold -inf for impossible keys; inf - inf = NaN failed assert_equal
    a = Chart(-math.inf, {"x": -math.inf, "y": 0.0})
    a.assert_equal(Chart(-math.inf, {"x": -math.inf, "y": 0.0}))
    a.assert_equal({"y": 0.0}, domain=["x", "y", "z"])
    assert a.metric({"x": -math.inf, "y": 0.0}) == 0
    assert Chart(0, {"x": math.inf}).metric({"x": math.inf}) == 0
    with pytest.raises(AssertionError):
        a.assert_equal({"x": 0.0, "y": 0.0})


@pytest.mark.parametrize("op", ["max", "min", "argmax", "argmin"])
def test_extremes_of_an_empty_chart_name_the_chart(op):
    with pytest.raises(ValueError, match="empty chart"):
        getattr(Chart(), op)()


@pytest.mark.parametrize("k", [-1, -3, 1.5, "2"])
def test_top_refuses_a_k_that_is_not_a_count(k):
    # top(-1) returned every entry but the smallest (a slice [:-1])
    with pytest.raises(ValueError, match="k >= 0"):
        Chart(0, {"a": 1, "b": 2, "c": 3}).top(k)


def test_top_with_k_past_the_length_gives_everything_sorted():
    chart = Chart(0, {"a": 1, "b": 3, "c": 2})
    assert list(chart.top(10).items()) == [("b", 3), ("c", 2), ("a", 1)]
    assert chart.top(0) == {}


def test_metric_is_nan_whenever_a_difference_is_nan_whatever_the_key_order():
    # max() over [4.0, nan] gave 4.0 (but nan over [nan, 4.0]): a NaN hid behind key order
    for keys in ((0, 1), (1, 0)):
        mine = Chart(0.0, {keys[0]: 1.0, keys[1]: math.nan})
        other = {keys[0]: 5.0, keys[1]: 1.0}
        assert math.isnan(mine.metric(other))


@pytest.mark.parametrize("bad", [math.inf, math.nan])
def test_normalize_refuses_an_infinite_or_nan_total(bad):
    # {a: inf, b: 2} normalised to {a: nan, b: 0.0} without a word
    with pytest.raises(ValueError, match="sum to"):
        Chart(0.0, {"a": bad, "b": 2.0}).normalize()


def test_assert_equal_takes_the_genlm_verbose_and_throw_options(capsys):
    # the GenLM Chart signature (verbose=, throw=) was a TypeError here
    got, want = Chart(0.0, {"a": 1.0, "b": 2.0}), {"a": 1.0, "b": 2.5}
    got.assert_equal(want, verbose=True, throw=False)
    lines = sorted(capsys.readouterr().out.splitlines())
    assert lines == ["✓ 'a': 1.0", "✗ 'b': 2.0, want 2.5"]
    with pytest.raises(AssertionError, match="'b': got 2.0, want 2.5"):
        got.assert_equal(want, verbose=True)
    with pytest.raises(ValueError, match="check nothing"):
        got.assert_equal(want, verbose=False, throw=False)


def test_compare_lists_every_key_with_its_gap():
    mine = Chart(0.0, {"a": 1.0, "b": -math.inf})
    table = mine.compare({"a": 1.5, "c": 2.0}).set_index("key")
    assert sorted(table.index) == ["a", "b", "c"]
    assert table.loc["a"].tolist() == [1.0, 1.5, 0.5]
    assert table.loc["c"].tolist() == [0.0, 2.0, 2.0]
    assert table.loc["b", "metric"] == math.inf
    assert list(mine.compare({}, domain=["a"])["key"]) == ["a"]


def test_html_of_a_vocabulary_sized_chart_shows_the_top_rows_and_counts_the_rest():
    # a 49,152-token chart rendered 49,152 rows (megabytes of output per cell)
    from genlm_lab.util.chart import MAX_ROWS

    rng = np.random.default_rng(0)
    values = rng.random(49_152)
    chart = Chart(0.0, {f"tok{i}": float(v) for i, v in enumerate(values)})
    html = chart._repr_html_()
    assert html.count("<tr>") == 1 + MAX_ROWS  # header + the top rows
    assert html.count("<tr") == 2 + MAX_ROWS  # + the "more" row
    assert f"… {49_152 - MAX_ROWS:,} more" in html and "49,152 entries" in html
    top = np.argsort(-values)[:MAX_ROWS]
    shown = [html.index(f"<code>tok{i}</code>") for i in top]
    assert shown == sorted(shown)  # the largest values, in descending order
    assert len(html) < 5_000


def test_small_charts_render_whole_and_big_ones_pretty_print_bounded():
    from IPython.lib.pretty import pretty

    from genlm_lab.util.chart import MAX_ROWS

    small = Chart(0.0, {"a": 0.5, "b": 0.25})
    assert "more" not in small._repr_html_()
    assert pretty(small) == repr(small)  # notebooks show the same text as before
    big = Chart(0, {i: i for i in range(1, 1001)})
    text = pretty(big)
    assert f"{1000 - MAX_ROWS:,} more" in text and "1000: 1000" in text and "1: 1," not in text
    assert len(repr(big)) > 10 * len(text)  # repr itself stays complete


def test_str_formats_values_with_style_value_as_genlm_bytes_chart():
    chart = Chart(0, {"a": 1, "b": 2, "z": 0})
    text = chart.__str__(style_value=lambda k, v: f"<{k}={v}>")
    assert text == "Chart {\n  'b': <b=2>,\n  'a': <a=1>,\n}"


def test_html_is_a_monospace_table_of_the_rows_largest_first():
    import re

    rng = np.random.default_rng(1)
    chart = Chart(0.0, {f"k{i}": float(v) for i, v in enumerate(rng.random(12))})
    html = chart._repr_html_()
    assert html.startswith('<div style="font-family: Monospace;"><table>')
    assert html.endswith("</table></div>")
    keys = re.findall(r"<code>(k\d+)</code>", html)
    assert keys == [k for k, _ in sorted(chart.items(), key=lambda kv: -kv[1])]
