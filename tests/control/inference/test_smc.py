"""SMC over token samplers: log_ml and posterior against exact enumeration on ToyLM."""

from __future__ import annotations

import asyncio
import math
import warnings

import numpy as np
import pytest
from _toys import LengthCritic, RegexConstraint, exact_completions, toy_llm, within

from genlm_lab.control import (
    AWRS,
    EOS,
    SMC,
    Sequences,
    direct_token_sampler,
)
from genlm_lab.smc import CollectingObserver, SMCRecord

PATTERN = rb"(ab|b|c)*"  # after a, only b; the lone byte \xc3 is never allowed


def run(coro):
    return asyncio.run(coro)


def _target():
    llm = toy_llm()
    return llm, RegexConstraint(llm.vocab, PATTERN)


async def _log_mls(sampler, n_runs, n_particles, max_tokens, critic=None, ess=0.5):
    out = []
    for seed in range(n_runs):
        seqs = await SMC(sampler, critic, record_factors=False)(
            n_particles, ess, max_tokens, seed=seed
        )
        out.append(seqs.log_ml)
    return np.array(out)


def _tv(p: dict, q: dict) -> float:
    return 0.5 * sum(abs(p.get(k, 0.0) - q.get(k, 0.0)) for k in set(p) | set(q))


def _normalise(weights: dict) -> dict:
    total = sum(weights.values())
    return {k: v / total for k, v in weights.items()}


@pytest.mark.parametrize("kind", ["direct", "awrs", "eager", "topk"])
def test_smc_log_ml_is_unbiased_for_the_exact_normaliser(kind):
    llm, condition = _target()
    target = llm * condition
    exact = run(exact_completions(target, 3))
    wrong = run(exact_completions(target, 3, forced_eos=False))  # no #145 correction
    sampler = direct_token_sampler(target) if kind == "direct" else AWRS(llm, condition, seed=None)
    z = np.exp(run(_log_mls(sampler, 60, 10, 3)))
    assert within(z, sum(exact.values())), (z.mean(), sum(exact.values()))
    assert not within(z, sum(wrong.values())), (z.mean(), sum(wrong.values()))


def test_smc_posterior_converges_to_the_exact_posterior():
    llm, condition = _target()
    target = llm * condition
    exact = _normalise(run(exact_completions(target, 3)))
    wrong = _normalise(run(exact_completions(target, 3, forced_eos=False)))
    # budget=False: the forced EOS's correction alone (test_budgets.py has the budgeted run)
    seqs = run(
        SMC(direct_token_sampler(target), record_factors=False)(1000, 0.5, 3, seed=1, budget=False)
    )
    estimate = dict(seqs.posterior)
    assert abs(sum(estimate.values()) - 1) < 1e-9
    assert set(estimate) <= set(exact)
    assert _tv(estimate, exact) < 0.05
    assert _tv(exact, wrong) > 0.1  # the same tolerance would catch a missing correction
    assert abs(seqs.log_ml - math.log(sum(run(exact_completions(target, 3)).values()))) < 0.08


def test_smc_forces_eos_at_max_tokens_with_the_exact_weight():
    llm, condition = _target()
    target = llm * condition
    seqs = run(SMC(direct_token_sampler(target))(30, 0.5, 3, seed=0, budget=False))
    assert all(c[-1] == EOS and len(c) <= 3 for c in seqs.contexts)
    # max_tokens=1: every particle is [EOS] with weight complete([]), exactly.
    seqs = run(SMC(direct_token_sampler(target))(5, 0.5, 1, seed=0))
    assert all(c == [EOS] for c in seqs.contexts)
    expected = run(target.complete([]))
    assert np.allclose(seqs.log_weights, expected)
    assert seqs.record.steps[0]["extras"][0]["logZ"] is None


@pytest.mark.parametrize("ess", [0.5, 0.0])  # twisting each step / scoring only at the end
def test_smc_with_a_critic_is_unbiased_for_target_times_critic(ess):
    llm, condition = _target()
    target = llm * condition
    critic = LengthCritic(llm.vocab)
    exact = run(exact_completions(target * critic, 4))
    plain = run(exact_completions(target, 4))
    z = np.exp(run(_log_mls(direct_token_sampler(target), 60, 10, 4, critic=critic, ess=ess)))
    assert within(z, sum(exact.values())), (z.mean(), sum(exact.values()))
    assert not within(z, sum(plain.values()))


def test_a_critic_of_zero_kills_the_particle():
    llm, condition = _target()
    critic = RegexConstraint(llm.vocab, rb"b*")  # kills anything with a or c
    seqs = run(SMC(direct_token_sampler(llm * condition), critic)(40, 0.5, 4, seed=0))
    extras = [e for step in seqs.record.steps for e in step.get("extras", []) if e]
    killed = [e for e in extras if e["killed_by"] == "critic"]
    assert killed and all(e["critic"] == -math.inf for e in killed)
    for context, logw in seqs:
        text = b"".join(bytes(t) for t in context[:-1] if t != EOS)
        assert logw == -math.inf or set(text) <= {ord("b")}


def test_all_dead_run_ends_with_log_ml_minus_inf_and_a_status():
    llm = toy_llm()
    condition = RegexConstraint(llm.vocab, rb"zz")  # "" is alive, but no token continues it
    with pytest.warns(RuntimeWarning, match="every particle has weight zero"):
        seqs = run(SMC(direct_token_sampler(llm * condition))(8, 0.5, 5, seed=0, budget=False))
    assert seqs.log_ml == -math.inf and seqs.status == "all_dead"
    assert seqs.ess == 0 and not np.isnan(seqs.normalized_weights).any()
    assert seqs.record.final["status"] == "all_dead"
    assert dict(seqs.decoded_posterior) == {}
    extras = seqs.record.steps[-1]["extras"]
    assert all(e["killed_by"] == "RegexConstraint" for e in extras)


def test_a_dead_end_in_one_particle_does_not_poison_the_others():
    # "a" keeps "ad" alive, but no token holds a "d": those particles die at
    # the next step while the others finish; log_ml stays unbiased.
    llm = toy_llm()
    condition = RegexConstraint(llm.vocab, rb"ad|b*c?")
    target = llm * condition
    exact = run(exact_completions(target, 4))
    seqs = run(SMC(direct_token_sampler(target))(60, 0.0, 4, seed=2))
    dead = [c for c, w in seqs if w == -math.inf]
    assert dead and all(bytes(c[0]) == b"a" for c in dead)
    assert any(math.isfinite(w) for _, w in seqs)
    assert all(not math.isnan(w) for _, w in seqs)
    z = np.exp(run(_log_mls(direct_token_sampler(target), 40, 10, 4, ess=0.0)))
    assert within(z, sum(exact.values()))


def test_step_extras_follow_the_schema_and_survive_json(tmp_path):
    llm, condition = _target()
    target = llm * llm * condition  # a repeated factor gets "#2"
    path = tmp_path / "run.jsonl"
    observer = CollectingObserver()
    seqs = run(
        SMC(AWRS(llm * llm, condition, seed=0))(
            6, 0.5, 4, json_path=path, observers=[observer], seed=3
        )
    )
    assert isinstance(seqs, Sequences)
    loaded = SMCRecord.load(path)
    assert len(loaded.steps) == len(seqs.record.steps) == len(observer.entries)
    names = ["PromptedLLM", "PromptedLLM#2", "RegexConstraint"]
    for entry, saved in zip(seqs.record.steps, loaded.steps, strict=True):
        assert saved["extras"] == entry["extras"]
        for i, extra in enumerate(entry["extras"]):
            if extra is None:
                assert entry["finished"][i]
                continue
            assert {"token", "logw", "logZ", "factors", "critic", "killed_by"} <= set(extra)
            assert list(extra["factors"]) == names
            if extra["token"] != "EOS" or extra["logZ"] is not None:
                assert set(extra["awrs"]) == {
                    "drawn",
                    "accepted",
                    "rejected",
                    "n_draws",
                    "n_checks",
                    "logw",
                }
            lm = extra["factors"]["PromptedLLM"]
            assert extra["factors"]["PromptedLLM#2"] == lm
    assert target.name == "PromptedLLM * PromptedLLM * RegexConstraint"


def test_minus_inf_in_extras_survives_json(tmp_path):
    llm = toy_llm()
    condition = RegexConstraint(llm.vocab, rb"zz")
    path = tmp_path / "dead.jsonl"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        seqs = run(
            SMC(AWRS(llm, condition, seed=0))(3, 0.5, 4, json_path=path, seed=0, budget=False)
        )
    saved = SMCRecord.load(path).steps[-1]["extras"]
    assert saved == seqs.record.steps[-1]["extras"]
    assert all(e["logw"] == -math.inf and e["awrs"]["logw"] == -math.inf for e in saved)
    assert all(e["factors"]["RegexConstraint"] == -math.inf for e in saved)


def test_same_seed_same_sequences_and_text_serialisation():
    llm, condition = _target()
    sampler = direct_token_sampler(llm * condition)
    a = run(SMC(sampler)(10, 0.5, 5, seed=7))
    b = run(SMC(sampler)(10, 0.5, 5, seed=7))
    assert a.contexts == b.contexts and np.array_equal(a.log_weights, b.log_weights)
    texts = a.record.steps[-1]["contents"]
    assert all(isinstance(t, str) for t in texts)


def test_eos_as_token_or_bytes_gives_the_same_run():
    from genlm_lab.control import PromptedLLM

    base = toy_llm()
    lm = base.model
    eos = lm.byte_vocab[-1]
    by_token = PromptedLLM(lm, eos_tokens=[eos])
    by_bytes = PromptedLLM(lm, eos_tokens=[b"<eos>"])
    by_strings = PromptedLLM(lm, eos_byte_strings=[b"<eos>"])
    assert by_token.vocab == by_bytes.vocab == by_strings.vocab
    runs = [run(SMC(direct_token_sampler(p))(5, 0.5, 4, seed=0)) for p in (by_token, by_bytes)]
    assert runs[0].contexts == runs[1].contexts
    assert np.array_equal(runs[0].log_weights, runs[1].log_weights)


def test_smc_rejects_bad_settings():
    llm, condition = _target()
    with pytest.raises(ValueError, match="TokenSampler"):
        SMC(llm)
    with pytest.raises(ValueError, match="vocabulary"):
        SMC(direct_token_sampler(llm), RegexConstraint([b"a"], rb"a"))
    with pytest.raises(ValueError, match="max_tokens"):
        run(SMC(direct_token_sampler(llm))(2, 0.5, 0))


def test_verbosity_prints_a_line_per_step(capsys):
    llm, condition = _target()
    seqs = run(SMC(direct_token_sampler(llm * condition))(4, 0.5, 3, verbosity=1, seed=0))
    lines = [x for x in capsys.readouterr().out.splitlines() if x.startswith("step")]
    assert len(lines) == len(seqs.record.steps) >= 1


def test_extras_read_back_floats_by_key_and_leave_token_text_alone():
    extra = {
        "token": "-Infinity",  # a token's text, not a number
        "logw": -math.inf,
        "logZ": None,
        "factors": {"NaN": -math.inf, "b": 0.5, "c": None},
        "critic": None,
        "killed_by": "NaN",
        "awrs": {"drawn": ["NaN", "Infinity"], "n_draws": 2, "logw": -math.inf},
    }
    record = SMCRecord(n_particles=2, steps=[{"step": 1, "extras": [extra, None]}])
    assert SMCRecord.from_json(record.to_json()).steps[0]["extras"] == [extra, None]


class _NoMask(RegexConstraint):
    """A condition whose full mask must never be computed (the AWRS case: each check is costly)."""

    async def logw_next(self, context):
        raise AssertionError("AWRS under SMC computed the condition's full mask")


def test_awrs_smc_never_masks_the_whole_vocabulary_with_the_condition():
    llm, _ = _target()
    for potential in (llm, llm * llm):  # one factor, and a product
        condition = _NoMask(llm.vocab, PATTERN)
        sampler = AWRS(potential, condition, seed=0)
        seqs = run(SMC(sampler)(6, 0.5, 3, seed=0))  # max_tokens=3 forces EOS too
        assert math.isfinite(seqs.log_ml)
        steps = [e for s in seqs.record.steps for e in s["extras"] if e]
        assert all(set(e["factors"]) >= {"_NoMask"} for e in steps)
        assert all(e["factors"]["_NoMask"] in (0.0, -math.inf) for e in steps)
        context = [llm.vocab[1]]  # "b" matches the pattern: EOS keeps the LM's weight
        expected = run(potential.logw_next(context))[EOS]
        assert run(sampler.logw_eos(context)) == pytest.approx(expected)


# ----------------------------------------------------------------- the default model
@pytest.fixture(scope="module")
def smollm2():
    from genlm_lab.backend import load_model_by_name

    return load_model_by_name("default", backend="hf")


@pytest.mark.slow
async def test_json_schema_run_on_smollm2_gives_only_valid_documents(smollm2):
    import json

    from genlm_lab.control import JsonSchema, PromptedLLM, direct_token_sampler

    schema = {
        "type": "object",
        "properties": {"name": {"type": "string", "maxLength": 10}, "age": {"type": "integer"}},
        "required": ["name", "age"],
        "additionalProperties": False,
    }
    prompt = 'A person as JSON: {"name": "Ada", "age": 36}\nAnother person as JSON: '
    llm = PromptedLLM(smollm2, prompt=prompt, eos_tokens=[b"\n"])
    js = JsonSchema(schema, max_whitespace=1)
    sampler = direct_token_sampler(llm * js.coerce(llm, f=b"".join))
    result = await SMC(sampler)(n_particles=8, ess_threshold=0.5, max_tokens=30, seed=0)
    assert math.isfinite(result.log_ml)
    finished = [(seq, w) for seq, w in result if seq and seq[-1] is EOS and w > -math.inf]
    assert finished, "no particle finished"
    for seq, _ in finished:
        text = b"".join(seq[:-1])
        assert js.validate(text), text
        assert set(json.loads(text)) == {"name", "age"}
    assert all(js.validate(t.encode()) for t in result.decoded_posterior)


@pytest.mark.slow
async def test_iso_date_run_on_smollm2_with_awrs_gives_only_dates(smollm2):
    import regex

    from genlm_lab.control import AWRS, BoolFSA, PromptedLLM

    pattern = r"[0-9]{4}-[0-9]{2}-[0-9]{2}"
    llm = PromptedLLM(
        smollm2, prompt="The Apollo 11 landing date, in ISO format: ", eos_tokens=[b"\n"]
    )
    date = BoolFSA.from_regex(pattern).coerce(llm, f=b"".join)
    result = await SMC(AWRS(llm, date, seed=0))(
        n_particles=8, ess_threshold=0.5, max_tokens=12, seed=0
    )
    assert math.isfinite(result.log_ml)
    assert result.decoded_posterior, "no particle finished"
    for text in result.decoded_posterior:
        assert regex.fullmatch(pattern, text), text


def test_a_particle_that_ends_an_invalid_json_document_dies_with_jsonschema_reason():
    """Forced EOS at the length budget: the schema refuses `[1, 1]`-like arrays (uniqueItems,
    checked only at completion) and the record keeps jsonschema's reason beside the killer."""
    from genlm_lab.control import JsonSchema

    llm = toy_llm(vocab=[b"[", b"1", b",", b"]", b"$"])
    schema = JsonSchema({"type": "array", "items": {"type": "integer"}, "uniqueItems": True})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        sampler = direct_token_sampler(llm * schema.coerce(llm))
        seqs = run(SMC(sampler)(30, 0.0, 6, seed=1, budget=False))  # cut, not refused early
    extras = [e for step in seqs.record.steps for e in step.get("extras", []) if e]
    killed = [e for e in extras if e["killed_by"] == "JsonSchema" and e.get("killed_why")]
    assert killed, [e["killed_by"] for e in extras]
    reasons = {e["killed_why"] for e in killed}
    assert all(
        "keyword uniqueItems" in r or r.startswith("cut at max_tokens inside the array at $")
        for r in reasons
    ), reasons
    assert any(r.startswith("cut at max_tokens inside the array at $, at item") for r in reasons)
    for context, logw in seqs:  # every document that finished alive is valid
        if logw > -math.inf:
            assert schema.validate(b"".join(bytes(t) for t in context[:-1])), context


def test_progress_bar_names_control_smc_and_knows_its_total(capsys, monkeypatch):
    # the bar said "smc_standard: 12/?" for a control.SMC run with max_tokens known
    import tqdm.auto

    made = []
    real = tqdm.auto.tqdm
    monkeypatch.setattr(tqdm.auto, "tqdm", lambda **kw: made.append(kw) or real(**kw))
    llm, condition = _target()
    max_tokens = 6
    seqs = run(
        SMC(direct_token_sampler(llm * condition))(4, 0.5, max_tokens, seed=0, progress=True)
    )
    (kwargs,) = made
    assert kwargs["desc"] == "control.SMC" and kwargs["total"] == max_tokens
    n = len(seqs.record.steps)
    err = capsys.readouterr().err.replace("\r", "\n").strip().splitlines()[-1]
    assert "control.SMC" in err and f"{n}/{n}" in err and "100%" in err  # ended full, not n/6


def test_terminate_when_closes_in_the_same_step_without_correction():
    """The weight of a stopped sequence is the product of the sampler's weights alone."""
    from _toys import TablePotential

    from genlm_lab.control import EOS as END
    from genlm_lab.control import SequenceModel, direct_token_sampler

    vocab = [b"a", b"b"]
    rows = {n: np.log(np.array([0.5, 0.3, 0.2]) * (n + 1)) for n in range(6)}
    target = TablePotential(vocab, lambda ctx: rows[len(ctx)])
    sampler = direct_token_sampler(target, seed=0)

    async def go():
        model = SequenceModel(sampler, max_tokens=50, terminate_when=lambda ctx: len(ctx) >= 2)
        await model.start()
        while not model.done:
            await model.step()
        return model

    model = run(go())
    assert len(model.context) <= 3 and model.context[-1] is END
    if len(model.context) == 3:  # stopped by the condition after two drawn tokens
        # each step's weight is log Z of its row; no logw_eos correction is added
        expected = sum(math.log(np.exp(rows[n]).sum()) for n in range(2))
        assert model.weight == pytest.approx(expected)
    child = model.clone()
    child.context.append(b"x")
    assert child.unit_sampler is model.unit_sampler and b"x" not in model.context
    with pytest.raises(ValueError, match="callable"):
        SequenceModel(sampler, terminate_when=3)


def test_smc_terminate_when_keeps_every_sequence_within_the_condition():
    llm = toy_llm()
    smc = SMC(direct_token_sampler(llm, seed=1))
    seqs = run(smc(8, 0.5, 20, seed=2, terminate_when=lambda ctx: len(ctx) >= 3))
    assert all(len(c) <= 4 and c[-1] is EOS for c in seqs.contexts)
    critic = LengthCritic(llm.vocab)
    assert SMC(direct_token_sampler(llm), critic).critic is critic.to_autobatched()
    assert SMC(direct_token_sampler(llm), critic, autobatch=False).critic is critic


@pytest.mark.parametrize("scheme", ["multinomial", "stratified", "systematic", "residual"])
def test_each_resampling_scheme_keeps_log_ml_unbiased_and_is_recorded(scheme):
    llm, condition = _target()
    target = llm * condition
    exact = sum(run(exact_completions(target, 3)).values())
    sampler = direct_token_sampler(target)
    z, schemes, resamplings = [], set(), 0
    for seed in range(40):
        # ess 1.0: resample after every step whose weights differ, so the scheme matters
        seqs = run(
            SMC(sampler, record_factors=False)(8, 1.0, 3, seed=seed, resampling_method=scheme)
        )
        z.append(math.exp(seqs.log_ml))
        schemes.add(seqs.record.params["resampling_method"])
        resamplings += sum(bool(e["resampled"]) for e in seqs.record.steps)
    assert within(np.array(z), exact), (np.mean(z), exact)
    assert schemes == {scheme} and resamplings >= 20  # most runs resample at step 2


def test_an_unknown_resampling_scheme_is_refused_by_name():
    llm, condition = _target()
    with pytest.raises(ValueError, match="unknown resampling method 'magic'"):
        run(SMC(direct_token_sampler(llm * condition))(4, 0.5, 3, resampling_method="magic"))
