"""`InferenceVisualizer`: genlm-control's entry to a run's views, opening genlm_lab's own.

genlm-control's `InferenceVisualizer` starts an HTTP server on a port,
copies a run's JSON record into the folder it serves, and returns the URL
of a page that draws it. genlm_lab serves nothing: the same calls open the
views of `genlm_lab.widgets` in the notebook, from the same record
(`SMC(...)(json_path=...)` writes it):

- `visualize(json_path)` returns a `ParticleView` of the finished run
  (particles, weights by factor, ESS and log_ml, resampling, genealogy);
  `auto_open=True` also writes the run's standalone page (`write_report`)
  into `serve_dir` and opens it in the browser, from the file.
- `live()` returns a `ParticleView` to follow a run as it goes
  (`SMC(...)(..., observers=[viz.live()])`).
- `shutdown_server()` closes the views it opened and removes its temporary
  folder; nothing else was running.

`port` is kept so that genlm-control code runs unchanged; nothing listens on it.
"""

from __future__ import annotations

import shutil
import tempfile
import webbrowser
from os import PathLike
from pathlib import Path
from types import TracebackType
from typing import Any

from genlm_lab.widgets.particle_view import ParticleView
from genlm_lab.widgets.report import write_report
from genlm_lab.widgets.smc_data import as_record

__all__ = ["InferenceVisualizer"]


class InferenceVisualizer:
    """Opens `ParticleView`s of SMC runs (genlm-control's name; no server is started).

    Args:
        port: genlm-control's server port, kept for its signature and not used.
        serve_dir: where `visualize(..., auto_open=True)` and `report` write
            the runs' standalone HTML pages; a temporary folder (removed by
            `shutdown_server`) if None.

    Raises:
        TypeError: if `port` is not an int.
    """

    def __init__(self, port: int = 8000, serve_dir: str | PathLike | None = None) -> None:
        if isinstance(port, bool) or not isinstance(port, int):
            raise TypeError(f"port must be an int, got {port!r}")
        self.port = port
        self._serve_dir = None if serve_dir is None else Path(serve_dir).resolve()
        self._temp_dir: Path | None = None
        #: The views opened so far (closed by `shutdown_server`).
        self.views: list[ParticleView] = []

    @property
    def serve_dir(self) -> Path:
        """The folder the pages are written to (created on first use)."""
        if self._serve_dir is None:
            if self._temp_dir is None:
                self._temp_dir = Path(tempfile.mkdtemp(prefix="smc_viz_"))
            return self._temp_dir
        self._serve_dir.mkdir(parents=True, exist_ok=True)
        return self._serve_dir

    def visualize(self, json_path: Any, auto_open: bool = False) -> ParticleView:
        """The `ParticleView` of a finished run.

        Args:
            json_path: the run's record file (`json_path=` of `SMC`), or the
                record itself: an `SMCRecord`, its dict or JSON, or a
                `Sequences` that kept one (`.record`).
            auto_open: also write the run's standalone page into `serve_dir`
                and open it in the browser.

        Returns:
            The view (displayed when it is a cell's value).

        Raises:
            FileNotFoundError: if `json_path` names a file that does not exist.
            ValueError: if it is not an SMC record, or a `Sequences` without one.
        """
        record = self._record(json_path)
        view = ParticleView.from_record(record)
        self.views.append(view)
        if auto_open:
            webbrowser.open(self._write_page(json_path, record).as_uri())
        return view

    def live(self) -> ParticleView:
        """A fresh `ParticleView` to pass as an observer: it draws the run as it goes."""
        view = ParticleView()
        self.views.append(view)
        return view

    def report(self, json_path: Any) -> Path:
        """Write the run's standalone HTML page into `serve_dir`; returns its path.

        The page is named after the record file (`run.jsonl` -> `run.html`),
        or after the run's id for a record given as an object.

        Raises the errors `visualize` raises for the same argument.
        """
        return self._write_page(json_path, self._record(json_path))

    def _write_page(self, json_path: Any, record: Any) -> Path:
        if isinstance(json_path, (str, PathLike)) and Path(json_path).exists():
            name = Path(json_path).stem
        else:
            name = f"smc_{record.run_id}"
        return write_report(record, self.serve_dir / f"{name}.html").resolve()

    def shutdown_server(self) -> None:
        """Close the views opened here and remove the temporary folder (if one was made)."""
        for view in self.views:
            view.close()
        self.views = []
        if self._temp_dir is not None and self._temp_dir.exists():
            shutil.rmtree(self._temp_dir)
        self._temp_dir = None

    @staticmethod
    def _record(json_path: Any) -> Any:
        """The `SMCRecord` of a path, record, dict, JSON text or `Sequences`."""
        if hasattr(json_path, "log_weights") and hasattr(json_path, "record"):  # Sequences
            if json_path.record is None:
                raise ValueError("these Sequences kept no record of their run to visualize")
            return json_path.record
        if isinstance(json_path, PathLike) or (
            isinstance(json_path, str) and not json_path.lstrip().startswith("{")
        ):
            if not Path(json_path).exists():
                raise FileNotFoundError(f"JSON file not found: {json_path}")
        return as_record(json_path)

    def __enter__(self) -> InferenceVisualizer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.shutdown_server()

    def __repr__(self) -> str:
        return f"InferenceVisualizer({len(self.views)} views, serve_dir={self._serve_dir})"
