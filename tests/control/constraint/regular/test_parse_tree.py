"""`parse_tree`: one reading of `re`'s parse tree for every family that asks about a pattern."""

from __future__ import annotations

import itertools

from genlm_lab.control.constraint.regular.parse_tree import nodes, parse


def test_every_node_comes_once_in_the_patterns_order():
    tree = parse(r"a(b|cd)[d-f]+(?=g)(?(1)h|i)\1")
    names = [name for name, _ in nodes(tree)]
    assert names == [
        "LITERAL", "SUBPATTERN", "BRANCH", "LITERAL", "LITERAL", "LITERAL", "MAX_REPEAT", "IN", "RANGE",
        "ASSERT", "LITERAL", "GROUPREF_EXISTS", "LITERAL", "LITERAL", "GROUPREF",
    ]  # fmt: skip
    literals = [chr(arg) for name, arg in nodes(tree) if name == "LITERAL"]
    assert literals == list("abcdghi")


def test_what_re_cannot_read_is_none_and_warnings_count_only_when_strict():
    assert parse("(") is None and parse(r"\p{L}") is None  # the `regex` module's syntax
    assert parse("[[a]") is None  # a FutureWarning (a nested set) is unreadable when strict
    assert parse("[[a]", strict=False) is not None


def test_the_walk_does_not_recurse_on_deep_patterns():
    deep = "(" * 90 + "a" + ")" * 90
    assert sum(1 for name, _ in nodes(parse(deep)) if name == "SUBPATTERN") == 90
    assert list(itertools.islice(nodes(parse("")), 1)) == []
