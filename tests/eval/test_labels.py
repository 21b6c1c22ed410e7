"""eval/labels.py: an instance's label picks its most telling field and fits a width."""

from __future__ import annotations

from genlm_lab.eval.labels import instance_label


def test_the_name_comes_before_other_text():
    assert instance_label({"instance_id": 1, "text": "b", "name": "a"}) == "a"


def test_a_schema_is_shown_as_compact_json_and_cut_to_the_width():
    label = instance_label({"instance_id": 0, "schema": {"type": "object", "required": ["x"]}}, 16)
    assert label == '{"type":"object…'
    assert len(label) == 16


def test_json_text_is_read_and_other_text_kept():
    assert instance_label('{"question": "why   not"}') == "why not"
    assert instance_label("not json at all", 8) == "not json"
    assert instance_label(None) == ""
