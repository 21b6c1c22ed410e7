"""`Playground`: one widget to try a prompt, a model, a constraint and a method, and see the run.

Above: the prompt, a model picker, a constraint editor whose errors show
inline at their line and column, the method's settings, Run / Stop, and
copy-as-code (the code of the run shown, on the clipboard where the browser
allows; marked when the form has changed since, or when nothing has run):
the `Choices` of `genlm_lab.playground.controls`.
Below, while the run goes: the live `ParticleView` (with the alarms that say
why a run degenerated), where the time went (every run is profiled), and the
`MaskView` of any particle at any step (pick them with the slider and the menu).
Every panel below belongs to one run: a new run starts them all afresh, and
before the first run they are hidden rather than showing empty numbers.

Runs are async tasks on the kernel's event loop, so the notebook stays
responsive and Stop cancels the task; the model stays loaded and usable. In a
test (or a script) `await playground.run()` does the same without buttons.
"""

from __future__ import annotations

import asyncio
import html
import time
from typing import Any

import ipywidgets as w

from genlm_lab.backend import load_model_by_name
from genlm_lab.control import Sequences
from genlm_lab.playground.config import PlaygroundConfig, build_run
from genlm_lab.playground.controls import Choices, error_html
from genlm_lab.playground.steps import context_at
from genlm_lab.playground.store import load_run, open_store, save_run
from genlm_lab.widgets import MaskView, ParticleView, ProfileView
from genlm_lab.widgets.base import stored_html

__all__ = ["Playground"]


IDLE = "<span class='genlm-note'>no run yet: press Run</span>"


class Playground(w.VBox):
    """A prompt, a model, a constraint and a method in one place, with the run's views below.

    Args:
        config: the starting choices (defaults: a phone-number regex on the default model).
        lm: an already loaded model to use whatever the picker says (tests, custom backends).
    """

    def __init__(self, config: PlaygroundConfig | None = None, lm: Any = None) -> None:
        self.config = config or PlaygroundConfig()
        self._lm_given = lm
        self._models: dict[str, Any] = {}
        self._task: asyncio.Task | None = None
        self._run: Any = None
        self.sequences: Sequences | None = None
        self.record: Any = None  # the last run's SMCRecord, or a reopened one
        self._started = 0.0
        self._runtime: float | None = None
        self._generation = 0  # one per run: a mask drawn for an earlier run is dropped
        self._quiet = False  # True while the run's controls are set up (no mask per change)
        self.choices = Choices(self.config)
        c = self.choices  # its widgets are the Playground's own too (notebooks and tests use them)
        self.prompt, self.model, self.kind, self.source = c.prompt, c.model, c.kind, c.source
        self.method, self.n_particles, self.ess = c.method, c.n_particles, c.ess
        self.max_tokens, self.seed, self.error, self.code = c.max_tokens, c.seed, c.error, c.code
        self.run_button = w.Button(description="Run", button_style="primary", icon="play")
        self.stop_button = w.Button(description="Stop", icon="stop", disabled=True)
        self.status = w.HTML(IDLE)
        self.store_path = w.Text(placeholder="results.sqlite", description="store")
        self.save_button = w.Button(description="Save run", icon="save")
        self.save_button.on_click(lambda _: self._save_clicked())
        self.particles, self.profile = self._new_views(shown=False)
        self.step = w.IntSlider(  # steps count as alarms and the genealogy do: first token 1
            value=1,
            min=1,
            max=1,
            description="mask at step",
            style={"description_width": "initial"},
            disabled=True,
            continuous_update=False,
        )
        self.particle = w.Dropdown(
            options=[0],
            value=0,
            description="slot",
            tooltip="the particle in this place of the step's population: a place in the "
            "population, not a line of descent (resampling moves lines between slots)",
            disabled=True,
        )
        self.mask_head = w.HTML("")
        self.mask_view = MaskView()
        self.mask_view.layout.display = "none"
        # Fixed children, redrawn in place: replacing a shown widget's view makes
        # JupyterLab log "processLuminoMessage of null".
        self.mask = w.VBox([self.mask_head, self.mask_view])
        for control in (self.step, self.particle):
            control.observe(self._show_mask, names="value")
        self.run_button.on_click(lambda _: self.start())
        self.stop_button.on_click(lambda _: self.stop())
        for name in (
            "prompt",
            "model",
            "kind",
            "source",
            "error",
            "method",
            "n_particles",
            "max_tokens",
            "seed",
            "run_button",
            "stop_button",
            "status",
            "code",
            "store_path",
            "save_button",
            "step",
            "particle",
            "mask",
            "mask_head",
        ):
            getattr(self, name).add_class(f"genlm-pg-{name.replace('_', '-')}")
        super().__init__(
            [
                self.prompt,
                w.HBox([self.model, self.kind]),
                self.source,
                self.error,
                w.HBox([self.method, self.n_particles, self.ess]),
                w.HBox([self.max_tokens, self.seed]),
                w.HBox([self.run_button, self.stop_button, self.status]),
                self.code,
                w.HBox([self.store_path, self.save_button]),
                self.particles,
                self.profile,
                w.HBox([self.step, self.particle]),
                self.mask,
            ]
        )

        self.add_class("genlm-playground")

    # -- what a saved notebook shows -------------------------------------------------
    def static_html(self) -> str:
        """The settings of the run shown (else the form's) and its particles and alarms, as HTML."""
        run = self.choices.run_shown
        rows = "".join(
            f"<tr><th>{html.escape(k)}</th><td><code>{html.escape(str(v))}</code></td></tr>"
            for k, v in (run or self.current_config()).to_dict().items()
        )
        what = "the settings of the run shown" if run else "the form's settings, not yet run"
        parts = [f"<div class='genlm-view'><b>Playground</b> ({what})<table>{rows}</table>"]
        if self.record is not None:
            parts.append(self.particles._repr_html_())  # its alarms included
        return "".join(parts) + "</div>"

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        """The live widget, plus static HTML for untrusted notebooks, GitHub and nbviewer."""
        bundle = super()._repr_mimebundle_(**kwargs)
        data, metadata = bundle if isinstance(bundle, tuple) else (bundle, {})
        data = dict(data or {})
        data["text/html"] = stored_html(self.static_html())
        return data, metadata

    # -- the choices -----------------------------------------------------------------
    def current_config(self) -> PlaygroundConfig:
        """The choices as the controls hold them now."""
        return self.choices.config()

    # -- the panels of one run ---------------------------------------------------------
    @staticmethod
    def _new_views(shown: bool) -> tuple[ParticleView, ProfileView]:
        particles, profile = ParticleView(), ProfileView()
        for view, name in ((particles, "particles"), (profile, "profile")):
            view.add_class(f"genlm-pg-{name}")
            view.layout.display = None if shown else "none"
        return particles, profile

    def _swap_views(self, particles: ParticleView, profile: ProfileView) -> None:
        """Put these views where the old ones were (`reopen`, before the Playground is shown)."""
        swap = {id(self.particles): particles, id(self.profile): profile}
        self.children = tuple(swap.get(id(c), c) for c in self.children)
        self.particles, self.profile = particles, profile

    def _reset_panels(self) -> None:
        """Start every panel afresh for a new run: views hidden until its first step, no mask.

        The particle and profile views start afresh on the new run's first step
        (they follow runs in turn); hidden until then, they show nothing stale.
        """
        self._generation += 1
        for view in (self.particles, self.profile, self.mask_view):
            view.layout.display = "none"
        self.mask_head.value = ""
        self._quiet = True
        try:
            self.step.value, self.step.max, self.step.disabled = 1, 1, True
            self.particle.options, self.particle.disabled = [0], True
        finally:
            self._quiet = False
        self.record, self.sequences = None, None
        self.choices.show_run(None)  # the code box too: no run is shown

    def _reveal(self, _entry: Any = None) -> None:
        """Show the run's views (its first step has come: they have something true to say)."""
        for view in (self.particles, self.profile):
            if view.layout.display == "none":
                view.layout.display = None

    # -- running ---------------------------------------------------------------------
    def _model(self, name: str) -> Any:
        if self._lm_given is not None:
            return self._lm_given
        if name not in self._models:
            self._models[name] = load_model_by_name(name)
        return self._models[name]

    async def run(self) -> Sequences:
        """Run the current choices; the views follow live. Returns the `Sequences`.

        Raises:
            ValueError: a setting that cannot run, or a constraint that does not compile.
        """
        config = self.current_config()
        self._reset_panels()
        self._run = None
        self.status.value = "<i>loading the model...</i>"
        lm = self._model(config.model)
        self._run = build_run(config, lm)
        self.choices.show_run(config)  # the settings of the run the panels will show
        self.status.value = "<i>running...</i>"
        self._started = time.perf_counter()
        sequences = await self._run.smc(
            config.n_particles,
            ess_threshold=config.ess_threshold,
            max_tokens=config.max_tokens,
            seed=config.seed,
            observers=[self.particles, self.profile, self._reveal],
            progress=False,
            profile=True,
        )
        self._runtime = time.perf_counter() - self._started
        self.config, self.sequences, self.record = config, sequences, sequences.record
        self._show_record(sequences.record, draw_mask=True)
        return sequences

    def _show_record(self, record: Any, draw_mask: bool = False) -> None:
        n_steps = len(record.steps)
        self._quiet = True
        try:
            self.step.value = 1
            self.step.max = max(n_steps, 1)
            self.step.disabled = n_steps == 0
            self.particle.options = list(range(record.n_particles))
            self.particle.disabled = n_steps == 0
        finally:
            self._quiet = False
        self._reveal()
        final = record.final or {}
        status = f"<b>{html.escape(str(final.get('status', 'done')))}</b>"
        status += f" · {record.n_particles} particles, {n_steps} steps"
        if final.get("log_ml") is not None:
            status += f" · log ML {final['log_ml']:.3f}"
        self.status.value = status
        if n_steps and draw_mask:
            self._show_mask()  # this run's mask at step 1: never the last run's

    def start(self) -> asyncio.Task:
        """Start `run()` as a task on the running loop (what the Run button does)."""
        if self._task is not None and not self._task.done():
            return self._task
        self.run_button.disabled, self.stop_button.disabled = True, False
        self._task = asyncio.ensure_future(self.run())
        self._task.add_done_callback(self._finished)
        return self._task

    def stop(self) -> None:
        """Cancel the run in progress (what the Stop button does); the model stays usable."""
        if self._task is not None and not self._task.done():
            self._task.cancel()

    def _finished(self, task: asyncio.Task) -> None:
        self.run_button.disabled, self.stop_button.disabled = False, True
        if task.cancelled():
            self.status.value = "<b>stopped</b>"
            if self.choices.run_shown is not None:  # stopped after it started: its steps show
                self.choices.show_run(self.choices.run_shown, stopped=True)
        elif task.exception() is not None:
            error = task.exception()
            self.status.value = error_html(f"{type(error).__name__}: {error}")

    # -- the mask at a step ------------------------------------------------------------
    async def mask_at(self, step: int, particle: int) -> MaskView:
        """The `MaskView` of the run's target for slot `particle`'s context before `step`'s token.

        Steps count as the slider, the alarms and the genealogy count them: step 1
        draws the first token. A reopened run builds its potentials (and loads
        its model) the first time.
        """
        if self.record is None:
            raise ValueError("no finished run yet: run the Playground first")
        if self._run is None:
            self._run = build_run(self.config, self._model(self.config.model))
        target = self._run.smc.unit_sampler.target
        context = context_at(self.record, step, particle, target.vocab_eos)
        return await MaskView.of(target, context)

    # -- a results store -----------------------------------------------------------------
    def save(self, store: Any) -> int:
        """File the last run in a `ResultsStore` (or a path to one); returns its run_id."""
        if self.sequences is None or self._run is None:
            raise ValueError("no finished run to save: run the Playground first")
        with open_store(store) as opened:
            return save_run(
                opened,
                self.config,
                self.sequences,
                self._run.llm.model,
                runtime_seconds=self._runtime,
            )

    def _save_clicked(self) -> None:
        path = self.store_path.value.strip()
        if not path:
            self.status.value = error_html("name a store file to save to")
            return
        try:
            run_id = self.save(path)
        except (ValueError, OSError) as error:
            self.status.value = error_html(str(error))
            return
        self.status.value = (
            f"saved as run {run_id} in <code>{html.escape(path)}</code> "
            f"(reopen: <code>Playground.reopen({path!r}, {run_id})</code>)"
        )

    @classmethod
    def reopen(cls, store: Any, run_id: int, lm: Any = None) -> Playground:
        """A Playground showing a saved run: its choices, particles, alarms and profile."""
        with open_store(store) as opened:
            config, record = load_run(opened, run_id)
        playground = cls(config, lm=lm)
        playground._generation += 1
        particles, profile = ParticleView.from_record(record), ProfileView.from_record(record)
        for view, name in ((particles, "particles"), (profile, "profile")):
            view.add_class(f"genlm-pg-{name}")
        playground._swap_views(particles, profile)
        playground.record = record
        playground.choices.show_run(config)
        playground._show_record(record)
        return playground

    def _show_mask(self, _change: Any = None) -> asyncio.Task | None:
        """Draw the mask at the chosen step and particle (a task: the kernel stays free)."""
        if self.record is None or self._quiet:
            return None
        step, particle, generation = self.step.value, self.particle.value, self._generation
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # no event loop (a plain script): `await mask_at(...)` instead
            return None
        task = asyncio.ensure_future(self.mask_at(step, particle))
        head = (
            f"<span class='genlm-note'>slot {particle} of step {step} (the particle in that "
            f"place of the step's population) before it draws the step's token"
            f" ({html.escape(str(self.config.constraint_kind))} run)</span>"
        )

        def show(done: asyncio.Task) -> None:
            if done.cancelled() or generation != self._generation:
                return  # a newer run owns the panel now
            if done.exception() is not None:
                self.mask_head.value = error_html(f"no mask: {done.exception()}")
                self.mask_view.layout.display = "none"
            else:
                data = done.result().view_data()
                self.mask_view.push(lambda: data, final=True)
                self.mask_head.value = head
                self.mask_view.layout.display = None

        task.add_done_callback(show)
        return task
