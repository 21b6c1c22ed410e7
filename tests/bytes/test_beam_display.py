"""A beam's text and HTML forms: bounded, escaped, with the certified interval."""

from __future__ import annotations

from genlm_lab.backend.toy import ToyLM
from genlm_lab.bytes import BeamParams, ByteBeamState
from genlm_lab.bytes._beam_display import MAX_ROWS


async def test_repr_is_short_and_names_the_interval_and_best_candidate():
    lm = ToyLM([b"a", b"b", b"ab", b"<&>"], seed=2)
    beam = await (await ByteBeamState.initial(lm, BeamParams(K=4))).prefill(b"ab")
    text = repr(beam)
    assert text.count("\n") == 1
    assert "logZ=" in text and "logZ_upper=" in text and "best (" in text
    assert len(beam.show().splitlines()) == 1 + len(beam)


async def test_repr_html_escapes_tokens_and_bounds_its_rows():
    vocab = [b"<", b"&", b">", b"<&", b"&>", b"<&>", b"\n"] + [bytes([0x61 + i]) for i in range(5)]
    lm = ToyLM(vocab, seed=1)
    beam = await ByteBeamState.initial(lm, BeamParams(K=10_000))
    beam = await beam.prefill(b"<&><&><&>\n")
    page = beam._repr_html_()
    assert "<&>" not in page.replace("<td>", "").replace("<code>", "")  # escaped
    assert "&lt;&amp;&gt;" in page  # the token <&> itself, escaped whole
    assert "\\n" in page  # a newline token shown as an escape, not a line break
    assert len(beam) > MAX_ROWS  # K is unbounded: the table must cut its rows
    rows = page.count("<tr>") - 1
    assert rows <= MAX_ROWS + 1
    assert f"{len(beam) - MAX_ROWS} more" in page
    assert "certified interval" in page
