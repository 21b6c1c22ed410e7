"""`WithinBudget`: a JSON schema over tokens that refuses tokens after which it cannot end in time.

Against brute force on a small vocabulary: every token sequence the schema
allows is enumerated up to `max_tokens`, and whether some valid document of
at most `max_tokens` tokens (EOS included) extends it is computed exactly.
Every prefix `WithinBudget` keeps has one (its finish is a witness); over
single-byte tokens the finish is the shortest completion, so it refuses
exactly the prefixes that have none. On the embedded model, seeded runs whose
particles were cut at max_tokens end with valid documents.
"""

from __future__ import annotations

import asyncio
import json
import math

import pytest

from genlm_lab.control import AWRS, SMC, EndOfSequence, JsonSchema, WithinBudget
from tests.control._toys import toy_llm

SCHEMA = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
BYTES = [b"{", b"}", b'"', b"a", b":", b"b", b"<eos>"]
WIDE = [*BYTES[:-1], b'{"a":"', b'"}', b"ab", b"<eos>"]


def run(coro):
    return asyncio.run(coro)


def enumerate_live(potential, max_tokens: int) -> dict[tuple, bool]:
    """Every context the schema keeps alive, up to `max_tokens - 1` tokens: whether some valid
    document of at most `max_tokens` tokens (EOS included) extends it."""
    inner = potential.inner
    live: dict[tuple, bool] = {}

    def visit(context: tuple) -> bool:
        ends = len(context) < max_tokens and run(inner.complete(list(context))) == 0
        if len(context) + 1 < max_tokens:
            for token in inner.vocab:
                child = (*context, token)
                if run(inner.prefix(list(child))) == 0:
                    ends = visit(child) or ends
        live[context] = ends
        return ends

    visit(())
    return live


@pytest.mark.parametrize(
    ("vocab", "max_tokens"),
    [(BYTES, 9), (BYTES, 10), (WIDE, 5), (WIDE, 6)],  # inside a string every token is allowed
    ids=["bytes-9", "bytes-10", "wide-5", "wide-6"],
)
def test_kept_prefixes_are_exactly_those_that_can_end_in_time(vocab, max_tokens):
    llm = toy_llm(vocab=vocab)
    budget = WithinBudget(JsonSchema(SCHEMA), llm, max_tokens)
    live = enumerate_live(budget, max_tokens)
    assert len(live) > 5
    kept = {c for c in live if run(budget.prefix(list(c))) == 0}
    assert all(live[c] for c in kept), [c for c in kept if not live[c]]
    # here the finish is the shortest completion, in bytes and in longest-match tokens
    assert kept == {c for c, ends in live.items() if ends}
    assert kept != set(live)  # the budget refused something


def test_next_token_weights_agree_with_prefix_and_complete():
    llm = toy_llm(vocab=WIDE)
    budget = WithinBudget(JsonSchema(SCHEMA), llm, 9)
    for context in ([], [b"{"], [b'{"a":"', b"ab"], [b'{"a":"', b"b", b"b", b"b"]):
        weights = run(budget.logw_next(context))
        for token in budget.vocab:
            assert weights[token] == run(budget.prefix([*context, token])), (context, token)
        assert weights[budget.eos] == run(budget.complete(context))


def test_a_complete_document_needs_one_token_and_only_eos_fits_at_the_end():
    llm = toy_llm(vocab=WIDE)
    budget = WithinBudget(JsonSchema(SCHEMA), llm, 4)
    assert budget.needed(b'{"a":""}') == 1
    assert budget.needed(b'{"a":"b') == 2  # '"}' then EOS
    assert run(budget.prefix([b'{"a":"', b"b"])) == 0
    assert run(budget.prefix([b'{"a":"', b"b", b"b"])) == -math.inf  # '"}' + EOS: 5 tokens
    assert run(budget.complete([b'{"a":"', b'"}'])) == 0
    assert run(budget.score([b'{"a":"', b'"}', EndOfSequence()])) == 0


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "9"])
def test_max_tokens_must_be_a_positive_int(bad):
    with pytest.raises(ValueError, match="max_tokens must be a positive int"):
        WithinBudget(JsonSchema(SCHEMA), toy_llm(vocab=WIDE), bad)


def test_a_constraint_that_cannot_finish_is_refused_by_name():
    from genlm_lab.control import BoolFSA

    with pytest.raises(ValueError, match="can finish a prefix"):
        WithinBudget(BoolFSA.from_regex("a+"), toy_llm(vocab=WIDE), 9)


TWO_FIELDS = {
    "type": "object",
    "properties": {"city": {"type": "string", "maxLength": 12}, "rank": {"type": "integer"}},
    "required": ["city", "rank"],
    "additionalProperties": False,
}


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_runs_cut_at_max_tokens_end_with_valid_documents(seed):
    # The prompt the two-field run used: the model writes a 30-digit rank in 2 seeds
    # of 3 and every particle is cut at max_tokens; within the budget each seed ends valid.
    from genlm_lab.backend import load_model_by_name
    from genlm_lab.control import PromptedLLM

    llm = PromptedLLM(load_model_by_name("default"), prompt="A city and its rank as JSON:")
    schema = JsonSchema(TWO_FIELDS)
    constraint = WithinBudget(schema, llm, 24)
    sequences = run(SMC(AWRS(llm, constraint))(n_particles=4, ess_threshold=0.5, max_tokens=24,
                                               seed=seed))  # fmt: skip
    posterior = dict(sequences.decoded_posterior)
    assert posterior, sequences.texts()
    for text in posterior:
        assert schema.validate(text), text
        assert set(json.loads(text)) == {"city", "rank"}
    assert not any(str(r).startswith("cut at max_tokens") for r in sequences.deaths.reason)


def test_the_default_keeps_what_a_shorter_completion_ends_and_greedy_sets_it_aside():
    # The schema's finish after '{"a":' is "0}" (2 tokens here), but the token "2}" ends it in
    # one: with 2 tokens left the prefix can end ('2}', EOS). The sound default keeps it; the
    # greedy rule (the finish's length) refuses it, setting that mass aside.
    schema = JsonSchema({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]})  # fmt: skip
    llm = toy_llm(vocab=[b'{"a":', b"0", b"2", b"}", b"2}", b"{", b"<eos>"])
    assert schema.finish(b'{"a":') == b"0}"
    sound = WithinBudget(schema, llm, 3)
    greedy = WithinBudget(schema, llm, 3, greedy=True)
    assert run(sound.prefix([b'{"a":'])) == 0
    assert run(greedy.prefix([b'{"a":'])) == -math.inf
    assert run(sound.prefix([b'{"a":', b"2}"])) == 0  # then EOS: 3 tokens
    assert run(sound.prefix([b'{"a":', b"2"])) == -math.inf  # '}' and EOS would make 4
    assert "greedy=True" in repr(greedy) and "greedy" not in repr(sound)


def test_it_is_the_default_budget_as_a_factor_the_same_refusals_and_the_same_guide():
    from genlm_lab.control.constraint.budget import fit_check_for

    llm = toy_llm(vocab=WIDE)
    schema = JsonSchema(SCHEMA)
    within, plain = WithinBudget(schema, llm, 6), schema.coerce(llm, f=b"".join)
    default = fit_check_for(plain)
    check = fit_check_for(within)  # what a run's budget uses for a WithinBudget factor
    assert check is fit_check_for(within.inner) and check.guide is not None
    live = enumerate_live(within, 6)
    assert len(live) > 5
    for context in live:
        by_default = run(default.fits(list(context), 6 - len(context)))
        assert (run(within.prefix(list(context))) == 0) is by_default, context
        assert run(check.fits(list(context), 6 - len(context))) is by_default, context
