"""What `eval run`'s `--method KIND:key=value,...` takes: the kinds, the keys, their help.

`parse_method` turns the text into a `Method` with errors that name the valid
kinds and keys (and the nearest one to a typo); `method_help` is the list that
ends `eval run --help`.
"""

from __future__ import annotations

import argparse
import difflib
from typing import Any

__all__ = ["KEY_HELP", "KIND_HELP", "HelpWithMethods", "method_help", "parse_method"]

#: One line per method kind (`genlm_lab.eval.methods` has the full table).
KIND_HELP = {
    "base": "the LM alone, n plain samples",
    "lcd": "locally constrained decoding: LM x constraint renormalised per token (1 particle)",
    "sample_rerank": "n LM samples, weighted by the constraint (and critic) once finished",
    "smc": "SMC on LM x constraint, critic twisting, resampling below ess_threshold",
    "twisted_smc": "SMC on the LM alone, the constraint (and critic) as the twist",
    "awrs_smc": "SMC with AWRS proposals: the constraint checked only on drawn tokens",
}
#: What each `--method` key sets.
KEY_HELP = {
    "n_particles": "particles (samples for base and sample_rerank)",
    "ess_threshold": "resample below this fraction of n_particles (smc, twisted_smc, awrs_smc)",
    "max_tokens": "longest answer in tokens, EOS included",
    "seed": "the experiment's seed (each instance and replicate derives its own)",
    "name": "the label shown in tables (default: the kind)",
    "budget": "hand max_tokens to the constraint: a token after which the answer cannot "
    "end in time gets weight zero at once, not at the cut (budget=false: off)",
}


def method_help() -> str:
    """The method kinds and the keys `--method KIND:key=value,...` takes, with their defaults."""
    from genlm_lab.eval.methods import KINDS, Method

    lines = ["method kinds (--method KIND or KIND:key=value,...):"]
    lines += [f"  {kind:<14} {KIND_HELP.get(kind, '')}" for kind in KINDS]
    lines.append("keys (default):")
    for key, field in Method.model_fields.items():
        if key == "kind":
            continue
        default = "" if field.default is None else f" ({field.default})"
        lines.append(f"  {key + default:<19} {KEY_HELP.get(key, '')}")
    lines.append("e.g. --method awrs_smc:n_particles=10,max_tokens=64 --method lcd")
    return "\n".join(lines)


class HelpWithMethods(argparse._HelpAction):
    """`eval run --help`, ending with the method kinds and keys (read only when asked:
    the methods module imports torch, which every other command can do without)."""

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        parser.epilog = method_help()
        super().__call__(parser, *args, **kwargs)


def _valid_keys() -> list[str]:
    from genlm_lab.eval.methods import Method

    return [k for k in Method.model_fields if k != "kind"]


def parse_method(text: str, **defaults: Any) -> Any:
    """`Method.parse` with errors that name the valid kinds, keys and what was wrong.

    Raises:
        ValueError: "bad method 'awrs_smc:particles=3': unknown key 'particles' (did you
            mean n_particles?); valid keys: n_particles, ...".
    """
    from genlm_lab.eval.methods import KINDS, Method

    kind, _, rest = text.partition(":")
    kind = kind.strip()
    keys = ", ".join(_valid_keys())
    if kind not in KINDS:
        near = difflib.get_close_matches(kind, KINDS, n=1)
        hint = f" (did you mean {near[0]}?)" if near else ""
        raise ValueError(
            f"bad method {text!r}: unknown kind {kind!r}{hint}; kinds: {', '.join(KINDS)}"
        )
    fields: dict[str, Any] = {}
    for item in filter(None, (s.strip() for s in rest.split(","))):
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq:
            raise ValueError(
                f"bad method {text!r}: {item!r} must look like key=value; keys: {keys}"
            )
        if key not in _valid_keys():
            near = difflib.get_close_matches(key, _valid_keys(), n=1)
            hint = f" (did you mean {near[0]}?)" if near else ""
            raise ValueError(f"bad method {text!r}: unknown key {key!r}{hint}; valid keys: {keys}")
        fields[key] = value.strip()
    try:
        return Method.parse(text, **defaults)
    except ValueError:
        pass
    from pydantic import ValidationError

    try:
        Method(kind=kind, **{**defaults, **fields})
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(x) for x in e['loc'])}={e.get('input')!r}: {e['msg'].lower()}"
            for e in exc.errors()
        )
        raise ValueError(f"bad method {text!r}: {problems}") from None
    raise ValueError(f"bad method {text!r}")  # pragma: no cover - parse and the model agree
