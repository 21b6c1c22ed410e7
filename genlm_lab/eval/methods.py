"""Methods as small declarative configs, and the model adaptor each one builds.

A `Method` is data (kind, n_particles, ess_threshold, max_tokens, seed): it
is hashed into the results store, so a run is identified by what was run.
`method.adaptor(domain, llm)` turns it into a genlm-eval model adaptor. With
`llm` the LM (a `PromptedLLM`, or any `AsyncLM`), the constraint `c` of the
instance coerced onto the LM's tokens, and the domain's critic:

| kind | sampler | particles | weights |
|---|---|---|---|
| `base` | the LM alone | n | uniform (plain samples) |
| `lcd` | LM x c, renormalised per token (locally constrained decoding) | n (1 by default) | uniform: local renormalisation, no correction |
| `sample_rerank` | the LM alone, c (and the critic) applied to finished samples | n | c x critic (no resampling) |
| `smc` | LM x c (direct sampler), critic twisting | n | SMC's weights, resampling below ess_threshold |
| `twisted_smc` | the LM alone, c (and the critic) as the twist | n | SMC's weights, resampling below ess_threshold |
| `awrs_smc` | AWRS(LM, c): c checked only on drawn tokens | n | SMC's weights |

With `budget` (on by default) the run hands `max_tokens` to the constraint
(`SMC(...)(..., budget=True)`): a token after which the answer can no longer
end in time gets weight zero at once (AWRS draws another), not at the cut;
the target is unchanged. `budget=False` (`--method smc:budget=false`) turns it
off. The posterior over answers is the normalised weight of each distinct
finished text. Each run keeps its `SMCRecord` (the store saves it; the views
open it) and counts the LM requests it made (cache hits included).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from genlm_lab.control import AWRS, SMC, PromptedLLM, direct_token_sampler
from genlm_lab.eval.core import Instance, ModelOutput, ModelResponse
from genlm_lab.eval.domain import Domain
from genlm_lab.eval.identity import model_identity
from genlm_lab.smc import get_rng

__all__ = ["KINDS", "RESAMPLING_KINDS", "Method", "MethodAdaptor"]

Kind = Literal["base", "lcd", "sample_rerank", "smc", "twisted_smc", "awrs_smc"]
KINDS: tuple[str, ...] = ("base", "lcd", "sample_rerank", "smc", "twisted_smc", "awrs_smc")
#: The kinds that resample (the others keep ess_threshold at 0: importance sampling).
RESAMPLING_KINDS: tuple[str, ...] = ("smc", "twisted_smc", "awrs_smc")


class Method(BaseModel):
    """What to run on each instance (hashed into the store).

    Attributes:
        kind: "base", "lcd", "sample_rerank", "smc", "twisted_smc" or "awrs_smc".
        n_particles: particles (samples for base / sample_rerank).
        ess_threshold: resample below this fraction of n_particles (smc, awrs_smc).
        max_tokens: longest answer, EOS included.
        seed: the experiment's seed; each (instance, replicate) derives its own.
        name: a label (default: the kind).
        budget: hand max_tokens to the constraint so answers end in time (see above).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Kind
    n_particles: int = Field(default=5, ge=1)
    ess_threshold: float = Field(default=0.5, ge=0.0, le=1.0)
    max_tokens: int = Field(default=32, ge=1)
    seed: int = 0
    name: str | None = None
    budget: bool = True

    @classmethod
    def parse(cls, text: str, **defaults: Any) -> Method:
        """A method from "kind" or "kind:key=value,key=value" (the CLI's `--method`).

        Raises:
            ValueError: for an unknown kind or field, or a bad value.
        """
        kind, _, rest = text.partition(":")
        fields: dict[str, Any] = dict(defaults)
        if kind.strip() == "lcd" and "n_particles" not in fields:
            fields["n_particles"] = 1
        for item in filter(None, (s.strip() for s in rest.split(","))):
            key, eq, value = item.partition("=")
            if not eq:
                raise ValueError(f"method option {item!r} must look like key=value")
            fields[key.strip()] = value.strip()
        try:
            return cls(kind=kind.strip(), **fields)
        except Exception as exc:
            raise ValueError(f"bad method {text!r}: {exc}") from None

    @property
    def label(self) -> str:
        """The name shown in tables."""
        return self.name or self.kind

    def adaptor(self, domain: Domain, llm: Any, model_name: str | None = None) -> MethodAdaptor:
        """The genlm-eval model adaptor that runs this method on `domain`'s instances with `llm`.

        Args:
            domain: the task.
            llm: a `PromptedLLM` or an `AsyncLM`.
            model_name: the model's name in the store and views (default: read from the model).
        """
        return MethodAdaptor(self, domain, llm, model_name=model_name)


class _CountingLM:
    """An AsyncLM seen through a counter of the log-prob requests made through it."""

    def __init__(self, lm: Any) -> None:
        self._lm = lm
        self.requests = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._lm, name)

    async def next_token_logprobs(self, token_ids: Sequence[int]) -> Any:
        self.requests += 1
        return await self._lm.next_token_logprobs(token_ids)

    async def batch_next_token_logprobs(self, token_ids_list: Sequence[Sequence[int]]) -> Any:
        self.requests += len(token_ids_list)
        return await self._lm.batch_next_token_logprobs(token_ids_list)


class MethodAdaptor:
    """`await adaptor(instance, output_dir, replicate)` -> `ModelOutput` (a genlm-eval model adaptor).

    Args:
        method: the config.
        domain: gives prompt, EOS, constraint and critic per instance.
        llm: a `PromptedLLM` (its temperature is kept) or an `AsyncLM`.
        model_name: the model's name in the store (default: read from the model).
    """

    def __init__(
        self, method: Method, domain: Domain, llm: Any, model_name: str | None = None
    ) -> None:
        self.method = method
        self.domain = domain
        self.lm = llm.model if isinstance(llm, PromptedLLM) else llm
        self.temperature = llm.temperature if isinstance(llm, PromptedLLM) else 1.0
        self.model_name = model_name

    @property
    def config(self) -> Method:
        """What the runner stores as this adaptor's method config."""
        return self.method

    def model_identity(self) -> dict[str, Any]:
        """The model's part of a run's key (`genlm_lab.eval.identity.model_identity`)."""
        identity = model_identity(self.lm, name=self.model_name)
        identity["temperature"] = self.temperature
        return identity

    def instance_identity(self, instance: Instance) -> dict[str, Any]:
        """The instance's part of a run's key: prompt, EOS, constraint and critic as built."""
        return self.domain.identity(instance)

    def _sampler_and_critic(self, llm: PromptedLLM, instance: Instance) -> tuple[Any, Any]:
        kind = self.method.kind
        critic = self.domain.critic(instance)
        critic = None if critic is None else critic.coerce(llm, f=b"".join)
        if kind == "base":
            return direct_token_sampler(llm), None
        constraint = self.domain.constraint(instance).coerce(llm, f=b"".join)
        if kind in ("sample_rerank", "twisted_smc"):  # they differ in resampling only
            return direct_token_sampler(llm), constraint if critic is None else constraint * critic
        if kind == "lcd":
            return direct_token_sampler(llm * constraint), None
        if kind == "smc":
            return direct_token_sampler(llm * constraint), critic
        return AWRS(llm, constraint), critic  # awrs_smc

    async def __call__(
        self, instance: Instance, output_dir: str | None, replicate: int
    ) -> ModelOutput:
        started = time.perf_counter()
        counting = _CountingLM(self.lm)
        llm = PromptedLLM(
            counting,
            prompt=self.domain.prompt(instance),
            eos_byte_strings=list(self.domain.eos),
            temperature=self.temperature,
        )
        sampler, critic = self._sampler_and_critic(llm, instance)
        m = self.method
        resample = m.kind in RESAMPLING_KINDS
        sequences = await SMC(sampler, critic)(
            m.n_particles,
            m.ess_threshold if resample else 0.0,
            m.max_tokens,
            seed=get_rng(),
            progress=False,
            budget=m.budget,
        )
        if m.kind in ("base", "lcd"):
            posterior = _uniform(sequences)
        else:
            posterior = dict(sequences.decoded_posterior.items())
        responses = [
            ModelResponse(response=self.domain.response(text), weight=w, metadata={"text": text})
            for text, w in posterior.items()
        ]
        return ModelOutput(
            responses=responses,
            runtime_seconds=time.perf_counter() - started,
            metadata={
                "smc_record": sequences.record,
                "lm_requests": counting.requests,
                "log_ml": None if sequences.log_ml == float("-inf") else float(sequences.log_ml),
                "status": sequences.status,
            },
        )

    def __repr__(self) -> str:
        return f"MethodAdaptor({self.method.label}, {self.domain.name})"


def _uniform(sequences: Any) -> dict[str, float]:
    """Equal weight on every finished, decodable, live particle (plain samples; LCD's convention)."""
    texts: dict[str, float] = {}
    alive = [
        (c, f)
        for c, f, w in zip(
            sequences.contexts, sequences.finished, sequences.log_weights, strict=True
        )
        if f and w > float("-inf")
    ]
    for context, _ in alive:
        try:
            text = b"".join(bytes(t) for t in context[:-1]).decode("utf-8")
        except UnicodeDecodeError:
            continue
        texts[text] = texts.get(text, 0.0) + 1.0
    total = sum(texts.values())
    return {t: n / total for t, n in texts.items()} if total else {}
