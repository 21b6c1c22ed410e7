"""The shipped domains: data present, checkers right on known answers, constraints accept the gold answers.

Text to SQL and the JSON panel have their own files (domains/test_spider.py, test_json_schema.py)."""

import json

import pytest
import regex

from genlm_lab.control import InvalidGrammar
from genlm_lab.eval import load_domain
from genlm_lab.eval.domains.json_schema import load_schemas
from genlm_lab.eval.domains.pattern_matching import load_patterns


async def _accepts(potential, text: str) -> bool:
    return await potential.complete(list(text.encode())) == 0.0


def test_patterns_ship_complete_and_compile_in_the_checker():
    patterns = load_patterns()
    assert len(patterns) == 454
    assert sum(1 for p in patterns if _compiles(p)) >= 450


def _compiles(p: str) -> bool:
    try:
        regex.compile(p)
        return True
    except regex.error:
        return False


async def test_pattern_checker_and_constraint_agree_on_examples():
    domain = load_domain(
        "pattern_matching", patterns=[r"(ab)+", r"^(?|(a)|(b))\1$", r"\d{3}-\d{4}"]
    )
    good, bad = ["abab", "aa", "555-1234"], ["aba", "ab", "55-1234"]
    assert len(list(domain.dataset)) == len(good)
    for instance, yes, no in zip(domain.dataset, good, bad, strict=True):
        assert domain.evaluator.evaluate_sample(instance, yes).score == 1
        assert domain.evaluator.evaluate_sample(instance, no).score == 0
        c = domain.constraint(instance)
        assert await _accepts(c, yes) and not await _accepts(c, no)


def test_a_broken_pattern_raises_invalid_grammar():
    domain = load_domain("pattern_matching", patterns=["(unclosed"])
    with pytest.raises(InvalidGrammar):
        domain.constraint(next(iter(domain.dataset)))


async def test_json_schemas_compile_and_accept_a_valid_document():
    domain = load_domain("json_schema", panel=False)  # the panel: domains/test_json_schema.py
    examples = {
        "person": {"name": "Ann", "age": 3},
        "point": {"x": 1, "y": 2.5},
        "colour": "red",
        "tags": ["a", "bc"],
        "book": {"title": "T", "year": 1999, "authors": ["X"]},
        "flag": {"enabled": True},
        "date_event": {"event": "e", "day": "2024-02-29"},
        "rgb": [1, 2, 255],
        "github-discussion": {"body": [{"type": "markdown"}]},
        "github-issue-config": {"blank_issues_enabled": False},
    }
    assert {i.instance_id for i in domain.dataset} == set(examples)
    for instance in domain.dataset:
        doc = json.dumps(examples[instance.instance_id], separators=(",", ":"))
        assert domain.evaluator.evaluate_sample(instance, doc).score == 1, instance.instance_id
        assert await _accepts(domain.constraint(instance), doc), instance.instance_id
    person = next(i for i in domain.dataset if i.instance_id == "person")
    assert domain.evaluator.evaluate_sample(person, '{"name": "A"}').score == 0
    assert domain.evaluator.evaluate_sample(person, "{not json").desc == "not JSON"
    event = next(i for i in domain.dataset if i.instance_id == "date_event")
    assert domain.evaluator.evaluate_sample(event, '{"event":"e","day":"2024-02-30"}').score == 0


def test_prompts_drop_schema_prose():
    schemas = load_schemas()
    assert "description" in json.dumps(schemas["github-discussion"][0])
    domain = load_domain("json_schema")
    instance = next(i for i in domain.dataset if i.instance_id == "github-discussion")
    prompt = domain.prompt(instance)
    assert "A default title that will be pre-populated" not in prompt  # prose gone
    assert '"description":{"type":"string"}' in prompt  # a property called description stays


def test_unknown_domain_lists_the_known_ones():
    with pytest.raises(ValueError, match="pattern_matching"):
        load_domain("nope")
