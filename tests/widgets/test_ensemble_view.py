"""The ensemble view: each token's two-model shares, read from the record, against exact values."""

from __future__ import annotations

import asyncio
import html
import re

import numpy as np
import pytest

from genlm_lab.control.inference.ensemble import EnsembleSMC
from genlm_lab.control.lm import ByteEnsemble
from genlm_lab.control.sampler.byte_ensemble import ByteEnsembleTokenSampler
from genlm_lab.smc import SMCRecord
from genlm_lab.widgets.ensemble_view import EnsembleView, ensemble_data, ensemble_html
from tests.control._byte_pair import K, oracles, toy_pair


def _run(seed: int = 1):
    lm1, lm2 = toy_pair()

    async def main():
        ens = await ByteEnsemble.create(lm1, lm2, "prod", a=0.3, K=K)
        sampler = ByteEnsembleTokenSampler(ens, n_particles=6)
        return await EnsembleSMC(sampler)(6, 0.9, 5, seed=seed)

    return asyncio.run(main()), oracles(lm1, lm2)


def test_each_tokens_shares_are_the_models_exact_conditionals_through_resampling(tmp_path):
    """For every particle of the last step, token t's p_k is P_k(x[:t+1]) / P_k(x[:t]) from
    the exact token-level sums (a drawn EOS: P_k(x EOS) / P_k(x)), share1 = p1 / (p1 + p2), and the tokens spell its text: the
    lineage was followed through resampling. The record's JSON file gives the same data."""
    sequences, ((pre1, end1), (pre2, end2)) = _run()
    record = sequences.record
    assert any(step["resampled"] for step in record.steps[:-1])  # lineages cross resampling
    data = ensemble_data(record, labels=("left", "right"))
    assert data["labels"] == ["left", "right"] and len(data["particles"]) == 6
    checked = 0
    for particle in data["particles"]:
        text = particle["text"].encode()
        drawn = [t for t in particle["tokens"] if t["share1"] is not None]  # not a forced EOS
        labels = "".join(t["token"] for t in drawn)
        assert labels.removesuffix("EOS").encode() == text
        for t, token in enumerate(drawn):
            x = text[:t]
            if token["token"] == "EOS":  # drawn, not forced: the models' probability of ending
                p1, p2 = end1(x) / pre1(x), end2(x) / pre2(x)
            else:
                p1, p2 = pre1(text[: t + 1]) / pre1(x), pre2(text[: t + 1]) / pre2(x)
            assert token["p1"] == pytest.approx(p1, rel=1e-5)
            assert token["p2"] == pytest.approx(p2, rel=1e-5)
            assert token["share1"] == pytest.approx(p1 / (p1 + p2), rel=1e-5)
            checked += 1
        shares = [t["share1"] for t in drawn]
        assert particle["mean_share1"] == pytest.approx(np.mean(shares) if shares else None)
    assert checked >= 6
    weighed = [(p["weight"], p["mean_share1"]) for p in data["particles"]]
    expected = sum(w * s for w, s in weighed if s is not None) / sum(
        w for w, s in weighed if s is not None
    )
    assert data["mean_share1"] == pytest.approx(expected)
    path = tmp_path / "run.json"
    record.save(path)
    assert ensemble_data(str(path), labels=("left", "right")) == data
    assert ensemble_data(SMCRecord.load(path).to_json(), labels=("left", "right")) == data


def test_the_html_shows_every_token_with_its_share_and_escapes_labels():
    sequences, _ = _run(seed=2)
    data = ensemble_data(sequences.record, labels=("<m1>", "m2"))
    page = ensemble_html(data)
    shares = [
        t["share1"]
        for p in sorted(data["particles"], key=lambda p: -p["weight"])
        for t in p["tokens"]
        if t["share1"] is not None
    ]
    shown = [float(s) for s in re.findall(r"data-share1='([0-9.]+)'", page)]
    assert len(shown) == len(shares) > 0
    assert shown == pytest.approx(shares, abs=1e-4)
    assert "<m1>" not in page and html.escape("<m1>") in page
    view = EnsembleView(sequences.record)
    assert view._repr_html_() == ensemble_html(view.data)
    assert "6 particles" in repr(view)


def test_a_record_without_ensemble_numbers_shows_tokens_without_shares():
    sequences, _ = _run(seed=3)
    record = sequences.record
    for step in record.steps:
        for extra in step.get("extras") or []:
            if extra is not None:
                extra.pop("ensemble", None)
    data = ensemble_data(record)
    tokens = [t for p in data["particles"] for t in p["tokens"]]
    assert tokens and all(t["share1"] is None for t in tokens)
    assert data["mean_share1"] is None
    with pytest.raises(ValueError, match="does not exist"):
        ensemble_data("/nonexistent/run.json")
