"""The Playground's choices as widgets: prompt, model, constraint with inline errors, method, code.

`Choices` builds one input widget per field of a `PlaygroundConfig` and
reads them back (`config()`). While the user types, the constraint is
compiled and any error shows at its line and column under the editor, and
the copy-as-code box follows every change, so a click copies the current
choices at once.
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as w

from genlm_lab.backend import known_model_names
from genlm_lab.playground.config import (
    CONSTRAINT_KINDS,
    METHODS,
    PlaygroundConfig,
    constraint_error,
    to_code,
)
from genlm_lab.widgets.code_box import CodeBox

__all__ = ["Choices", "error_html"]

_ERROR_STYLE = "color: var(--jp-error-color1, #d32f2f)"


def error_html(text: str) -> str:
    """An error line, red by the stylesheet and by its own style (shown before any CSS loads)."""
    return f"<span class='genlm-error' style='{_ERROR_STYLE}'>{html.escape(text)}</span>"


class Choices:
    """The input widgets of one Playground, built from `config`.

    Attributes:
        prompt, model, kind, source, method, n_particles, ess, max_tokens, seed:
            one input per field of `PlaygroundConfig`.
        error: the constraint's compile error, at its line and column ("" when it compiles).
        code: the copy-as-code box, kept equal to the choices.
    """

    def __init__(self, config: PlaygroundConfig) -> None:
        c = config
        self.prompt = w.Textarea(
            value=c.prompt, description="prompt", layout=w.Layout(width="100%")
        )
        self.model = w.Combobox(
            value=c.model,
            options=known_model_names(),
            description="model",
            placeholder="a name, or a local model folder",
            ensure_option=False,
        )
        self.kind = w.Dropdown(
            options=list(CONSTRAINT_KINDS), value=c.constraint_kind, description="constraint"
        )
        self.source = w.Textarea(value=c.constraint, layout=w.Layout(width="100%", height="5em"))
        self.error = w.HTML()
        self.method = w.Dropdown(options=list(METHODS), value=c.method, description="method")
        self.n_particles = w.BoundedIntText(
            value=c.n_particles, min=1, max=512, description="particles"
        )
        self.ess = w.BoundedFloatText(
            value=c.ess_threshold, min=0.0, max=1.0, step=0.05, description="ESS threshold"
        )
        self.max_tokens = w.BoundedIntText(
            value=c.max_tokens, min=1, max=4096, description="max tokens"
        )
        self.seed = w.IntText(value=c.seed, description="seed")
        self.code = CodeBox()
        for control in (self.kind, self.source):
            control.observe(self.check_constraint, names="value")
        for control in self.inputs():
            control.observe(self.update_code, names="value")
        self.check_constraint()
        self.update_code()

    def inputs(self) -> tuple[w.Widget, ...]:
        """The widgets that hold a choice (in `PlaygroundConfig`'s order)."""
        return (
            self.prompt,
            self.model,
            self.kind,
            self.source,
            self.method,
            self.n_particles,
            self.ess,
            self.max_tokens,
            self.seed,
        )

    def config(self) -> PlaygroundConfig:
        """The choices as the widgets hold them now."""
        return PlaygroundConfig(
            prompt=self.prompt.value,
            model=self.model.value,
            constraint_kind=self.kind.value,
            constraint=self.source.value,
            method=self.method.value,
            n_particles=int(self.n_particles.value),
            ess_threshold=float(self.ess.value),
            max_tokens=int(self.max_tokens.value),
            seed=int(self.seed.value),
        )

    def check_constraint(self, _change: Any = None) -> None:
        """Compile the constraint; show its error, with a caret under the column, or nothing."""
        problem = constraint_error(self.kind.value, self.source.value)
        if problem is None:
            self.error.value = ""
            return
        caret = html.escape(problem.caret(self.source.value))
        self.error.value = (
            f"<div class='genlm-error' style='{_ERROR_STYLE}'>"
            f"line {problem.line}, column {problem.column}: "
            f"{html.escape(problem.message)}<pre>{caret}</pre></div>"
        )

    def update_code(self, _change: Any = None) -> None:
        """Keep the copy-as-code box equal to the current choices (a click copies it at once)."""
        try:
            self.code.code = to_code(self.config())
        except ValueError as error:
            self.code.code = f"# cannot write this run as code: {error}"
