"""Presets: the AWRS paper's grid as its replication scripts run it (github.com/genlm/awrs-colm-2025)."""

import pytest

from genlm_lab.cli import main
from genlm_lab.eval.presets import PAPER_DOMAINS, preset

# scripts/{json,pattern_matching,text_to_sql}.sh: (method, particles, ESS threshold);
# experiments/tasks.py: max_tokens per task; experiments/__main__.py: seed 80808.
PAPER_METHODS = {
    "base-lm": ("base", 1, 0.0),
    "lcd": ("lcd", 1, 0.0),
    "sample-rerank": ("sample_rerank", 10, 0.0),
    "twisted-smc": ("twisted_smc", 10, 0.9),
    "awrs-smc": ("awrs_smc", 5, 0.5),
}
PAPER_MAX_TOKENS = {
    "spider": 100,
    "json_schema": 450,
    "pattern_matching": 100,
    "molecular_synthesis": 100,
    "goal_inference": 150,  # Loula et al., ICLR 2025: experiments/goal_inference/cli.py
}


def test_the_awrs_preset_has_the_papers_settings():
    chosen = preset("awrs-colm-2025")
    assert chosen.replicates == 2 and chosen.seed == 80808
    got = {m.label: (m.kind, m.n_particles, m.ess_threshold) for m in chosen.methods}
    assert got == PAPER_METHODS
    assert [m.label for m in chosen.methods] == list(PAPER_METHODS)  # the table's row order
    assert not any(m.budget for m in chosen.methods)  # the paper cuts particles at max_tokens
    assert set(PAPER_DOMAINS) == set(PAPER_MAX_TOKENS)
    assert chosen.domain_options == {"json_schema": {"ours": False}}  # real-world schemas
    for domain, limit in PAPER_MAX_TOKENS.items():
        methods = chosen.methods_for(domain)
        assert len(methods) == 5
        assert {(m.max_tokens, m.seed) for m in methods} == {(limit, 80808)}


def test_an_unknown_preset_names_the_known_ones():
    with pytest.raises(ValueError, match="unknown preset 'awrs'.*awrs-colm-2025"):
        preset("awrs")


def test_the_description_lists_every_method():
    text = preset("awrs-colm-2025").describe()
    assert all(label in text for label in PAPER_METHODS) and "ESS 0.9" in text


def test_eval_run_without_a_method_or_preset_says_so(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["eval", "run", "json_schema", "--db", "x.sqlite"]) == 2
    assert "needs --method (repeatable) or --preset" in capsys.readouterr().err
    assert main(["eval", "run", "json_schema", "--preset", "nope", "--db", "x.sqlite"]) == 2
    assert "unknown preset 'nope'" in capsys.readouterr().err


def test_the_presets_json_domain_holds_only_real_world_schemas():
    from genlm_lab.eval.domains import load_domain

    options = preset("awrs-colm-2025").domain_options["json_schema"]
    sources = {i.source for i in load_domain("json_schema", **options).dataset}
    assert sources == {"SchemaStore"}
    assert "genlm_lab" in {i.source for i in load_domain("json_schema").dataset}
