"""`SMC`: sequential Monte Carlo over a token sampler, run on `genlm_lab.smc`'s machinery.

Each particle is a `SequenceModel`: a token list grown by one properly
weighted draw of the unit sampler per step. Its weight starts at
`sampler.start_weight()` (the target's weight of the empty prefix) and gains
each draw's log-weight, so the final weight of a sequence y ending in EOS is
an unbiased estimate of the target's `complete(y)`. `genlm_lab.smc.smc_standard`
resamples the particles when the ESS drops, records every step
(`SMCRecord`, observers, `ParticleView` work unchanged) and stops when all
are done.

- `max_tokens` counts the EOS: a particle that has `max_tokens - 1` tokens
  gets EOS appended with weight `sampler.logw_eos(context)`, the importance
  correction that makes it properly weighted for the target restricted to
  sequences of that length (genlm-control #145); without it the posterior
  would favour whatever happens to fit.
- A critic multiplies the target by `critic.score(context)`: it twists each
  step (a heuristic that steers resampling and is divided out again) and
  becomes real weight when the particle ends. With `ess_threshold == 0` no
  resampling happens, so it is only scored at the end. A critic of -inf
  kills the particle.
- With a `MultiTokenUnitSampler` each step appends a whole unit (a list of
  tokens), so `max_tokens` counts units; a unit that ends with EOS is stored
  as the unit, then EOS. The critic scores the context of units as it is.
- Budgets (on by default, `budget=False` turns them off): the run hands
  `max_tokens` to every factor of the target that can finish (regexes,
  automata, Lark grammars, JSON schemas, Python regexes, products of them,
  coerced or not). A token after which the text could no longer end within
  the tokens left (EOS included) gets weight zero at once: AWRS rejects it
  and draws again, another sampler's particle dies. Nothing that could end
  in time is refused (exact for automata, a sound bound elsewhere:
  `inference/budgets.py`, `constraint/budget/`), so the target
  stays exactly the constraint's, within `max_tokens`. A JSON schema's
  finish also guides the run towards an ending in time, by a twist that is
  divided out as the text ends (`budgets.py`; AWRS's proposal carries part
  of it, another sampler's weights all): a guess that steers, never one
  that refuses.
- A step weight of -inf (a constraint that admits no token) ends that
  particle with weight -inf; the others go on. When all are dead the run
  stops with `log_ml == -inf` and status "all_dead".

Every step the particle (`particle.py`) also sets `step_extras` (what the draw was, the
weight each factor of the target gave it, which factor killed it, AWRS's
trace), which `Run.emit` puts into the record entry's "extras" for the views.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from genlm_lab.control.errors import BudgetTooSmall
from genlm_lab.control.inference.budgets import with_budget
from genlm_lab.control.inference.csmc import RetainedTokenSampler, check_retained
from genlm_lab.control.inference.particle import SequenceModel, UnitSampler
from genlm_lab.control.inference.sequences import Sequences
from genlm_lab.control.potential.base import Potential, factor_names
from genlm_lab.smc import PrintingObserver, RunOptions, csmc_standard, smc_standard

__all__ = ["SMC", "BudgetTooSmall", "SequenceModel", "UnitSampler", "factor_names"]


def _unfinishable_sentence(lines: list[str]) -> str:
    """The "unfinishable" alarm: which values the budget could not see the end of."""
    return (
        f"{'; '.join(lines)}: where these values were being written the budget could not "
        "tell whether the text ends in time, so such particles may still be cut at max_tokens "
        "(show one finished example in the prompt, or simplify the pattern or format)."
    )


class SMC:
    """Sequential Monte Carlo with a token sampler and an optional critic (genlm-control's `SMC`).

    The sequences are properly weighted for `unit_sampler.target * critic`,
    restricted to sequences of at most `max_tokens` tokens (EOS included).

    Args:
        unit_sampler: a `TokenSampler` (direct, AWRS, eager, top-k).
        critic: a potential over the same vocabulary, or None.
        record_factors: record the weight each factor of the target gives the
            drawn token in every step's extras (extra `logw_next` calls, which
            hit the LM's cache).
        autobatch: wrap the critic so that concurrent particles' calls go out
            as one batch (the sampler wraps its own potentials).

    Raises:
        ValueError: if unit_sampler is no TokenSampler, or the critic is no
            Potential or has another vocabulary.
    """

    def __init__(
        self,
        unit_sampler: UnitSampler,
        critic: Potential | None = None,
        record_factors: bool = True,
        autobatch: bool = True,
    ) -> None:
        if not isinstance(unit_sampler, UnitSampler):
            raise ValueError(
                f"unit_sampler must be a TokenSampler (e.g. direct_token_sampler(potential)), "
                f"got {type(unit_sampler).__name__}"
            )
        if critic is not None:
            if not isinstance(critic, Potential):
                raise ValueError(f"critic must be a Potential, got {type(critic).__name__}")
            target = unit_sampler.target
            if critic.vocab != target.vocab:
                raise ValueError(
                    f"the critic {critic.name} ({len(critic.vocab)} tokens) has another vocabulary "
                    f"than the sampler's target {target.name} ({len(target.vocab)} tokens); "
                    "coerce it first, e.g. `critic.coerce(llm, f=b''.join)`"
                )
        self.unit_sampler = unit_sampler
        self.critic = critic.to_autobatched() if autobatch and critic is not None else critic
        self.record_factors = record_factors
        #: The last run's budget counts per factor (kept, refused, unproven); {} if none ran.
        self.budget_stats: dict[str, dict[str, int]] = {}

    async def __call__(
        self,
        n_particles: int,
        ess_threshold: float,
        max_tokens: int,
        verbosity: int = 0,
        json_path: str | os.PathLike | None = None,
        resampling_method: str = "multinomial",
        terminate_when: Callable[[list[Any]], bool] | None = None,
        budget: bool = True,
        retained_sequence: Sequence[Any] | None = None,
        **options: Any,
    ) -> Sequences:
        """Run SMC and return the final particles as `Sequences` (`.record` holds the history).

        Args:
            n_particles: number of particles.
            ess_threshold: resample when the ESS falls below this fraction of n_particles.
            max_tokens: maximum sequence length, EOS included (forced at the boundary).
            verbosity: 1 prints a line per step.
            json_path: write the `SMCRecord` there as the run goes (JSON lines;
                `RunOptions.json_file`).
            resampling_method: "multinomial", "stratified", "systematic" or "residual".
            terminate_when: a `context -> bool` stop condition: EOS closes the
                sequence in the step it holds, with no weight correction.
            budget: hand `max_tokens` to every factor that can finish, so that a
                token after which the text cannot end in time gets weight zero
                at once (AWRS draws again); the target is unchanged. False:
                particles are cut at `max_tokens` instead. `budget_stats`
                holds the run's counts.
            retained_sequence: run conditional SMC (`genlm_lab.smc.csmc_standard`):
                particle 0 follows these tokens (EOS last, or a prefix it then
                continues freely) and survives every resampling, which is
                multinomial. One sweep of `ParticleGibbs`; needs a sampler whose
                weight is a function of the token (`inference/csmc.py`).
            **options: the other options of `genlm_lab.smc.RunOptions`, as keywords
                (observers, seed, progress, profile, alarms); a profile here also
                times each potential's methods by name, the sampler and the critic.

        Warns:
            AllParticlesDied: once, when every particle died, with the commonest
                reason (`Sequences.deaths` lists them all).
        """
        run_options = RunOptions.of("SMC.__call__", options, json_file=json_path)
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, (int, np.integer)):
            raise ValueError(f"max_tokens must be a positive int, got {max_tokens!r}")
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be a positive int, got {max_tokens}")
        sampler = self.unit_sampler
        if retained_sequence is not None:
            if resampling_method != "multinomial":
                raise ValueError(
                    f"conditional SMC (retained_sequence=) resamples multinomially, as its "
                    f"invariance needs; resampling_method={resampling_method!r} is not supported"
                )
            retained = await check_retained(
                sampler.target, self.critic, retained_sequence, int(max_tokens)
            )
            sampler = RetainedTokenSampler(sampler, retained)
        sampler, guard = with_budget(sampler, int(max_tokens)) if budget else (sampler, None)
        # what was stuck before this run (its own start check below may meet a new one)
        stuck_before = set(guard.unfinishable()) if guard is not None else set()
        refused = await guard.refuser([]) if guard is not None else None
        if refused is not None:  # no text at all fits: say so before every particle dies
            least = guard.needed_at_least([], refused[1])
            needs = f"; it needs at least {least}" if least is not None else ""
            warnings.warn(
                f"{refused[1]} cannot end any text within max_tokens={int(max_tokens)} "
                f"(EOS included{needs}), so every particle starts dead: raise max_tokens, or pass "
                "budget=False to let particles run until they are cut",
                BudgetTooSmall,
                stacklevel=2,
            )
        model = SequenceModel(
            sampler,
            self.critic,
            int(max_tokens),
            twist_with_critic=float(ess_threshold) > 0,
            record_factors=self.record_factors,
            terminate_when=terminate_when,
        )
        observers = run_options.observers
        observers = list(observers) if not hasattr(observers, "on_step") else [observers]
        if verbosity > 0:
            observers.append(PrintingObserver())
        run_kwargs = replace(run_options, observers=observers).as_kwargs()
        if retained_sequence is not None:
            result = await csmc_standard(model, n_particles, ess_threshold, **run_kwargs)
        else:
            result = await smc_standard(
                model,
                n_particles,
                ess_threshold=ess_threshold,
                resampling_method=resampling_method,
                **run_kwargs,
            )
        self.budget_stats = guard.stats() if guard is not None else {}
        record = result.record
        stuck = [x for x in guard.unfinishable() if x not in stuck_before] if guard else []
        if stuck and record is not None:  # the FinishWarning, also as the run's alarm
            step = int(record.steps[-1]["step"]) if record.steps else 0
            record.alarms.append((step, "unfinishable", _unfinishable_sentence(stuck)))
        status = record.final["status"] if record is not None and record.final else "finished"
        return Sequences(
            [p.context for p in result],
            [p.weight for p in result],
            record=record,
            status=status,
        )

    async def cleanup(self) -> None:
        """Release the sampler's and the critic's caches."""
        await self.unit_sampler.cleanup()
        if self.critic is not None:
            await self.critic.cleanup()

    def __repr__(self) -> str:
        critic = "" if self.critic is None else f", critic={self.critic.name}"
        return f"SMC({self.unit_sampler!r}{critic})"
