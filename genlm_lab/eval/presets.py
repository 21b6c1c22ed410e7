"""Named method presets: the methods, settings and replicates of a paper's table, by name.

`preset("awrs-colm-2025")` is the experiment grid of Lipkin et al., "Fast Controlled
Generation from Language Models with Adaptive Weighted Rejection Sampling" (COLM 2025),
as its replication scripts run it (github.com/genlm/awrs-colm-2025, `scripts/*.sh` and
`experiments/`): the base LM (one sample), locally constrained decoding (one particle),
sample-rerank (10 samples), twisted SMC (10 particles, the LM as proposal and the
constraint as twist, resampling below ESS 0.9) and AWRS-SMC (5 particles, ESS 0.5), two
replicates, seed 80808, and each task's own `max_tokens` (100, JSON 450; goal inference
150 as in Loula et al., ICLR 2025); its JSON task has real-world schemas only (here the
SchemaStore ones, `JsonSchemaDomain(ours=False)`). The paper runs no budget: particles are cut at
`max_tokens`, so the preset sets `budget=False` (our default hands the budget to the
constraint; `Method(..., budget=True)` for that).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from genlm_lab.eval.methods import RESAMPLING_KINDS, Method

__all__ = ["PAPER_DOMAINS", "PRESETS", "Preset", "preset"]

#: The five domains of the papers' tables, in the order the table prints them.
PAPER_DOMAINS: tuple[str, ...] = (
    "spider",
    "json_schema",
    "pattern_matching",
    "molecular_synthesis",
    "goal_inference",
)


@dataclass(frozen=True)
class Preset:
    """Methods at fixed settings, with the replicates and per-domain token limits to run them.

    Attributes:
        name: the preset's name (`--preset NAME`).
        methods: the methods, each with its table label as `name`.
        replicates: runs per (instance, method).
        max_tokens: the longest answer per domain, EOS included.
        default_max_tokens: for a domain `max_tokens` does not name.
        seed: the experiment's seed.
        source: where the settings come from.
        domain_options: per domain, the options `load_domain` builds it with.
    """

    name: str
    methods: tuple[Method, ...]
    replicates: int
    max_tokens: Mapping[str, int] = field(default_factory=dict)
    default_max_tokens: int = 100
    seed: int = 0
    source: str = ""
    domain_options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def methods_for(self, domain: str) -> list[Method]:
        """The methods with `domain`'s `max_tokens` and the preset's seed filled in."""
        limit = self.max_tokens.get(domain, self.default_max_tokens)
        return [m.model_copy(update={"max_tokens": limit, "seed": self.seed}) for m in self.methods]

    def describe(self) -> str:
        """One line per method, then the replicates, token limits and source."""
        lines = [f"preset {self.name}: {self.replicates} replicates, seed {self.seed}"]
        for m in self.methods:
            resample = f", ESS {m.ess_threshold}" if m.kind in RESAMPLING_KINDS else ""
            lines.append(f"  {m.label:<14} {m.kind}, {m.n_particles} particles{resample}")
        limits = ", ".join(f"{d} {n}" for d, n in self.max_tokens.items())
        lines.append(f"  max_tokens: {limits} (else {self.default_max_tokens})")
        if self.source:
            lines.append(f"  from {self.source}")
        return "\n".join(lines)


def _paper_method(label: str, kind: str, n_particles: int, ess_threshold: float = 0.0) -> Method:
    return Method(
        kind=kind,
        n_particles=n_particles,
        ess_threshold=ess_threshold,
        name=label,
        budget=False,
    )


PRESETS: dict[str, Preset] = {
    "awrs-colm-2025": Preset(
        name="awrs-colm-2025",
        methods=(
            _paper_method("base-lm", "base", 1),
            _paper_method("lcd", "lcd", 1),
            _paper_method("sample-rerank", "sample_rerank", 10),
            _paper_method("twisted-smc", "twisted_smc", 10, 0.9),
            _paper_method("awrs-smc", "awrs_smc", 5, 0.5),
        ),
        replicates=2,
        max_tokens={
            "spider": 100,
            "json_schema": 450,
            "pattern_matching": 100,
            "molecular_synthesis": 100,
            "goal_inference": 150,
        },
        seed=80808,
        source="Lipkin et al., COLM 2025 (github.com/genlm/awrs-colm-2025, scripts/)",
        # JSONSchemaBench's schemas are real-world ones: the SchemaStore schemas, not ours.
        domain_options={"json_schema": {"ours": False}},
    ),
}


def preset(name: str) -> Preset:
    """The preset called `name`.

    Raises:
        ValueError: for an unknown name (the message lists the known ones).
    """
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; the presets are {', '.join(PRESETS)}")
    return PRESETS[name]
