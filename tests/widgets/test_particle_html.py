"""The particle view's static HTML and its browser drawing (particles.js, under node) agree:
the retained particle of a conditional SMC run is marked, and each resampling lists its draws."""

from __future__ import annotations

import asyncio
import re
from collections import Counter

import pytest
from _toys import RegexConstraint, toy_llm
from test_particle_view import _draw_js

from genlm_lab.control import EOS, SMC, direct_token_sampler
from genlm_lab.widgets import particles_html
from genlm_lab.widgets.particle_data import record_data


@pytest.fixture(scope="module")
def csmc_data() -> dict:
    """A finished conditional SMC run of 4 particles around the path "cb" (resampling always)."""
    llm = toy_llm(vocab=[b"a", b"b", b"c", b"<eos>"])
    target = llm * RegexConstraint(llm.vocab, rb"(ab|b|c)*")
    b, c = llm.vocab[1], llm.vocab[2]
    sampler = direct_token_sampler(target)
    seqs = asyncio.run(SMC(sampler)(4, 1.0, 4, retained_sequence=[c, b, EOS], seed=2))
    return record_data(seqs.record)


def _rows(markup: str) -> list[str]:
    body = markup.split("<th>text</th>")[1].split("</tbody>")[0]
    return body.split("<tr")[1:]


def test_the_retained_particle_is_marked_in_its_row_and_genealogy_in_both_renderings(csmc_data):
    columns = len(csmc_data["genealogy"])
    assert csmc_data["retained"] == 0 and columns == 3  # the path "cb" and EOS: 3 steps
    for drawn in (particles_html(csmc_data), _draw_js(csmc_data)):
        markup = drawn.split("</style>")[-1]  # the view, not the stylesheet it carries
        assert "conditional SMC finished" in markup
        rows = _rows(markup)
        assert ["◆ retained" in row for row in rows] == [True, False, False, False]
        assert markup.count("genlm-retained-ring") == columns  # one ring per step, on slot 0
        assert markup.count("retained particle\n") == columns  # and its dots' tooltips say so
        assert "◆ slot 0: conditional SMC: the retained particle follows a path" in markup
        # its log_ml is not an estimate of log Z: the status line and the chart say so
        assert re.search(r"log_ml -?[\d.]+ \(conditional: not an estimate of log Z\)", markup)
        assert "log_ml over steps (conditional: not an estimate of log Z)" in markup
        assert "log_ml estimate" not in markup


def test_each_resampling_lists_its_copies_dropped_and_parents_in_both_renderings(csmc_data):
    draws = csmc_data["resamplings"]
    assert draws and {d["method"] for d in draws} == {"multinomial"}
    for markup in (particles_html(csmc_data), _draw_js(csmc_data)):
        section = markup.split("resampling draws (")[1].split("</table>")[0]
        assert section.startswith(f"{len(draws)} resampling")
        rows = section.split("</thead>")[1].split("<tr")[1:]
        assert len(rows) == len(draws)
        found = 0
        for d, row in zip(draws, rows, strict=True):
            counted = Counter(d["ancestors"])  # the copies, counted apart from the view's code
            copies = ", ".join(f"#{i}×{counted[i]}" for i in sorted(counted))
            dropped = ", ".join(f"#{i}" for i in range(4) if i not in counted) or "none"
            parents = " ".join(str(a) for a in d["ancestors"])
            cells = re.findall(r"<td[^>]*>(.*?)</td>", row)
            found += cells == [str(d["step"]), "multinomial", copies, dropped, parents]
        assert found == len(draws)


def test_a_run_without_a_retained_particle_marks_none(csmc_data):
    plain = {**csmc_data, "retained": None}
    plain["particles"] = [{**p, "retained": False} for p in csmc_data["particles"]]
    plain["genealogy"] = [[{**n, "retained": False} for n in col] for col in plain["genealogy"]]
    for markup in (particles_html(plain), _draw_js(plain)):
        assert "retained" not in markup.split("</style>")[-1]
        assert "SMC finished" in markup and "conditional" not in markup
        assert "log_ml estimate over steps" in markup
