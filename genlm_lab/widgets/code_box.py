"""`CodeBox`: a "Copy as code" button and the box that holds the code (the Playground's).

The owner keeps the code current and says what it describes (`state` and
`label`: the run shown, a form changed since that run, or nothing run yet),
so a click copies it at once, inside the click: browsers allow a clipboard
write only then. Where the clipboard is refused (no secure context, no
permission) the box opens with the code selected, and says to press Ctrl+C;
either way the box shows the code. A copy's message lasts only while the code
and its label stay as they were when it was copied: a message about code that
is no longer shown would claim a copy that did not happen.
"""

from __future__ import annotations

import anywidget
import traitlets

from genlm_lab.widgets._assets import asset, esm

__all__ = ["CodeBox"]

#: What the code describes: "" (the owner says nothing), "not_run" (nothing has run: the
#: box is greyed), "shown" (the run on screen), "changed" (the run on screen, whose
#: settings the form no longer holds).
STATES = ("", "not_run", "shown", "changed")


class CodeBox(anywidget.AnyWidget):
    """A "Copy as code" button over a read-only box of Python.

    Attributes:
        code: the Python to copy (the owner keeps it current).
        state: what the code describes, one of `STATES`.
        label: the same in a sentence, shown beside the button.
        shown: whether the box is open (the button opens it).
        copied: what the browser's last click did: "clipboard", or "selected"
            where the clipboard was refused; "" before any click and again
            once the code or its label changes.
    """

    _esm = esm("copy.js")
    _css = asset("genlm.css")
    code = traitlets.Unicode("").tag(sync=True)
    state = traitlets.Enum(STATES, default_value="").tag(sync=True)
    label = traitlets.Unicode("").tag(sync=True)
    shown = traitlets.Bool(False).tag(sync=True)
    copied = traitlets.Unicode("").tag(sync=True)

    def reveal(self) -> None:
        """Open the box (what a click does, less the clipboard, which only a browser has)."""
        self.shown = True

    @traitlets.observe("code", "label")
    def _forget_copy(self, _change: traitlets.Bunch) -> None:
        """A copy's message no longer holds once the box shows other code, or says other."""
        self.copied = ""
