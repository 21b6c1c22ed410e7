"""`Domain`: a dataset, its checker and its constraint, bundled so that every method can run on it.

genlm-eval leaves the model adaptor to the user; the declarative methods of
`genlm_lab.eval.methods` need to know three more things about a task, which a
`Domain` says: the prompt for an instance, the text that ends an answer (EOS
byte strings), and the constraint (a byte-level boolean potential the
constrained methods use), plus an optional critic. A new task is a subclass
(see docs/tutorials/eval-own-domain.md).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from genlm_lab.eval.core import Dataset, Evaluator, Instance
from genlm_lab.eval.identity import describe_potential

__all__ = ["Domain"]


class Domain(ABC):
    """A task: instances, a checker, a prompt and a constraint per instance.

    Attributes:
        name: the domain's name in the results store and views.
        dataset: the instances.
        evaluator: scores a response.
        eos: byte strings that end an answer (they become the LM's EOS).
    """

    name: str = "domain"
    eos: tuple[bytes, ...] = (b"\n",)

    def __init__(self, dataset: Dataset, evaluator: Evaluator) -> None:
        self.dataset = dataset
        self.evaluator = evaluator

    @abstractmethod
    def prompt(self, instance: Instance) -> str:
        """The text the LM continues to answer `instance`."""

    @abstractmethod
    def constraint(self, instance: Instance) -> Any:
        """A byte-level boolean `Potential` that every right answer satisfies (methods coerce it)."""

    def critic(self, instance: Instance) -> Any | None:
        """An optional byte-level potential that reweights whole answers (SMC's critic); None: none."""
        return None

    def response(self, text: str) -> Any:
        """The response the evaluator scores, from the generated text (default: the text itself)."""
        return text

    def identity(self, instance: Instance) -> dict[str, Any]:
        """What decides this instance's runs, as the domain builds them (part of a run's key).

        The instance's data, the prompt, the EOS strings, and the constraint and
        critic as built (class, kind, source): edit a prompt or a constraint and
        the stored runs of the instance are no longer reused. A domain whose
        constraint depends on more than this (a file it reads, say) overrides it.
        """
        out: dict[str, Any] = {
            "domain": f"{type(self).__module__}.{type(self).__qualname__}",
            "instance": instance.model_dump(mode="json"),
            "eos": [e.hex() for e in self.eos],
        }
        for part, build in (
            ("prompt", self.prompt),
            ("constraint", lambda i: describe_potential(self.constraint(i))),
            ("critic", lambda i: describe_potential(self.critic(i))),
        ):
            try:
                out[part] = build(instance)
            except Exception as exc:  # the run itself will fail and say so
                out[part] = f"error: {type(exc).__name__}: {exc}"
        return out

    def __len__(self) -> int:
        return len(list(iter(self.dataset)))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, {len(self)} instances)"
