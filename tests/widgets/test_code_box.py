"""`CodeBox`: the copy-as-code widget's state, and the browser module it ships."""

from __future__ import annotations

import pytest
import traitlets

from genlm_lab.widgets.code_box import CodeBox


def test_the_box_starts_closed_and_empty_and_reveal_opens_it():
    box = CodeBox()
    assert (box.code, box.state, box.label, box.shown, box.copied) == ("", "", "", False, "")
    box.code = "print('hi')"
    box.reveal()
    assert box.shown and box.code == "print('hi')"
    assert box.get_state()["code"] == "print('hi')"  # synced to the browser


def test_the_browser_module_writes_the_clipboard_and_falls_back_to_a_selected_box():
    esm = CodeBox()._esm
    assert "navigator.clipboard" in esm and ".select()" in esm
    assert "export default" in esm


def test_a_copy_message_lasts_only_while_the_code_and_its_label_do():
    box = CodeBox(code="a = 1", state="shown", label="this code reproduces the run shown")
    box.copied = "clipboard"
    box.reveal()  # opening the box changes nothing the copy said
    assert box.copied == "clipboard"
    box.state, box.label = "changed", "the form has changed since the run shown"
    assert box.copied == ""
    box.copied = "selected"
    box.code = "a = 2"
    assert box.copied == ""


def test_the_state_is_one_the_browser_draws():
    box = CodeBox()
    with pytest.raises(traitlets.TraitError):
        box.state = "stale"
    esm = box._esm
    assert "change:copied" in esm and "genlm-code-${state}" in esm
    assert "genlm-code-not_run" in CodeBox()._css and "genlm-code-changed" in CodeBox()._css
