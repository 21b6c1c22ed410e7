"""`CodeBox`: the copy-as-code widget's state, and the browser module it ships."""

from __future__ import annotations

from genlm_lab.widgets.code_box import CodeBox


def test_the_box_starts_closed_and_empty_and_reveal_opens_it():
    box = CodeBox()
    assert (box.code, box.shown, box.copied) == ("", False, "")
    box.code = "print('hi')"
    box.reveal()
    assert box.shown and box.code == "print('hi')"
    assert box.get_state()["code"] == "print('hi')"  # synced to the browser


def test_the_browser_module_writes_the_clipboard_and_falls_back_to_a_selected_box():
    esm = CodeBox()._esm
    assert "navigator.clipboard" in esm and ".select()" in esm
    assert "export default" in esm
