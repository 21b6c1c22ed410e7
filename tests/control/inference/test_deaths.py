"""Why particles died: each kind of death provoked, with its factor, step and reason."""

from __future__ import annotations

import asyncio
import math
import warnings

from _toys import LengthCritic, RegexConstraint, toy_llm

from genlm_lab.control import SMC, JsonSchema, direct_token_sampler
from genlm_lab.smc import AllParticlesDied

NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def run(coro):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = asyncio.run(coro)
    return out, [w for w in caught if issubclass(w.category, AllParticlesDied)]


def json_sampler(vocab, schema):
    llm = toy_llm(vocab=vocab)
    return direct_token_sampler(llm * JsonSchema(schema).coerce(llm, f=b"".join))


def test_a_document_cut_at_max_tokens_says_where_it_was_cut():
    sampler = json_sampler([b'{"name":"', b"a", b'"}', b"$"], NAME)
    seqs, died = run(SMC(sampler)(12, 0.0, 3, seed=0, budget=False))
    deaths = seqs.deaths
    assert list(deaths.columns[:4]) == ["particle", "step", "factor", "reason"]
    cut = deaths[deaths.reason == "cut at max_tokens inside a string at $.name"]
    assert len(cut) == len(deaths) > 0, deaths.reason.tolist()
    assert set(cut.factor) == {"JsonSchema"} and set(cut.step) == {3}
    for i in cut.particle:  # without resampling the dead stay in place
        assert seqs.log_weights[i] == -math.inf
        assert seqs.texts()[i] == '{"name":"a'
    alive = [t for t, w in zip(seqs.texts(), seqs.log_weights, strict=True) if w > -math.inf]
    assert all(t == '{"name":""}' for t in alive)
    assert len(died) == (0 if alive else 1)


def test_a_run_whose_particles_all_die_warns_once_with_the_commonest_reason():
    sampler = json_sampler([b'{"name":"', b"a", b'"}', b"$"], NAME)
    seqs, died = run(SMC(sampler)(6, 0.5, 2, seed=0, budget=False))
    assert seqs.status == "all_dead" and seqs.log_ml == -math.inf
    assert len(died) == 1
    message = str(died[0].message)
    assert "JsonSchema killed 6 of 6" in message
    assert "cut at max_tokens inside a string at $.name" in message
    assert {k for _, k, _ in seqs.alarms} >= {"all_dead", "log_ml_inf", "max_tokens"}


def test_a_completion_failure_gives_the_json_path_and_keyword():
    schema = {"type": "array", "items": {"type": "integer"}, "uniqueItems": True}
    sampler = json_sampler([b"[1", b",1", b",2", b"]", b"$"], schema)
    seqs, _ = run(SMC(sampler)(40, 0.0, 5, seed=0, budget=False))
    deaths = seqs.deaths
    unique = deaths[deaths.reason.str.contains("keyword uniqueItems")]
    assert len(unique) > 0, deaths.reason.tolist()
    for _, row in unique.iterrows():
        assert row.factor == "JsonSchema"
        assert "at $, keyword uniqueItems: [1, " in row.reason  # maybe "cut at max_tokens; at $"
        assert "non-unique" in row.reason
        assert row.text.endswith("]")  # a whole document, refused at EOS


def test_a_critic_and_a_dead_end_are_named():
    llm = toy_llm()

    class Refuses(LengthCritic):
        async def score(self, context):
            return -math.inf if len(context) >= 2 else 0.0

    critic = Refuses(llm.vocab)
    seqs, _ = run(SMC(direct_token_sampler(llm), critic=critic)(4, 0.5, 6, seed=0))
    deaths = seqs.deaths  # twisted by the critic each step: killed at step 2
    assert set(deaths.factor) == {"critic"} and set(deaths.step) == {2}
    assert set(deaths.reason) == {"the critic Refuses scored it -inf"}

    dead_end = RegexConstraint(llm.vocab, rb"a\xc3\xa9")  # \xa9 is no token: no way on
    seqs, died = run(SMC(direct_token_sampler(llm * dead_end))(4, 0.0, 6, seed=0, budget=False))
    assert len(died) == 1 and seqs.status == "all_dead"
    assert set(seqs.deaths.factor) == {"RegexConstraint"}
    assert set(seqs.deaths.reason) == {"no token has weight under every factor after 2 tokens"}


def test_sequences_without_a_record_have_an_empty_deaths_table():
    from genlm_lab.control import Sequences

    deaths = Sequences([[]], [0.0]).deaths
    assert deaths.empty and list(deaths.columns[:4]) == ["particle", "step", "factor", "reason"]


def test_a_healthy_constrained_run_raises_no_alarm():
    llm = toy_llm()
    seqs, died = run(
        SMC(direct_token_sampler(llm * RegexConstraint(llm.vocab, rb"(ab|b|c)*")))(
            8, 0.5, 40, seed=0
        )
    )
    assert died == [] and seqs.alarms == [] and seqs.record.alarms == []
    assert all(seqs.finished) and seqs.deaths.empty
