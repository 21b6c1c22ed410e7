"""`CodeBox`: a "Copy as code" button and the box that holds the code (the Playground's).

The code is kept equal to the Playground's current choices, so a click copies
it at once, inside the click: browsers allow a clipboard write only then. Where
the clipboard is refused (no secure context, no permission) the box opens with
the code selected, and says to press Ctrl+C; either way the box shows the code.
"""

from __future__ import annotations

import anywidget
import traitlets

from genlm_lab.widgets._assets import asset, esm

__all__ = ["CodeBox"]


class CodeBox(anywidget.AnyWidget):
    """A "Copy as code" button over a read-only box of Python.

    Attributes:
        code: the Python to copy (the owner keeps it current).
        shown: whether the box is open (the button opens it).
        copied: what the browser's last click did: "clipboard", or "selected"
            where the clipboard was refused ("" before any click).
    """

    _esm = esm("copy.js")
    _css = asset("genlm.css")
    code = traitlets.Unicode("").tag(sync=True)
    shown = traitlets.Bool(False).tag(sync=True)
    copied = traitlets.Unicode("").tag(sync=True)

    def reveal(self) -> None:
        """Open the box (what a click does, less the clipboard, which only a browser has)."""
        self.shown = True
