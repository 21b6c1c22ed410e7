"""`TokenizerReport`: the verdicts follow what the tokenizer does, and a wrong decoding shows."""

import pytest
from tokenizer_panel import load_panel_tokenizer

from genlm_lab.tokenization.report import (
    EXACT,
    LOSSY,
    MISMATCH,
    NORMALISED,
    PREFIX,
    REPORT_SAMPLES,
    TokenizerReport,
)


def _verdicts(report):
    return {r.label: r.verdict for r in report.round_trips}


def test_smollm2_round_trips_exactly_and_names_its_specials(smollm2_tokenizer):
    report = TokenizerReport(smollm2_tokenizer)
    assert report.ok and report.decoding.strategy == "byte-level BPE"
    assert set(_verdicts(report).values()) == {EXACT}
    assert report.bos == ("<|im_start|>", smollm2_tokenizer.bos_token_id)
    assert report.special[0] == "<|endoftext|>"
    text = str(report)
    assert "byte-level BPE" in text and "49,152 ids" in text and "every id has bytes" in text


def test_a_wrong_byte_decoding_is_reported_as_a_mismatch(smollm2_tokenizer, monkeypatch):
    from genlm_lab.tokenization import vocab as vocab_module

    real = vocab_module.inspect_vocab

    def swapped(tokenizer):
        found = real(tokenizer)
        first = smollm2_tokenizer.encode(REPORT_SAMPLES["English"], add_special_tokens=False)[0]
        found.byte_vocab[first] = b"This"  # one wrong token
        return found

    monkeypatch.setattr("genlm_lab.tokenization.report.inspect_vocab", swapped)
    report = TokenizerReport(smollm2_tokenizer)
    assert not report.ok
    assert _verdicts(report)["English"] == MISMATCH
    assert "MISMATCH" in str(report) and "MISMATCH" in report._repr_html_()


def test_qwen3_combining_accent_is_normalised_and_it_has_no_bos():
    report = TokenizerReport(load_panel_tokenizer("qwen3"))
    assert report.ok and report.bos is None
    assert _verdicts(report)["combining"] == NORMALISED
    assert _verdicts(report)["English"] == EXACT


def test_llama2_text_gets_its_dummy_prefix_space():
    report = TokenizerReport(load_panel_tokenizer("llama2"))
    assert report.ok and report.decoding.strategy == "SentencePiece"
    assert _verdicts(report)["English"] == PREFIX


def test_a_tokenizer_that_drops_characters_is_lossy_not_a_mismatch(smollm2_tokenizer):
    # SmolLM2 has no token for a few bytes (some control characters) and drops them.
    dropped = [
        chr(c)
        for c in range(32)
        if smollm2_tokenizer.decode(smollm2_tokenizer.encode(chr(c), add_special_tokens=False))
        != chr(c)
    ]
    assert dropped
    report = TokenizerReport(smollm2_tokenizer, samples={"control": f"a{dropped[0]}b"})
    assert report.ok
    assert _verdicts(report)["control"] == LOSSY


def test_html_escapes_and_holds_every_fact(smollm2_tokenizer):
    report = TokenizerReport(smollm2_tokenizer, samples={"tags": "<b>&amp;</b>"})
    page = report._repr_html_()
    assert "&lt;b&gt;&amp;amp;&lt;/b&gt;" in page and "<b>&amp;" not in page
    for what, _ in report.rows():
        assert f">{what}<" in page


@pytest.mark.parametrize("name", ["gemma3", "gptoss"])
@pytest.mark.slow
def test_big_panel_tokenizers_report_ok(name):
    report = TokenizerReport(load_panel_tokenizer(name))
    assert report.ok, str(report)
    assert _verdicts(report)["whitespace runs"] == EXACT
