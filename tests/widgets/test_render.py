import math

from genlm_lab.widgets.render import bar, fmt, line_chart, table, tok_box


def test_fmt_names_infinities_and_keeps_small_numbers_readable():
    assert fmt(-math.inf) == "−∞"
    assert fmt(math.inf) == "∞"
    assert fmt(math.nan) == "NaN"
    assert fmt(0.5) == "0.500"
    assert fmt(3) == "3"
    assert fmt(1.5e-7) == "1.50e-07"
    assert fmt(None) == ""


def test_bar_length_is_the_clamped_fraction():
    assert "width:25.0%" in bar(0.25)
    assert "width:100.0%" in bar(7.0)
    assert "width:0.0%" in bar(-1.0)
    assert "width:0.0%" in bar(math.nan)


def test_token_box_escapes_markup():
    html = tok_box("<script>alert('x')</script>")
    assert "<script>" not in html
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in html
    assert "genlm-partial" in tok_box("a", partial=True)


def test_table_escapes_headers_and_line_chart_skips_non_finite_points():
    assert "<th>&lt;b&gt;</th>" in table(["<b>"], [])
    svg = line_chart([("s", [1.0, -math.inf, 3.0], "genlm-line")], title="<t>")
    assert svg.count("L") == 1  # two finite points: M then one L
    assert "&lt;t&gt;" in svg and "<t>" not in svg
