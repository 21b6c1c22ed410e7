"""Sequences: posteriors, estimates and displays of weighted token sequences."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from genlm_lab.control import EOS, Sequences
from genlm_lab.tokenization import Token

A, B, BAD = Token(0, b"a"), Token(1, b"b"), Token(2, b"\xc3")


def _seqs(status="finished"):
    contexts = [[A, EOS], [A, EOS], [B, EOS], [A, B], [BAD, EOS], [B, EOS]]
    return Sequences(contexts, [0.0, math.log(2), math.log(3), 0.0, 0.0, -math.inf], status=status)


def test_posterior_sums_duplicates_and_normalises():
    seqs = _seqs()
    total = 1 + 2 + 3 + 1 + 1
    post = seqs.posterior
    assert post[(A, EOS)] == pytest.approx(3 / total)
    assert post[(B, EOS)] == pytest.approx(3 / total)
    assert post[(A, B)] == pytest.approx(1 / total)
    assert sum(post.values()) == pytest.approx(1)
    assert list(post.values()) == sorted(post.values(), reverse=True)


def test_decoded_posterior_keeps_finished_utf8_sequences_renormalised():
    post = _seqs().decoded_posterior
    assert set(post) == {"a", "b"}  # "ab" is unfinished, b"\xc3" is no UTF-8
    assert post["a"] == pytest.approx(0.5) and post["b"] == pytest.approx(0.5)


def test_estimates_match_their_definitions():
    seqs = _seqs()
    w = np.array([1, 2, 3, 1, 1, 0], dtype=float)
    assert seqs.log_ml == pytest.approx(math.log(w.mean()))
    assert seqs.ess == pytest.approx(w.sum() ** 2 / (w**2).sum())
    assert seqs.log_ess == pytest.approx(math.log(seqs.ess))
    assert np.allclose(seqs.normalized_weights, w / w.sum())
    assert seqs.log_normalized_weights[-1] == -math.inf
    assert seqs.finished == [True, True, True, False, True, True]
    assert len(seqs) == 6 and seqs[3] == ([A, B], 0.0)
    assert [lw for _, lw in seqs][2] == pytest.approx(math.log(3))


def test_all_dead_has_log_ml_minus_inf_and_no_nan():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        seqs = Sequences([[A, EOS], [B]], [-math.inf, -math.inf], status="all_dead")
        assert seqs.log_ml == -math.inf and seqs.ess == 0
        assert not np.isnan(seqs.normalized_weights).any()
        assert np.all(seqs.log_normalized_weights == -math.inf)
        assert dict(seqs.posterior) == {} and dict(seqs.decoded_posterior) == {}
        assert "all_dead" in repr(seqs) and "all_dead" in seqs._repr_html_()


def test_to_pandas_has_one_row_per_particle():
    frame = _seqs().to_pandas()
    assert list(frame.columns) == ["text", "tokens", "log_weight", "weight", "finished"]
    assert len(frame) == 6
    assert frame["text"][3] == "ab" and frame["tokens"][0] == ["a", "EOS"]
    assert frame["tokens"][4] == ["\\xc3", "EOS"]
    assert frame["weight"].sum() == pytest.approx(1)


def test_displays_are_short_bounded_and_escaped():
    contexts = [[Token(i, f"<s{i}>".encode()), EOS] for i in range(50)]
    seqs = Sequences(contexts, np.zeros(50))
    assert len(repr(seqs)) < 120
    page = seqs._repr_html_()
    assert page.count("<tr>") == 11  # header + 10 rows
    assert "40 more" in page and "<s1>" not in page and "&lt;s1&gt;" in page


def test_bad_inputs_are_named():
    with pytest.raises(ValueError, match="2 contexts but 1 log-weights"):
        Sequences([[A], [B]], [0.0])
    with pytest.raises(ValueError, match="log-weight nan of sequence 1"):
        Sequences([[A], [B]], [0.0, math.nan])


def test_length_mismatch_is_a_value_and_assertion_error_and_show_prints_the_heaviest(capsys):
    from genlm_lab.control.inference.sequences import SequencesLengthError

    with pytest.raises(SequencesLengthError, match="1 contexts but 2"):
        Sequences([[b"a"]], [0.0, 0.0])
    assert issubclass(SequencesLengthError, ValueError)
    assert issubclass(SequencesLengthError, AssertionError)
    Sequences([[b"a", EOS], [b"b"]], [math.log(1), math.log(9)]).show()
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == "0.9000  'b'" and lines[2] == "0.1000  'a'"


def test_to_pandas_finished_only_for_particles_that_ended_valid():
    # ended with EOS and live; cut at max_tokens (no EOS); killed after EOS; killed before it
    contexts = [[A, EOS], [A, B], [B, EOS], [B]]
    frame = Sequences(contexts, [0.0, 0.0, -math.inf, -math.inf]).to_pandas()
    assert frame["finished"].tolist() == [True, False, False, False]
