"""A particle's tokens at any step, read back from the record, agree with the recorded texts."""

import pytest

from genlm_lab.backend import load_model_by_name
from genlm_lab.control.core.tokens import join_bytes, token_label
from genlm_lab.playground import PlaygroundConfig, build_run, context_at


@pytest.fixture(scope="module")
def resampled_run():
    # ESS threshold 1: resample at every step, so the links between steps matter
    config = PlaygroundConfig(
        prompt="Name: ",
        model="tiny-random",
        constraint="[a-z]{3,9}",
        method="direct",
        n_particles=5,
        ess_threshold=1.0,
        max_tokens=7,
        seed=3,
    )
    run = build_run(config, load_model_by_name("tiny-random"))
    import asyncio

    sequences = asyncio.run(run.smc(5, ess_threshold=1.0, max_tokens=7, seed=3))
    return run, sequences


def test_every_context_is_the_parent_text_before_the_step(resampled_run):
    run, sequences = resampled_run
    record = sequences.record
    vocab = run.smc.unit_sampler.target.vocab_eos
    parents = record.parents()
    assert any(entry["resampled"] for entry in record.steps)
    checked = 0
    for index, entry in enumerate(record.steps):
        step = entry["step"]  # the record's own numbering, the one its alarms use
        for particle in range(record.n_particles):
            tokens = context_at(record, step, particle, vocab)
            text = join_bytes(tokens).decode("utf-8", errors="replace")
            if step == 1:
                assert tokens == []
            else:
                parent = particle if parents[index] is None else parents[index][particle]
                assert text == record.steps[index - 1]["contents"][parent]
            checked += 1
    assert checked == len(record.steps) * record.n_particles > 0


def test_step_one_is_the_first_token_as_alarms_and_the_genealogy_say(resampled_run):
    """The context at step s, with the token drawn at step s, is step s's recorded text."""
    run, sequences = resampled_run
    record = sequences.record
    vocab = run.smc.unit_sampler.target.vocab_eos
    by_label = {token_label(t): t for t in reversed(vocab)}
    assert record.steps[0]["step"] == 1
    checked = 0
    for entry in record.steps:
        for particle, drawn in enumerate(entry["extras"]):
            if drawn is None or drawn.get("token") is None or drawn["token"] not in by_label:
                continue
            token = by_label[drawn["token"]]
            if token is run.smc.unit_sampler.target.eos:
                continue  # EOS adds no text
            tokens = context_at(record, entry["step"], particle, vocab) + [token]
            assert (
                join_bytes(tokens).decode("utf-8", errors="replace")
                == (entry["contents"][particle])
            )
            checked += 1
    assert checked > record.n_particles  # more than the first step's draws
    with pytest.raises(ValueError, match="step 1 draws the first token"):
        context_at(record, 0, 0, vocab)


def test_the_last_context_ends_each_final_sequence(resampled_run):
    run, sequences = resampled_run
    record = sequences.record
    vocab = run.smc.unit_sampler.target.vocab_eos
    last = len(record.steps)  # the last step, as the record numbers it
    assert sequences.contexts and last > 1
    for particle, context in enumerate(sequences.contexts):
        before = context_at(record, last, particle, vocab)
        assert list(context[: len(before)]) == before


def test_out_of_range_and_foreign_records_are_named(resampled_run):
    run, sequences = resampled_run
    record = sequences.record
    vocab = run.smc.unit_sampler.target.vocab_eos
    with pytest.raises(ValueError, match="step must be"):
        context_at(record, len(record.steps) + 1, 0, vocab)
    with pytest.raises(ValueError, match="particle must be"):
        context_at(record, 1, 99, vocab)
    with pytest.raises(ValueError, match="another model"):
        context_at(record, len(record.steps), 0, [b"zzz"])
