"""widgets/beam_html.py directly: the text read as UTF-8, the certified band labelled, the alarms."""

from __future__ import annotations

import math
import re

from test_beam_data import _step

from genlm_lab.widgets.beam_data import beam_data
from genlm_lab.widgets.beam_html import beam_html


def _read(text: bytes, upper_gap: float = 0.25) -> list[dict]:
    steps = [_step(0, None, 0.0)]
    for i, b in enumerate(text):
        logz = -0.5 * (i + 1)
        steps.append(_step(i + 1, b, logz, logz + upper_gap))
    return steps


def test_the_text_read_is_shown_decoded_with_its_bytes_on_hover():
    text = "Café".encode()
    page = beam_html(beam_data(_read(text), text))
    shown = re.sub(r"<[^>]*>", "", page.split("</style>")[1])  # the text, not the markup
    assert "Café" in shown and "\\xc3" not in shown
    assert ">é<" in page and "title='\\xc3\\xa9'" in page
    # bytes that are no UTF-8 show a replacement character, their bytes on hover
    bad = b"a\xffb"
    page = beam_html(beam_data(_read(bad), bad))
    assert ">\ufffd<" in page and "title='\\xff'" in page


def test_a_character_read_in_part_is_marked_as_such():
    text = "é!".encode()
    steps = _read(text)[:2]  # one byte of the two of é read
    page = beam_html(beam_data(steps, text, 1))
    assert "genlm-partial" in page and "1 of its 2 bytes read" in page


def test_the_certified_band_is_labelled_with_its_meaning_and_width():
    page = beam_html(beam_data(_read(b"ab", upper_gap=0.25), b"ab"))
    assert "the exact logZ lies between logZ (solid) and its upper bound (dashed)" in page
    assert "width 0.250 nats at position 2" in page


def test_no_alarms_is_said_and_alarms_are_listed():
    data = beam_data(_read(b"ab"), b"ab")
    page = beam_html(data)
    assert "no alarms up to position 2" in page and "genlm-alarms" not in page
    steps = _read(b"ab")
    steps[1]["alarms"] = [[1, "healed", "the beam healed at byte 1"]]
    page = beam_html(beam_data(steps, b"ab"))
    assert "position 1, healed" in page and "no alarms" not in page
    assert math.isfinite(data["logZ"][-1])
