"""`pattern_example`: a short string each pattern finds, checked by `re` itself."""

from __future__ import annotations

import re

import pytest

from genlm_lab.control import JsonSchema
from genlm_lab.control.constraint.json.pattern_example import pattern_example

# patterns of the kind SchemaStore schemas carry
PATTERNS = [
    r"https://orcid\.org/[0-9]{4}-[0-9]{4}-[0-9]{4}-[0-9]{3}[0-9X]{1}",
    r"^(https|http|ftp|sftp)://.+",
    r"^\d+(\.\d+)*$",
    r"^\$\{\{.*\}\}$",
    r"^[A-Z][a-z]+(?:_[A-Z][a-z]+)*$",
    r"^v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z-.]+)?$",
    r"^\s*[a-z]+\s*$",
    r"(?i)^[0-9a-f]{8}$",
    r"^x-",
    r"[0-9]$",
]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_the_example_is_found_by_the_pattern_and_anchoring_is_read(pattern):
    text, anchored = pattern_example(pattern)
    assert re.search(pattern, text), (pattern, text)
    assert anchored == pattern.lstrip("(?i)").startswith("^")
    assert len(text) <= 40


@pytest.mark.parametrize("pattern", [r"[^a]+", r"(?=x)y", r"(a)\1", r"\bword"])
def test_what_it_does_not_write_gives_none(pattern):
    assert pattern_example(pattern) is None


def test_the_finish_closes_a_string_whose_unanchored_pattern_the_mask_cannot_close():
    """The greedy walk writes "aaa..." under `re.search` semantics; the pattern's example
    closes the string, and the document is valid."""
    schema = JsonSchema({
        "type": "object",
        "properties": {"orcid": {"type": "string", "pattern": PATTERNS[0]}},
        "required": ["orcid"],
        "additionalProperties": False,
    })  # fmt: skip
    for prefix in (b"{", b'{"orcid":"', b'{"orcid":"see '):
        tail = schema.finish(prefix)
        assert tail is not None and schema.validate(prefix + tail), (prefix, tail)


def test_an_anchored_pattern_is_closed_by_the_end_of_its_example_after_what_is_written():
    """citation-file-format's e-mail pattern: after "orig" the shortest end of the example
    that `re` finds in the whole value ("@a.aa") closes it; the greedy walk wrote "aaa..."."""
    schema = JsonSchema({
        "type": "object",
        "properties": {"email": {"type": "string", "pattern": r"^[\S]+@[\S]+\.[\S]{2,}$"}},
        "required": ["email"],
    })  # fmt: skip
    assert schema.finish(b'{"email":"orig') == b'@a.aa"}'
    assert schema.validate(b'{"email":"orig@a.aa"}')
