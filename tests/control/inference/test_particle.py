"""A particle's death names its real cause: the check and the path, the budget, never a stray token.

Each death is provoked: a scripted sampler draws exactly the tokens a test
asks for (a stray token after a complete document whose final check fails),
and real runs cut particles at `max_tokens` with budgets on and off.
"""

from __future__ import annotations

import asyncio
import math
import warnings

from _toys import RegexConstraint, toy_llm

from genlm_lab.control import AWRS, SMC, JsonSchema
from genlm_lab.control.sampler.token import TokenSampler

UNIQUE = {"type": "array", "items": {"type": "integer"}, "uniqueItems": True}


class Scripted(TokenSampler):
    """Draws the scripted tokens in order, each weighted by the target (a test's puppet)."""

    def __init__(self, target, script):
        super().__init__(target)
        self.script = script

    async def sample(self, context, draw=None):
        token = self.script[len(context)]
        logw = float((await self.target.logw_next(list(context)))[token])
        return token, logw, 0.0


def run(coro):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return asyncio.run(coro)


def test_a_stray_token_after_a_complete_document_that_fails_names_the_check():
    # `[1,1]` is a whole document that uniqueItems refuses only at completion; the token drawn
    # after it ("x") is not the cause, and the reason must not name it.
    llm = toy_llm(vocab=[b"[1", b",1", b"]", b"x", b"$"])
    target = llm * JsonSchema(UNIQUE).coerce(llm, f=b"".join)
    by = {bytes(t): t for t in target.vocab}
    script = [by[b"[1"], by[b",1"], by[b"]"], by[b"x"]]
    seqs = run(SMC(Scripted(target, script))(1, 0.0, 10, budget=False))
    (row,) = seqs.deaths.itertuples()
    assert row.factor == "JsonSchema" and row.step == 4
    assert "keyword uniqueItems" in row.reason and "at $" in row.reason, row.reason
    assert "'x'" not in row.reason and "x" not in row.reason.split(":")[0]


def test_a_date_that_fails_its_format_is_named_with_its_path_not_the_next_token():
    schema = {
        "type": "object",
        "properties": {"date": {"type": "string", "format": "date"}},
        "required": ["date"],
    }
    llm = toy_llm(vocab=[b'{"date": "', b"2020-13-45", b'"}', b" Citiz", b"$"])
    target = llm * JsonSchema(schema).coerce(llm, f=b"".join)
    by = {bytes(t): t for t in target.vocab}
    script = [by[b'{"date": "'], by[b"2020-13-45"], by[b'"}'], by[b" Citiz"]]
    seqs = run(SMC(Scripted(target, script))(1, 0.0, 10, budget=False))
    (row,) = seqs.deaths.itertuples()
    assert "Citiz" not in row.reason and "$.date" in row.reason, row.reason
    if row.step == 4:  # format checked at completion: the complete document's check is named
        assert "keyword format" in row.reason
    else:  # format in the mask: the date's own token is refused, inside its string
        assert row.step == 2 and "inside a string at $.date" in row.reason


def test_a_refused_token_inside_an_open_document_names_it_and_says_where():
    llm = toy_llm(vocab=[b'{"n":', b"1", b"x", b"}", b"$"])
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    target = llm * JsonSchema(schema).coerce(llm, f=b"".join)
    by = {bytes(t): t for t in target.vocab}
    seqs = run(SMC(Scripted(target, [by[b'{"n":'], by[b"x"]]))(1, 0.0, 10, budget=False))
    (row,) = seqs.deaths.itertuples()
    # here the token is the cause: it is named, with where the document stood
    assert row.reason.startswith("JsonSchema gives 'x' weight zero after 1 tokens ("), row.reason
    assert "$.n" in row.reason


def test_a_cut_with_budgets_on_names_the_factor_and_the_budget():
    # 'b' forever is all the model wants; the regex needs "ab"-pairs: with 3 tokens (EOS
    # included) the budget refuses early; a scripted sampler ignores it to reach the cut.
    llm = toy_llm(vocab=[b"a", b"b", b"$"])
    regex = RegexConstraint(llm.vocab, rb"(ab)+")
    target = llm * regex
    by = {bytes(t): t for t in target.vocab}
    seqs = run(SMC(Scripted(target, [by[b"a"], by[b"b"], by[b"a"]]))(1, 0.0, 4, budget=False))
    (row,) = seqs.deaths.itertuples()
    assert row.reason.startswith("cut at max_tokens"), row.reason
    assert "WithinBudget" not in row.reason
    (alarm,) = [s for _, k, s in seqs.alarms if k == "max_tokens"]
    assert "before RegexConstraint accepted them" in alarm
    assert "keep budget=True (the default) so that RegexConstraint refuses" in alarm
    assert "WithinBudget" not in alarm


def test_particles_that_finish_valid_at_the_cut_raise_no_budget_alarm():
    # (ab)* accepts "abab" as it is cut at max_tokens=5: a valid finish, not the budget's fault
    llm = toy_llm(vocab=[b"a", b"b", b"$"])
    target = llm * RegexConstraint(llm.vocab, rb"(ab)*")
    by = {bytes(t): t for t in target.vocab}
    script = [by[b"a"], by[b"b"], by[b"a"], by[b"b"]]
    seqs = run(SMC(Scripted(target, script))(3, 0.0, 5, budget=False))
    assert all(w > -math.inf for w in seqs.log_weights)
    cut = [e for e in seqs.record.steps[-1]["extras"] if e and e.get("cut")]
    assert len(cut) == 3 and all(e.get("complete") for e in cut)  # were cut, finished valid
    assert "max_tokens" not in {k for _, k, _ in seqs.alarms}
    # without a constraint a cut is a truncation: the alarm says so
    plain = run(SMC(Scripted(llm, [by[b"a"]] * 4))(3, 0.0, 5, budget=False))
    (alarm,) = [s for _, k, s in plain.alarms if k == "max_tokens"]
    assert "3 of 3 final particles were cut at max_tokens mid-text" in alarm


def test_a_budgeted_run_whose_particles_all_finish_raises_no_budget_alarm():
    # AWRS with the budget on draws again where a token cannot end in time: every particle
    # ends as "ab"-pairs within max_tokens, most at the cut, and no alarm blames the budget
    llm = toy_llm(vocab=[b"a", b"b", b"$"])
    seqs = run(AWRS(llm, RegexConstraint(llm.vocab, rb"(ab)+")).smc(6, 0.5, 6, seed=0))
    assert all(w > -math.inf for w in seqs.log_weights)
    assert all(t in ("ab", "abab") for t in seqs.texts()), seqs.texts()
    assert "max_tokens" not in {k for _, k, _ in seqs.alarms}
    assert seqs.deaths.empty


def test_a_token_the_budget_refuses_names_the_factor_and_the_budget():
    llm = toy_llm(vocab=[b"a", b"b", b"$"])
    target = llm * RegexConstraint(llm.vocab, rb"(ab)+")
    by = {bytes(t): t for t in target.vocab}
    # after "ab" + "a" one token is left, and "b" + EOS need two
    seqs = run(SMC(Scripted(target, [by[b"a"], by[b"b"], by[b"a"]]))(1, 0.0, 4))
    (row,) = seqs.deaths.itertuples()
    assert row.factor == "RegexConstraint" and row.step == 3
    assert row.reason == "RegexConstraint could not end within max_tokens=4 after 'a' (3 tokens)"
    assert seqs.record.steps[-1]["extras"][0]["killed_budget"] == 4


def test_a_target_that_weighs_the_empty_text_zero_refuses_to_start_by_name():
    import pytest

    from genlm_lab.control import DirectTokenSampler, Potential
    from genlm_lab.control.inference.particle import SequenceModel

    class NoEmptyStart(Potential):
        async def prefix(self, context):
            return 0.0 if context else -math.inf

        async def complete(self, context):
            return 0.0

    model = SequenceModel(DirectTokenSampler(NoEmptyStart([b"a"])))
    with pytest.raises(ValueError, match="Start weight is -inf"):
        run(model.start())
