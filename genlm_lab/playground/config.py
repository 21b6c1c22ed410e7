"""What a Playground run is: a prompt, a model, a constraint and a method, checked and built.

`PlaygroundConfig` holds the choices as plain values (so a run can be saved,
reopened and written out as code). `constraint_error` checks a constraint's
source and says where it is wrong (line and column), for the editor to show
inline. `build_run` turns a config into the objects `SMC` runs, and
`to_code` writes the Python that builds and runs exactly those objects.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, fields
from typing import Any

from genlm_lab.control import (
    AWRS,
    SMC,
    BoolCFG,
    BoolFSA,
    InvalidGrammar,
    JsonSchema,
    Potential,
    PromptedLLM,
    PythonRegex,
    direct_token_sampler,
)

__all__ = [
    "CONSTRAINT_KINDS",
    "METHODS",
    "ConstraintError",
    "PlaygroundConfig",
    "build_constraint",
    "build_run",
    "constraint_error",
    "to_code",
]

#: The constraint languages the editor offers, with the constructor each one calls.
CONSTRAINT_KINDS: dict[str, str] = {
    "none": "",
    "regex": "BoolFSA.from_regex",
    "python_regex": "PythonRegex",
    "lark": "BoolCFG.from_lark",
    "json_schema": "JsonSchema",
}
#: The token samplers: "direct" (the product's normalised mask) or "awrs" (rejection).
METHODS = ("direct", "awrs")


@dataclass
class PlaygroundConfig:
    """One run's choices.

    Args:
        prompt: the text the model continues.
        model: a name `load_model_by_name` knows, or a local model folder.
        constraint_kind: one of `CONSTRAINT_KINDS`.
        constraint: the constraint's source (a pattern, a Lark grammar, a JSON schema).
        method: "direct" or "awrs".
        n_particles: SMC particles.
        ess_threshold: resample below this fraction of `n_particles`.
        max_tokens: tokens per sequence, EOS included.
        seed: seeds every draw of the run.
    """

    prompt: str = "A US phone number: "
    model: str = "default"
    constraint_kind: str = "regex"
    constraint: str = r"\([0-9]{3}\) [0-9]{3}-[0-9]{4}"
    method: str = "awrs"
    n_particles: int = 4
    ess_threshold: float = 0.5
    max_tokens: int = 20
    seed: int = 0

    def check(self) -> None:
        """Raise one ValueError naming the first choice that cannot run."""
        if self.constraint_kind not in CONSTRAINT_KINDS:
            raise ValueError(
                f"constraint_kind must be one of {sorted(CONSTRAINT_KINDS)}, "
                f"got {self.constraint_kind!r}"
            )
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {list(METHODS)}, got {self.method!r}")
        if not isinstance(self.model, str) or not self.model.strip():
            raise ValueError("model must be a model name or a folder, got an empty value")
        if int(self.n_particles) < 1:
            raise ValueError(f"n_particles must be >= 1, got {self.n_particles}")
        if int(self.max_tokens) < 1:
            raise ValueError(f"max_tokens must be >= 1, got {self.max_tokens}")
        if not 0.0 <= float(self.ess_threshold) <= 1.0:
            raise ValueError(f"ess_threshold must be in [0, 1], got {self.ess_threshold}")
        if self.method == "awrs" and self.constraint_kind == "none":
            raise ValueError("method 'awrs' needs a constraint (AWRS rejects what it forbids)")

    def to_dict(self) -> dict[str, Any]:
        """The choices as a JSON-able dict."""
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> PlaygroundConfig:
        """A config from `to_dict` output; unknown keys are a ValueError naming them."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown Playground settings {unknown}; known: {sorted(known)}")
        return cls(**values)


@dataclass(frozen=True)
class ConstraintError:
    """Why a constraint's source does not compile, and where (1-based line and column)."""

    message: str
    line: int
    column: int

    def caret(self, source: str) -> str:
        """The offending line with a `^` under the column, as a compiler prints it."""
        lines = source.splitlines() or [""]
        text = lines[min(self.line, len(lines)) - 1]
        return f"{text}\n{' ' * (self.column - 1)}^"


def _line_col(source: str, offset: int) -> tuple[int, int]:
    offset = max(0, min(offset, len(source)))
    before = source[:offset]
    return before.count("\n") + 1, offset - (before.rfind("\n") + 1) + 1


def build_constraint(kind: str, source: str) -> Potential | None:
    """The byte-level constraint of `kind` from `source` (None for "none").

    Raises:
        InvalidGrammar: the source does not compile (a ValueError).
        json.JSONDecodeError: a JSON schema that is not JSON (a ValueError).
    """
    if kind == "none":
        return None
    if kind == "regex":
        return BoolFSA.from_regex(source)
    if kind == "python_regex":
        return PythonRegex(source)
    if kind == "lark":
        return BoolCFG.from_lark(source)
    if kind == "json_schema":
        json.loads(source)  # not JSON: the decoder's own error, with its line and column
        return JsonSchema(source)  # the text, so that errors name the keyword's line
    raise ValueError(f"constraint_kind must be one of {sorted(CONSTRAINT_KINDS)}, got {kind!r}")


def _where(kind: str, source: str, message: str) -> tuple[int, int]:
    """Line and column of a compiler's message about `source` (1, 1 when it names none)."""
    if kind in ("regex", "python_regex"):
        found = re.search(r"at position (\d+)", message)
        if found:
            return _line_col(source, int(found.group(1)))
    if kind == "lark":
        found = re.search(r"\b(\d+)\((\d+)\)", message)
        if found:
            return int(found.group(1)), max(1, int(found.group(2)))
    if kind == "json_schema":
        found = re.search(r"\(line (\d+), column (\d+)\)", message)
        if found:  # JsonSchema read the text: the offending keyword's own place
            return int(found.group(1)), int(found.group(2))
        found = re.search(r"invalid JSON schema at (\S+?):", message)
        if found:  # the last key of the path, where it first appears in the text
            key = found.group(1).split("/")[-1].split(".")[-1]
            at = source.find(json.dumps(key))
            if at >= 0:
                return _line_col(source, at)
    return 1, 1


def constraint_error(kind: str, source: str) -> ConstraintError | None:
    """None if `source` compiles as a `kind` constraint, else what is wrong and where."""
    try:
        build_constraint(kind, source)
    except json.JSONDecodeError as error:
        return ConstraintError(f"not JSON: {error.msg}", error.lineno, error.colno)
    except (InvalidGrammar, ValueError) as error:
        message = str(error)
        line, column = _where(kind, source, message)
        return ConstraintError(message.splitlines()[0], line, column)
    return None


@dataclass
class Run:
    """What `build_run` makes: the LM potential, the constraint on its tokens, the SMC."""

    llm: PromptedLLM
    constraint: Potential | None
    smc: SMC


def build_run(config: PlaygroundConfig, lm: Any) -> Run:
    """The potentials, sampler and `SMC` of `config` over the loaded model `lm`.

    Raises:
        ValueError: a setting that cannot run, or a constraint that does not compile.
    """
    config.check()
    llm = PromptedLLM(lm, prompt=config.prompt)
    constraint = build_constraint(config.constraint_kind, config.constraint)
    coerced = None if constraint is None else constraint.coerce(llm, f=b"".join)
    if config.method == "awrs":
        sampler = AWRS(llm, coerced)
    else:
        sampler = direct_token_sampler(llm if coerced is None else llm * coerced)
    return Run(llm, coerced, SMC(sampler))


def to_code(config: PlaygroundConfig) -> str:
    """Python (for a notebook cell: top-level `await`) that reproduces the run of `config`.

    It builds the same objects as `build_run` and calls SMC with the same seed,
    so it returns the same sequences.
    """
    config.check()
    kind = config.constraint_kind
    names = ["SMC", "PromptedLLM"]
    lines = [
        f"llm = PromptedLLM(load_model_by_name({config.model!r}), prompt={config.prompt!r})",
    ]
    if kind != "none":
        ctor = CONSTRAINT_KINDS[kind]
        names.append(ctor.split(".")[0])
        if kind == "json_schema":
            schema = json.loads(config.constraint)
            lines.append(f"constraint = {ctor}({schema!r}).coerce(llm, f=b''.join)")
        else:
            lines.append(f"constraint = {ctor}({config.constraint!r}).coerce(llm, f=b''.join)")
    if config.method == "awrs":
        names.append("AWRS")
        lines.append("sampler = AWRS(llm, constraint)")
    else:
        names.append("direct_token_sampler")
        target = "llm" if kind == "none" else "llm * constraint"
        lines.append(f"sampler = direct_token_sampler({target})")
    lines.append(
        f"sequences = await SMC(sampler)({int(config.n_particles)}, "
        f"ess_threshold={float(config.ess_threshold)!r}, max_tokens={int(config.max_tokens)}, "
        f"seed={int(config.seed)})"
    )
    lines.append("sequences.decoded_posterior")
    head = [
        "from genlm_lab.backend import load_model_by_name",
        f"from genlm_lab.control import {', '.join(sorted(set(names), key=str.lower))}",
        "",
    ]
    return "\n".join(head + lines) + "\n"
