"""The Playground's choices as widgets: prompt, model, constraint with inline errors, method, code.

`Choices` builds one input widget per field of a `PlaygroundConfig` and
reads them back (`config()`). While the user types, the constraint is
compiled and any error shows at its line and column under the editor. The
copy-as-code box describes the run the panels show (`show_run`), never the
form: editing a field after a run leaves the code as it was and marks it "the
form has changed since the run shown" (see `update_code`).
"""

from __future__ import annotations

import html
from dataclasses import replace
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

__all__ = ["NOT_RUN", "Choices", "error_html"]

#: The first line of the code offered before any run, in the box and in what is pasted.
NOT_RUN = "# Not yet run: the form's settings as they stand; no run here has used them."

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
        code: the copy-as-code box: the code of the run shown (see `update_code`).
        run_shown: the settings of the run the panels show (None when none is).
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
        self.run_shown: PlaygroundConfig | None = None
        self._stopped = False  # the run shown was stopped before its end
        self._problem = None  # the constraint's compile error, as check_constraint found it
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
        problem = self._problem = constraint_error(self.kind.value, self.source.value)
        if problem is None:
            self.error.value = ""
            return
        caret = html.escape(problem.caret(self.source.value))
        self.error.value = (
            f"<div class='genlm-error' style='{_ERROR_STYLE}'>"
            f"line {problem.line}, column {problem.column}: "
            f"{html.escape(problem.message)}<pre>{caret}</pre></div>"
        )

    def show_run(self, config: PlaygroundConfig | None, stopped: bool = False) -> None:
        """Make the code box describe the run the panels now show (None: no run is shown).

        Args:
            config: the settings captured when Run was pressed (copied here, so
                later edits of the form or of that object leave them as run).
            stopped: the run shown was stopped before its end.
        """
        self.run_shown = None if config is None else replace(config)
        self._stopped = stopped
        self.update_code()

    def update_code(self, _change: Any = None) -> None:
        """Point the copy-as-code box at the run shown, and say whether the form still holds it.

        After a run the code is that run's, whatever the form says since: it is
        what reproduces the texts and weights on screen, and a setting typed
        later (a broken schema included) never enters it; the box says "the form
        has changed since the run shown" until the form holds the run's settings
        again. Before any run the box offers the form's code, greyed, labelled
        "not yet run" and opening with a `NOT_RUN` comment that travels with the
        paste: a user who sets up the form to script the run elsewhere (a bigger
        model, a batch of seeds) expects code for what they see, and the label
        keeps it from passing for the reproduction of anything. Settings that
        cannot run give a comment saying why, and no code.
        """
        run = self.run_shown
        if run is None:
            self.code.code = self._form_code()
            self.code.state, self.code.label = "not_run", "not yet run: the form's settings"
            return
        self.code.code = to_code(run)  # it ran, so its settings pass to_code's checks
        done = (
            "this code runs the settings of the run shown, which was stopped, to the end"
            if self._stopped
            else "this code reproduces the run shown"
        )
        if self.config() == run:
            self.code.state, self.code.label = "shown", done
        else:
            self.code.state = "changed"
            self.code.label = f"the form has changed since the run shown; {done}"

    def _form_code(self) -> str:
        """The form's code under a `NOT_RUN` comment, or why it cannot be written."""
        if self._problem is not None:
            return (
                f"{NOT_RUN}\n# These settings cannot run: the constraint does not compile "
                f"(line {self._problem.line}, column {self._problem.column}: "
                f"{self._problem.message}).\n"
            )
        try:
            return f"{NOT_RUN}\n{to_code(self.config())}"
        except ValueError as error:
            return f"{NOT_RUN}\n# These settings cannot run: {error}\n"
