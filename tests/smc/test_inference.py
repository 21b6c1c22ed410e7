"""smc_standard / smc_steer / importance_sampling against exact evidence and posteriors."""

import asyncio
import inspect
import itertools
import math
import warnings

import numpy as np
import pytest

from genlm_lab.smc import (
    Bernoulli,
    Model,
    SMCRecord,
    importance_sampling,
    smc_standard,
    smc_steer,
)
from genlm_lab.smc.examples import Coins, GeometricWalk
from genlm_lab.util import logmeanexp

PROBS = (0.3, 0.6, 0.2, 0.5, 0.7)  # the defaults of Coins
TARGET = 2


def coin_sequences(probs=PROBS, target=TARGET):
    """Every flip sequence with its prior probability, and the exact evidence of the sum."""
    rows = []
    for flips in itertools.product([False, True], repeat=len(probs)):
        p = math.prod(q if f else 1 - q for f, q in zip(flips, probs, strict=True))
        rows.append((flips, p))
    return rows, sum(p for flips, p in rows if sum(flips) == target)


def exact_flip_marginals(probs=PROBS, target=TARGET):
    rows, z = coin_sequences(probs, target)
    return [sum(p for f, p in rows if sum(f) == target and f[i]) / z for i in range(len(probs))]


def geometric_walk_exact(p=0.35, y=3, cap=60):
    """Evidence and posterior of GeometricWalk's x by summation."""
    prior = [p * (1 - p) ** x for x in range(cap)] + [(1 - p) ** cap]
    like = [(1 / (x + 2)) * (1 - 1 / (x + 2)) ** y for x in range(cap + 1)]
    joint = [a * b for a, b in zip(prior, like, strict=True)]
    z = sum(joint)
    return z, [j / z for j in joint]


def _within_standard_errors(estimates, exact, k=4.0):
    estimates = np.asarray(estimates)
    se = estimates.std(ddof=1) / math.sqrt(estimates.size)
    assert abs(estimates.mean() - exact) <= k * se + 1e-12, (estimates.mean(), exact, se)


@pytest.mark.parametrize("method", ["multinomial", "stratified", "systematic", "residual"])
async def test_coin_evidence_and_marginals_match_enumeration(method):
    _, z = coin_sequences()
    marginals = exact_flip_marginals()
    estimates, pooled = [], np.zeros(len(marginals))
    runs = 25
    for seed in range(runs):
        result = await smc_standard(Coins(), 200, resampling_method=method, seed=seed)
        estimates.append(math.exp(result.log_ml))
        for particle, w in zip(result, result.normalized_weights, strict=True):
            pooled += w * np.array(particle.flips, dtype=float) / runs
            if w > 0:
                assert sum(particle.flips) == 2
    _within_standard_errors(estimates, z)
    assert pooled == pytest.approx(marginals, abs=0.03)


async def test_exact_proposal_gives_every_particle_weight_log_z():
    _, z = coin_sequences()
    result = await smc_standard(Coins(optimal=True), 50, seed=3)
    assert result.log_weights == pytest.approx(np.full(50, math.log(z)), abs=1e-12)
    assert result.log_ml == pytest.approx(math.log(z), abs=1e-12)
    assert result.ess == pytest.approx(50)


async def test_geometric_walk_evidence_and_posterior_match_summation():
    z, posterior = geometric_walk_exact()
    estimates, pooled = [], np.zeros(4)
    runs = 20
    for seed in range(runs):
        result = await smc_standard(GeometricWalk(), 300, ess_threshold=0.7, seed=seed)
        estimates.append(math.exp(result.log_ml))
        chart = result.posterior
        pooled += np.array([chart[str(x)] for x in range(4)]) / runs
    _within_standard_errors(estimates, z)
    assert pooled == pytest.approx(posterior[:4], abs=0.03)


async def test_ess_is_inverse_sum_of_squared_normalised_weights():
    result = await smc_standard(GeometricWalk(), 64, ess_threshold=0.0, seed=1)
    w = np.exp(result.log_weights - np.logaddexp.reduce(result.log_weights))
    assert result.ess == pytest.approx(1.0 / np.sum(w**2))
    for entry in result.record.steps:
        lw = np.array(entry["log_weights"])
        w = np.exp(lw - np.logaddexp.reduce(lw))
        assert entry["ess"] == pytest.approx(1.0 / np.sum(w**2))


async def test_log_ml_is_logmeanexp_without_resampling():
    for run in (
        smc_standard(GeometricWalk(), 40, ess_threshold=0.0, seed=2),
        importance_sampling(GeometricWalk(), 40, seed=2),
    ):
        result = await run
        assert not any(e["resampled"] for e in result.record.steps)
        lw = result.log_weights
        assert result.log_ml == pytest.approx(np.log(np.mean(np.exp(lw))))


async def test_log_ml_equals_product_of_incremental_means_across_resampling():
    result = await smc_standard(GeometricWalk(), 32, ess_threshold=1.0, seed=4)
    steps = result.record.steps
    assert sum(e["resampled"] for e in steps) >= 2
    normalised = np.full(32, 1 / 32)
    log_z = 0.0
    for entry in steps:
        inc = np.array(entry["weight_increments"])
        log_z += math.log(np.sum(normalised * np.exp(inc)))
        assert entry["log_ml"] == pytest.approx(log_z)
        lw = np.log(normalised) + inc
        normalised = np.exp(lw - np.logaddexp.reduce(lw))
        if entry["resampled"]:
            normalised = np.full(32, 1 / 32)
    assert result.log_ml == pytest.approx(log_z)


async def test_weights_are_previous_weights_plus_increments():
    # twisted, so that weights differ before the end and the resampling branch below runs
    result = await smc_standard(TwistedCoins(), 16, ess_threshold=0.9, seed=5)
    previous = np.zeros(16)
    assert any(e["resampled"] for e in result.record.steps)
    for entry in result.record.steps:
        got = np.array(entry["log_weights"])
        assert got == pytest.approx(previous + np.array(entry["weight_increments"]))
        if entry["resampled"]:
            previous = np.full(16, logmeanexp(got))
        else:
            previous = got


class AlwaysFails(Model):
    async def step(self):
        self.condition(False)


async def test_all_particles_dead_gives_minus_inf_and_a_warning_not_nan():
    with pytest.warns(RuntimeWarning, match="every particle has weight zero"):
        result = await smc_standard(AlwaysFails(), 8, seed=0)
    assert result.log_ml == -math.inf
    assert result.ess == 0.0
    assert not np.isnan(result.normalized_weights).any()
    assert result.record.final["status"] == "all_dead"


async def test_seeded_runs_repeat_exactly():
    a = await smc_standard(Coins(), 20, seed=11)
    b = await smc_standard(Coins(), 20, seed=11)
    assert [str(p) for p in a] == [str(p) for p in b]
    assert a.log_ml == b.log_ml


async def test_smc_steer_evidence_matches_enumeration_and_constraint_holds():
    _, z = coin_sequences()
    estimates = []
    for seed in range(30):
        result = await smc_steer(Coins(), 10, 3, seed=seed)
        estimates.append(math.exp(result.log_ml))
        assert all(
            sum(p.flips) == 2
            for p, w in zip(result, result.normalized_weights, strict=True)
            if w > 0
        )
    _within_standard_errors(estimates, z)


async def test_model_passed_in_is_left_unchanged():
    model = Coins()
    await smc_standard(model, 5, seed=0)
    assert model.flips == [] and model.weight == 0.0


async def test_invalid_settings_raise_value_error():
    with pytest.raises(ValueError, match="n_particles"):
        await smc_standard(Coins(), 0)
    with pytest.raises(ValueError, match="ess_threshold"):
        await smc_standard(Coins(), 4, ess_threshold=2)
    with pytest.raises(ValueError, match="resampling method"):
        await smc_standard(Coins(), 4, resampling_method="nope")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="n_beam"):
            await smc_steer(Coins(), 4, 0)


class TwistedCoins(Coins):
    """Coins with a heuristic twist towards the target count; the target is unchanged."""

    async def step(self):
        await super().step()
        if not self.finished:
            self.twist(-abs(sum(self.flips) - self.target * len(self.flips) / len(self.probs)))


async def test_twists_steer_but_leave_evidence_and_posterior_exact():
    _, z = coin_sequences()
    marginals = exact_flip_marginals()
    estimates, pooled = [], np.zeros(len(marginals))
    runs = 25
    for seed in range(runs):
        result = await smc_standard(TwistedCoins(), 200, ess_threshold=0.9, seed=seed)
        assert all(p.twist_amount == 0 for p in result)
        estimates.append(math.exp(result.log_ml))
        for particle, w in zip(result, result.normalized_weights, strict=True):
            pooled += w * np.array(particle.flips, dtype=float) / runs
    _within_standard_errors(estimates, z)
    assert pooled == pytest.approx(marginals, abs=0.03)


class SetsWeight(Model):
    """Assigns `weight` directly (bypassing score's check) at its second step."""

    def __init__(self, value: float) -> None:
        super().__init__()
        self.value, self.t = value, 0

    async def step(self):
        self.t += 1
        if self.t == 2:
            self.weight = self.value
        if self.t == 3:
            self.finish()

    def string_for_serialization(self) -> str:
        return f"t={self.t}"


@pytest.mark.parametrize("value", [math.nan, math.inf])
@pytest.mark.parametrize(
    "run",
    [
        lambda m: smc_standard(m, 3, ess_threshold=0.0, seed=0),
        lambda m: smc_standard(m, 3, ess_threshold=0.5, seed=0),
        lambda m: smc_standard(m, 3, ess_threshold=1.0, seed=0),
        lambda m: importance_sampling(m, 3, seed=0),
        lambda m: smc_steer(m, 3, 2, seed=0),
    ],
)
async def test_a_nan_or_inf_weight_raises_naming_the_particle(run, value):
    # Left alone, NaN read as weight zero in log_ml (a run "finished" with
    # log_ml -inf) and smc_steer silently returned no particle at all.
    with pytest.raises(ValueError, match=r"particle 0 \('t=2'\) has log-weight .* after step 2"):
        await run(SetsWeight(value))


async def test_a_nan_weight_leaves_the_record_marked_interrupted(tmp_path):
    path = tmp_path / "run.jsonl"
    with pytest.raises(ValueError, match="log-weight nan"):
        await smc_standard(SetsWeight(math.nan), 2, json_file=path, seed=0)
    record = SMCRecord.load(path)
    assert record.final["status"] == "interrupted"
    assert len(record.steps) == 1


class Sleeps(Model):
    """Sleeps in start and step; keeps every coroutine it hands to inference."""

    made: list = []

    def start(self):
        coro = asyncio.sleep(0.01)
        Sleeps.made.append(coro)
        return coro

    def step(self):
        coro = self._step()
        Sleeps.made.append(coro)
        return coro

    async def _step(self):
        await asyncio.sleep(0.01)
        self.finish()


@pytest.mark.parametrize(
    "run", [lambda m: smc_standard(m, 4, seed=0), lambda m: smc_steer(m, 2, 2, seed=0)]
)
@pytest.mark.parametrize("ticks", [1, 2, 3, 4])
async def test_cancelling_a_run_leaves_no_coroutine_unawaited(run, ticks):
    # Particle tasks cancelled before they ran left their start()/step()
    # coroutines never started ("RuntimeWarning: coroutine ... was never awaited").
    Sleeps.made = []
    task = asyncio.ensure_future(run(Sleeps()))
    for _ in range(ticks):
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert Sleeps.made
    states = {inspect.getcoroutinestate(c) for c in Sleeps.made}
    assert states == {inspect.CORO_CLOSED}


class TwistsLastStep(Model):
    """Twists in its only step and ends through `done_stepping`, not `finish()`.

    Nothing is conditioned, so the exact evidence is 1 and every weight 0.
    """

    def __init__(self, finish_by: str) -> None:
        super().__init__()
        self.finish_by, self.t = finish_by, 0

    def done_stepping(self) -> bool:
        return self.t >= 1 if self.finish_by == "done_stepping" else self.finished

    async def step(self):
        self.t += 1
        self.twist(2.0 if await self.sample(Bernoulli(0.5)) else -2.0)
        if self.finish_by == "flag":
            self.finished = True
        elif self.finish_by == "twist_after_finish":
            self.finish()
            self.twist(1.0)


@pytest.mark.parametrize("finish_by", ["done_stepping", "flag", "twist_after_finish"])
@pytest.mark.parametrize(
    "run",
    [
        lambda m: smc_standard(m, 6, seed=0),
        lambda m: importance_sampling(m, 6, seed=0),
        lambda m: smc_steer(m, 3, 2, seed=0),
    ],
)
async def test_a_twist_on_the_last_step_is_removed_from_the_final_weights(run, finish_by):
    # A twist is divided back out "before the next step"; a particle that ends
    # without finish() has no next step, and its twist stayed in log_ml.
    result = await run(TwistsLastStep(finish_by))
    assert result.log_weights == pytest.approx(np.zeros(len(result)))
    assert result.log_ml == pytest.approx(0.0)
    assert result.record.steps[-1]["log_weights"] == pytest.approx(
        np.zeros(len(result.record.steps[-1]["log_weights"]))
    )
    assert result.record.final["log_ml"] == pytest.approx(0.0)
    assert all(p.twist_amount == 0 for p in result)


class DiesInStart(Model):
    async def start(self):
        self.condition(False)

    async def step(self):
        raise AssertionError("a particle of weight zero must not step")


@pytest.mark.parametrize(
    "run",
    [
        lambda m: smc_standard(m, 3, seed=0),
        lambda m: importance_sampling(m, 3, seed=0),
        lambda m: smc_steer(m, 3, 2, seed=0),
    ],
)
async def test_all_particles_dead_in_start_is_reported_as_all_dead(run):
    # It ended silently with status "finished" (and log_ml -inf), unlike a run
    # whose particles all die in a step.
    with pytest.warns(RuntimeWarning, match="every particle has weight zero.*before the first"):
        result = await run(DiesInStart())
    assert result.log_ml == -math.inf
    assert result.record.final["status"] == "all_dead"
    assert result.record.final["n_steps"] == 0 and result.record.steps == []


class SyncStep(Model):
    def step(self):  # forgot `async`
        self.finish()


class SyncStart(Model):
    def start(self):
        pass

    async def step(self):
        self.finish()


@pytest.mark.parametrize("model", [SyncStep, SyncStart])
@pytest.mark.parametrize(
    "run", [lambda m: smc_standard(m, 2, seed=0), lambda m: smc_steer(m, 2, 2, seed=0)]
)
async def test_a_step_or_start_that_is_not_async_is_named(run, model):
    # It failed with "object NoneType can't be used in 'await' expression".
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # and no coroutine is left unawaited
        with pytest.raises(TypeError, match=rf"{model.__name__}\.(step|start)\(\).*async def"):
            await run(model())


class ForgetsSuperInit(Model):
    def __init__(self):
        self.flips = []

    async def step(self):
        self.finish()


@pytest.mark.parametrize(
    ("model", "match"),
    [
        (ForgetsSuperInit(), r"ForgetsSuperInit.*super\(\).__init__\(\)"),
        (Coins, r"the class Coins.*instance.*Coins\("),
    ],
)
@pytest.mark.parametrize(
    "run",
    [
        lambda m: smc_standard(m, 2, seed=0),
        lambda m: importance_sampling(m, 2, seed=0),
        lambda m: smc_steer(m, 2, 2, seed=0),
    ],
)
async def test_a_model_that_is_not_set_up_is_named_with_the_fix(run, model, match):
    # Both failed with "AttributeError: ... has no attribute 'weight'".
    with pytest.raises(TypeError, match=match):
        await run(model)


class _RecordingBar:
    """Stands in for tqdm.auto.tqdm: keeps the counts and postfixes a run sets."""

    made: list = []

    def __init__(self, *args, **kwargs):
        self.kwargs, self.n, self.postfixes, self.closed = kwargs, 0, [], False
        _RecordingBar.made.append(self)

    def update(self, n=1):
        self.n += n

    def set_postfix(self, ordered_dict=None, refresh=True, **kw):
        self.postfixes.append(kw)

    def close(self):
        self.closed = True


@pytest.fixture
def recording_bar(monkeypatch):
    import tqdm.auto

    _RecordingBar.made = []
    monkeypatch.setattr(tqdm.auto, "tqdm", _RecordingBar)
    return _RecordingBar.made


@pytest.mark.parametrize("run", [smc_standard, importance_sampling])
async def test_progress_bar_counts_steps_and_shows_alive_and_ess(run, recording_bar):
    result = await run(Coins(), 8, seed=3, progress=True)
    (bar,) = recording_bar
    final = result.record.final
    assert bar.kwargs["desc"] == run.__name__ and bar.closed
    assert bar.n == final["n_steps"] == len(result.record.steps)
    steps = [p for p in bar.postfixes if "alive" in p]
    assert [float(p["ess"]) for p in steps] == pytest.approx(
        [s["ess"] for s in result.record.steps], abs=0.05
    )
    assert bar.postfixes[-1]["status"] == final["status"] == "finished"


@pytest.mark.parametrize("progress", [False, None])
async def test_no_progress_prints_nothing_outside_a_notebook(progress, capsys, recording_bar):
    await smc_standard(Coins(), 4, seed=0, progress=progress)
    out = capsys.readouterr()
    assert out.out == "" and out.err == "" and recording_bar == []


async def test_progress_true_draws_a_text_bar_in_a_terminal(capsys):
    result = await smc_standard(Coins(), 4, seed=0, progress=True)
    err = capsys.readouterr().err
    assert "smc_standard" in err and "alive=" in err and "ess=" in err
    assert f"{result.record.final['n_steps']}step" in err
