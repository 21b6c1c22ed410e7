"""goal_inference.generator: deterministic, the shipped file is its output, and every instance is sound."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from genlm_lab.eval.domains.goal_inference.generator import (
    COUNT,
    SEED,
    generate,
    generate_one,
    main,
    shipped_path,
    to_jsonl,
)
from genlm_lab.eval.domains.goal_inference.pddl import parse_goal
from genlm_lab.eval.domains.goal_inference.semantics import consistent


@pytest.fixture(scope="module")
def instances():
    return generate(SEED, COUNT)


def test_the_shipped_file_is_the_generators_output(instances):
    assert COUNT >= 200
    assert shipped_path().read_text("utf-8") == to_jsonl(instances)


def test_generation_is_deterministic_and_the_seed_matters(instances):
    again = generate(SEED, 30)
    assert again == instances[:30]  # and the first instances do not depend on the count
    assert generate_one(17, SEED) == instances[17]
    other = generate(SEED + 1, 30)
    assert sum(a["gold"] != b["gold"] for a, b in zip(again, other, strict=True)) > 20
    with pytest.raises(ValueError, match="count"):
        generate(SEED, -1)


def test_the_set_spans_sizes_and_kinds(instances):
    sizes = Counter(len(i["blocks"]) for i in instances)
    kinds = Counter(i["kind"] for i in instances)
    assert set(sizes) == set(range(3, 10))
    assert set(kinds) == {"towers", "tower", "facts", "table", "invert"}
    assert min(kinds.values()) >= 10


def _holds_at_start(instance) -> bool:
    """Whether the gold goal already holds in the initial towers (read here from the towers)."""
    true = {("arm-empty",)}
    for tower in instance["init"]:
        true |= {("on-table", tower[0]), ("clear", tower[-1])}
        true |= {("on", tower[k + 1], tower[k]) for k in range(len(tower) - 1)}
    return set(parse_goal(instance["gold"], instance["blocks"])) <= true


def test_every_instance_is_well_formed(instances):
    bad = []
    for inst in instances:
        blocks = inst["blocks"]
        gold = parse_goal(inst["gold"], blocks)
        placed = sorted(b for tower in inst["init"] for b in tower)
        problem = inst["problem"]
        ok = (
            blocks == [f"b{k}" for k in range(1, len(blocks) + 1)]
            and placed == sorted(blocks)
            and consistent(gold)
            and not _holds_at_start(inst)
            and f"(:objects {' '.join(blocks)})" in problem
            and ":goal" not in problem
            and problem.count("(") == problem.count(")") + 1
        )
        if not ok:
            bad.append(inst["instance_id"])
    assert len(instances) == COUNT and bad == []


def _named(text: str) -> set[str]:
    return set(re.findall(r"\bb[1-9]\b", text))


def test_descriptions_name_the_blocks_the_goal_names(instances):
    """A description of a partial goal or of towers names exactly the gold goal's blocks."""
    checked = 0
    for inst in instances:
        if inst["kind"] in ("facts", "tower", "towers"):
            gold = parse_goal(inst["gold"], inst["blocks"])
            assert _named(inst["nl_goal"]) == {b for f in gold for b in f[1:]}, inst
            checked += 1
    assert checked > 150


def test_invert_and_table_goals_follow_the_initial_state(instances):
    """Invert: each initial tower reversed, read off the towers here; table: all blocks down."""
    seen = Counter()
    for inst in instances:
        gold = set(parse_goal(inst["gold"], inst["blocks"]))
        if inst["kind"] == "invert":
            flipped = [list(reversed(t)) for t in inst["init"]]
            want = {("arm-empty",)}
            for t in flipped:
                want |= {("on-table", t[0]), ("clear", t[-1])}
                want |= {("on", t[k + 1], t[k]) for k in range(len(t) - 1)}
            assert gold == want and any(len(t) > 1 for t in inst["init"])
            seen["invert"] += 1
        if inst["kind"] == "table":
            assert gold == {("on-table", b) for b in inst["blocks"]}
            seen["table"] += 1
    assert seen["invert"] > 5 and seen["table"] > 5


def test_the_module_entry_writes_a_set(tmp_path, capsys):
    out = tmp_path / "set.jsonl"
    assert main(["--seed", "3", "--count", "5", "-o", str(out)]) == 0
    assert out.read_text("utf-8") == to_jsonl(generate(3, 5))
    assert "wrote 5 instances (seed 3)" in capsys.readouterr().out
