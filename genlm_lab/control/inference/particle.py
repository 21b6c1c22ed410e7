"""`SequenceModel`: one particle of `SMC`, a token list grown by one weighted draw per step.

Its weight starts at `sampler.start_weight()` and gains each draw's
log-weight. At `max_tokens - 1` tokens it gets EOS with weight
`sampler.logw_eos(context)`; a critic twists each step and becomes real
weight at the end; a step of weight -inf kills it, and it keeps the factor
and the reason (`step_extras["killed_by"]`, `["killed_why"]`). Every step it
sets `step_extras` (the draw, each factor's weight of it, AWRS's trace),
which the record keeps for the views; with a profiler it times each
potential's methods by factor name.
"""

from __future__ import annotations

import asyncio
import copy
import math
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from genlm_lab.control.core.constant import EOS, EndOfSequence
from genlm_lab.control.core.tokens import join_bytes, token_label
from genlm_lab.control.core.util import flatten_units
from genlm_lab.control.inference.budgets import Budget
from genlm_lab.control.inference.profiling import time_factors
from genlm_lab.control.potential.base import Potential, factor_names, factor_temperatures
from genlm_lab.smc import Model

__all__ = ["SequenceModel", "UnitSampler"]


@runtime_checkable
class UnitSampler(Protocol):
    """What `SMC` needs of a token sampler; every `TokenSampler` has it.

    SMC owns this small contract instead of importing the samplers, so the
    samplers may offer `.smc(...)` without an import circle.
    """

    target: Potential

    async def start_weight(self) -> float:
        """Log-weight of the empty sequence under the target."""

    async def logw_eos(self, context: Sequence[Any]) -> float:
        """Log-weight of ending after `context` (EOS forced at `max_tokens`)."""

    async def sample(self, context: Sequence[Any]) -> tuple[Any, float, float]:
        """A properly weighted `(token, logw, logp)` after `context`."""

    async def cleanup(self) -> None:
        """Release caches and background work."""


def _explainer(factor: Any, depth: int = 3) -> Callable[[Any], str | None] | None:
    """The `explain(text)` of a factor or of the constraint it wraps (coerced, budgeted)."""
    explain = getattr(factor, "explain", None)
    if callable(explain) or depth == 0:
        return explain if callable(explain) else None
    for attr in ("grammar", "schema", "potential", "inner"):
        inner = getattr(factor, attr, None)
        if inner is not None and inner is not factor:
            found = _explainer(inner, depth - 1)
            if found is not None:
                return found
    return None


class SequenceModel(Model):
    """One particle: a token sequence extended by the unit sampler, with forced EOS at max_tokens.

    Args:
        unit_sampler: draws each token with its weight.
        critic: an optional potential that reweights (and twists) the sequences.
        max_tokens: maximum length, EOS included.
        twist_with_critic: twist by the critic every step (else only score at the end).
        record_factors: compute each factor's weight of the drawn token for `step_extras`.
        terminate_when: a `context -> bool` stop condition, asked after each
            drawn token; when it holds, EOS closes the sequence in the same step
            with no weight correction (the condition becomes part of the target).
    """

    progress_label = "control.SMC"  # the bar names what the user ran, not smc_standard
    profile_label = "sampler"  # a profiled run charges the particle's own step code to this

    def __init__(
        self,
        unit_sampler: UnitSampler,
        critic: Potential | None = None,
        max_tokens: float = math.inf,
        twist_with_critic: bool = True,
        record_factors: bool = True,
        terminate_when: Callable[[list[Any]], bool] | None = None,
    ) -> None:
        super().__init__()
        if terminate_when is not None and not callable(terminate_when):
            raise ValueError(f"terminate_when must be callable, got {terminate_when!r}")
        self.terminate_when = terminate_when
        self.unit_sampler = unit_sampler
        self.critic = critic
        self.max_tokens = max_tokens
        self.max_steps = max_tokens  # one token per step: the progress bar's total
        self.twist_with_critic = twist_with_critic
        target = getattr(unit_sampler, "target", None)  # None: a duck-typed sampler
        self.record_factors = record_factors and target is not None
        self.factors = target.factors() if target is not None else []
        self.names = factor_names(target) if target is not None else []
        self.temperatures = factor_temperatures(target) if target is not None else {}  # views
        self.context: list[Any] = []
        self.step_extras: dict | None = None
        #: Set by `csmc_standard` on the retained slot: draws then follow the sampler's
        #: `retained_draw` (a `RetainedTokenSampler`'s path) until the path ends.
        self.is_retained = False

    def immutable_properties(self) -> set[str]:
        return {"unit_sampler", "critic", "factors", "names", "temperatures"}

    def __deepcopy__(self, memo: dict) -> SequenceModel:
        # Tokens and extras are never mutated: a new context list is all a copy needs.
        clone = copy.copy(self)
        clone.context = list(self.context)
        return clone

    def clone(self) -> SequenceModel:
        """A copy sharing the sampler and critic, with its own context and weights."""
        return self.__deepcopy__({})

    @property
    def done(self) -> bool:
        """Whether the particle has finished (genlm-control's name for `done_stepping()`)."""
        return self.done_stepping()

    async def start(self) -> None:
        """Weigh the empty prefix; a start weight of -inf from a budget (no text can end
        in time) starts the particle dead, as the budget's warning says.

        Raises:
            ValueError: if the target itself gives the empty sequence weight zero:
                no sequence can be drawn from it.
        """
        weight = await self.unit_sampler.start_weight()
        target = getattr(self.unit_sampler, "target", None)
        if weight == -math.inf and (target is None or await target.prefix([]) == -math.inf):
            raise ValueError(
                "Start weight is -inf: the target gives the empty sequence weight zero "
                "(its prefix([]) is -inf), so no sequence can be sampled from it"
            )
        self.score(weight)

    async def _factor_weights(
        self, context: list[Any], token: Any, forced: bool
    ) -> dict[str, float | None]:
        """The log-weight each factor gives `token` after `context` (None where it fails).

        A forced EOS asks boolean factors one `score` (their prefix weight of a
        live context is 0) rather than a whole mask.
        """

        async def one(f: Potential) -> float:
            if forced and f.is_boolean:
                return float(await f.score([*context, token]))
            return float((await f.logw_next(context))[token])

        values = await asyncio.gather(*(one(f) for f in self.factors), return_exceptions=True)
        return {
            name: None if isinstance(v, BaseException) else v
            for name, v in zip(self.names, values, strict=True)
        }

    def _killer(self, factors: dict[str, float | None]) -> str:
        """The first factor that gave the drawn token weight zero ("sampler" if none did)."""
        for name, value in factors.items():
            if value == -math.inf:
                return name
        return "sampler"

    async def step(self) -> None:
        """Draw one token (EOS when the length budget is spent), weigh it, apply the critic."""
        context = list(self.context)
        forced = len(context) >= self.max_tokens - 1
        info: dict = {}
        if forced:
            eos = getattr(getattr(self.unit_sampler, "target", None), "eos", EOS)
            token, logw = eos, await self.unit_sampler.logw_eos(context)
        else:
            retained = (
                getattr(self.unit_sampler, "retained_draw", None) if self.is_retained else None
            )
            draw = retained(context) if retained is not None else None
            if draw is not None:  # the retained path's next token, weighed as if drawn
                token, logw, _, info = await self.unit_sampler.sample_with_info(context, draw=draw)
            elif hasattr(self.unit_sampler, "sample_with_info"):
                token, logw, _, info = await self.unit_sampler.sample_with_info(context)
            else:  # a sampler with only genlm-control's `sample`
                (token, logw, _), info = await self.unit_sampler.sample(context), {}
        logw = float(logw)
        factors: dict[str, float | None] = {}
        if info.get("factors") is not None and len(info["factors"]) == len(self.names):
            factors = dict(zip(self.names, info["factors"], strict=True))
        elif self.record_factors and not isinstance(token, list):  # a unit's factors: not known
            factors = await self._factor_weights(flatten_units(context), token, forced)
        extras: dict[str, Any] = {
            "token": token_label(token),
            "logw": logw,
            "logZ": None if forced else logw,
            "factors": factors,
            "critic": None,
            "killed_by": None,
        }
        if forced:
            extras["cut"] = True
        if not context and self.temperatures:  # once per run: the first step of each particle
            extras["temperatures"] = dict(self.temperatures)
        for key in ("awrs", "ensemble"):  # AWRS's trace; an ensemble's models' shares of the token
            if key in info:
                extras[key] = info[key]
        self.step_extras = extras
        self.score(logw)
        if isinstance(token, list) and token and isinstance(token[-1], EndOfSequence):
            # a unit that ended early: store the unit, then EOS, so finished contexts end with EOS
            if len(token) > 1:
                self.context.append(token[:-1])
            token = token[-1]
        self.context.append(token)
        if (
            self.terminate_when is not None
            and self.weight > -math.inf
            and not isinstance(token, EndOfSequence)
            and self.terminate_when(self.context)
        ):
            token = getattr(getattr(self.unit_sampler, "target", None), "eos", EOS)
            budget = getattr(self.unit_sampler, "budget", None)
            if isinstance(budget, Budget):  # divide a guide's twist out as the text ends
                untwist = budget.untwist(list(self.context))
                extras["logw"] += untwist
                self.score(untwist)
            self.context.append(token)  # no other weight: the stop condition is in the target
        if self.weight == -math.inf:
            if info.get("no_mass"):
                extras["killed_by"] = await self._no_mass(flatten_units(context))
                extras["killed_why"] = (
                    f"no token has weight under every factor after {len(context)} tokens"
                )
            else:
                refused = (info.get("budget") or {}).get("refused_by")
                extras["killed_by"] = refused if refused in self.names else self._killer(factors)
                extras["killed_why"] = self._why(extras["killed_by"], token, forced, info)
            extras["killed_budget"] = self._budget_of(extras["killed_by"])
            self.finish()
            return
        if forced and any(getattr(f, "is_boolean", False) for f in self.factors):
            extras["complete"] = True  # the constraints accept the text as it was cut: valid
        ends = isinstance(token, EndOfSequence) or len(self.context) >= self.max_tokens
        if self.critic is not None and (self.twist_with_critic or ends):
            critic = float(await self.critic.score(self.context))
            extras["critic"] = critic
            if critic == -math.inf:
                extras["killed_by"] = "critic"
                extras["killed_why"] = f"the critic {self.critic.name} scored it -inf"
                self.score(critic)
                self.finish()
                return
            if ends:
                self.finish()  # removes the twist of earlier steps (none is left here)
                self.score(critic)  # at the end the critic's weight becomes real
                return
            self.twist(critic)
        if ends:
            self.finish()

    def _budget_of(self, name: str | None) -> int | None:
        """The tokens factor `name` was held to (the run's budget, or its `WithinBudget`)."""
        budget = getattr(self.unit_sampler, "budget", None)
        if budget is not None and any(n == name for _, n, _ in getattr(budget, "factors", ())):
            return int(budget.max_tokens)
        if name in self.names:
            own = getattr(self.factors[self.names.index(name)], "max_tokens", None)
            if isinstance(own, int) and not isinstance(own, bool):
                return own  # WithinBudget: a budget of its own
        return None

    def _explain(self, name: str, text: list[Any]) -> str | None:
        """What factor `name`'s `explain` (JsonSchema's) says of `text`; None where it has none."""
        if name not in self.names:
            return None
        explain = _explainer(self.factors[self.names.index(name)])
        if explain is None:
            return None
        try:
            return explain(join_bytes(text))
        except Exception as error:  # noqa: BLE001 - a reason must not end the run
            return f"its explain() raised {type(error).__name__}: {error}"

    def _why(self, name: str, token: Any, forced: bool, info: dict | None = None) -> str:
        """Why factor `name` refused the drawn token, in one phrase.

        At EOS a constraint with `explain` (JsonSchema) says where the text
        fails: the JSON path and keyword, or where an unfinished document
        stops; a forced EOS reads "cut at max_tokens ...", and names the
        budget where the run held the factor to one. A token refused after a
        document that was already complete but failed a final check (a
        `format`, a `required` key) names that check, not the token: no token
        could have saved it.
        """
        ends = isinstance(token, EndOfSequence)
        text = self.context[:-1]  # the drawn token is the context's last
        why = self._explain(name, text)
        budget = self._budget_of(name)
        if forced:
            where = why[len("unfinished: ") :] if why and why.startswith("unfinished: ") else why
            if budget is not None:
                return (
                    f"cut at max_tokens: the budget of {budget} tokens was too small for "
                    f"{name} to finish" + (f" ({where})" if where else "") + self._least(name, [])
                )
            if why is not None and why.startswith("unfinished: "):
                return "cut at max_tokens " + where
            if why:
                return f"cut at max_tokens; {why}"
            return f"cut at max_tokens: {name} does not accept the text as complete"
        if ends:
            if why:
                return why
            return f"{name} gives EOS weight zero after {len(self.context) - 1} tokens"
        label = repr(token_label(token))
        refused = (info or {}).get("budget") or {}
        if refused.get("refused_by") == name:
            return (
                f"{name} could not end within max_tokens={refused.get('max_tokens')} "
                f"after {label} ({len(text) + 1} tokens)" + self._least(name, [*text, token])
            )
        if why is not None and not why.startswith(("unfinished", "not JSON")):
            # a complete document that fails a check only completion makes: no token could follow
            return f"the document was complete but fails: {why}"
        where = f" ({why[len('unfinished: ') :]})" if why and why.startswith("unfinished") else ""
        return f"{name} gives {label} weight zero after {len(text)} tokens{where}"

    def _least(self, name: str, text: list[Any]) -> str:
        """What the run's budget knows factor `name` needed to end `text` (a phrase), or ""."""
        budget = getattr(self.unit_sampler, "budget", None)
        least = budget.needed_at_least(text, name) if isinstance(budget, Budget) else None
        if least is None:
            return ""
        if not text:
            return f"; its shortest text takes at least {least} tokens (EOS included)"
        left = budget.max_tokens - len(text)
        return f"; it needed at least {least} more tokens (EOS included), {left} were left"

    async def _no_mass(self, context: list[Any]) -> str:
        """The first factor after which the product of the factors so far has no mass left."""
        if not self.record_factors:
            return self.names[0] if len(self.factors) == 1 else "sampler"
        rows = await asyncio.gather(
            *(f.logw_next(context) for f in self.factors), return_exceptions=True
        )
        total = None
        for name, row in zip(self.names, rows, strict=True):
            if isinstance(row, BaseException):
                return name
            weights = np.asarray(row.weights, dtype=float)
            total = weights if total is None else total + weights
            if not np.any(total > -math.inf):
                return name
        return "sampler"

    def profile_with(self, profiler: Any) -> Callable[[], None]:
        """Time each factor's methods (and the critic's) for a profiled run (`profiling`);
        the returned function puts them back."""
        return time_factors(self.names, self.factors, self.critic, profiler)

    def string_for_serialization(self) -> str:
        """The text so far (token bytes joined, invalid UTF-8 replaced)."""
        return join_bytes(self.context).decode("utf-8", errors="replace")

    def __str__(self) -> str:
        return self.string_for_serialization()
