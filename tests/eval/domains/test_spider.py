"""The text-to-SQL domain: every gold query runs, returns rows, is graded as Spider grades it and
is accepted by its database's grammar; the checker compares rows; the shipped files are their build."""

from __future__ import annotations

import re
import shutil
import sqlite3
from collections import Counter
from pathlib import Path

import pytest
from _spider_hardness import counts, hardness

from genlm_lab.eval import load_domain
from genlm_lab.eval.domains.spider import SpiderDataset, SpiderDomain, execute
from genlm_lab.eval.domains.spider_databases import (
    DATABASES,
    DIFFICULTIES,
    build_database,
    database_folder,
    database_path,
    dump,
    load_questions,
)
from genlm_lab.eval.domains.sql_grammar import read_schema


@pytest.fixture(scope="module")
def domain() -> SpiderDomain:
    return load_domain("spider")


@pytest.fixture(scope="module")
def instances(domain) -> list:
    return list(domain.dataset)


async def _accepts(potential, text: str) -> bool:
    return await potential.complete(list(text.encode())) == 0.0


def test_the_question_set_is_large_and_spread_over_databases_and_difficulties(instances):
    assert len(instances) >= 150
    assert {i.db_id for i in instances} == set(DATABASES) and len(DATABASES) >= 3
    cells = Counter((i.db_id, i.difficulty) for i in instances)
    assert set(cells) == {(db, d) for db in DATABASES for d in DIFFICULTIES}
    assert min(cells.values()) >= 3
    per_difficulty = Counter(i.difficulty for i in instances)
    assert min(per_difficulty.values()) >= 0.1 * len(instances)
    assert len({i.instance_id for i in instances}) == len(instances)
    assert len({(i.db_id, i.question) for i in instances}) == len(instances)
    # The 20 questions shipped before stay, first in concert_singer's file.
    first = load_questions("concert_singer")[:20]
    assert first[0]["question"] == "How many singers do we have?"
    assert (
        first[19]["gold"] == "SELECT Song_Name FROM singer ORDER BY Song_release_year DESC LIMIT 1"
    )


def test_every_gold_query_runs_returns_rows_and_scores_one(domain, instances):
    for instance in instances:
        rows = execute(instance.db_path, instance.gold)
        assert rows, (instance.instance_id, instance.gold)
        assert Path(instance.db_path) == database_path(instance.db_id)
        assert domain.evaluator.evaluate_sample(instance, instance.gold).score == 1
        # No repeated row: taking DISTINCT rows or not never decides a question.
        assert len(set(rows)) == len(rows), instance.instance_id
    assert len(instances) >= 150


async def test_each_databases_grammar_accepts_every_gold_query_of_it(domain, instances):
    accepted = 0
    for instance in instances:
        assert await _accepts(domain.constraint(instance), instance.gold), instance.gold
        accepted += 1
    assert accepted == len(instances)
    # The grammars are per database: a query over another database's tables is refused.
    library = next(i for i in instances if i.db_id == "library")
    flights = next(i for i in instances if i.db_id == "flights")
    assert not await _accepts(domain.constraint(library), "SELECT count(*) FROM flight")
    assert not await _accepts(domain.constraint(flights), "SELECT title FROM book")


def test_difficulties_follow_spiders_counting_rules(instances):
    for instance in instances:
        assert instance.difficulty == hardness(instance.gold), (instance.instance_id, instance.gold)
    assert len(instances) >= 150


def test_the_hardness_helper_on_spiders_textbook_cases():
    # Hand-counted: (component 1, component 2, others) and the grade.
    cases = {
        "SELECT count(*) FROM singer": ((0, 0, 0), "easy"),
        "SELECT name, age FROM singer WHERE age > 3": ((1, 0, 1), "medium"),
        "SELECT a FROM t AS T1 JOIN u AS T2 ON T1.x = T2.x WHERE T1.y LIKE 'a%' ORDER BY T1.z": (
            (4, 0, 0),
            "extra",
        ),
        "SELECT a FROM t WHERE b NOT IN (SELECT b FROM u)": ((1, 1, 0), "hard"),
        "SELECT a FROM t WHERE b BETWEEN 1 AND 2": ((1, 0, 0), "easy"),
        "SELECT a FROM t WHERE b = 1 OR c = 2": ((2, 0, 1), "medium"),
        "SELECT a FROM t EXCEPT SELECT a FROM u WHERE b = 1": ((0, 1, 0), "hard"),
        "SELECT a, b, count(*), max(c) FROM t WHERE d = 1 AND e = 2 GROUP BY a, b": (
            (2, 0, 4),
            "hard",
        ),
    }
    for sql, (expected_counts, grade) in cases.items():
        assert counts(sql) == expected_counts, sql
        assert hardness(sql) == grade, sql
    assert len(cases) == 8


def _tie_broken(sql: str, columns: int, direction: str) -> str:
    """`sql` with every ORDER BY's ties broken by the output columns, all `direction`."""
    text = sql
    for match in reversed(list(re.finditer(r"ORDER BY", text, re.I))):
        outer = text[: match.start()].count("(") == text[: match.start()].count(")")
        i, depth = match.end(), 0
        while i < len(text):
            if text[i] == "(":
                depth += 1
            elif text[i] == ")":
                if depth == 0:
                    break
                depth -= 1
            elif depth == 0 and re.match(r"\s+LIMIT\b", text[i:], re.I):
                break
            i += 1
        keys = range(1, columns + 1) if outer else [1]
        text = text[:i] + "".join(f", {k} {direction}" for k in keys) + text[i:]
    return text


def test_ordered_gold_answers_do_not_hang_on_ties(instances):
    """A superlative or a sorted list has one right answer: breaking the ORDER BY's ties either
    way (by the output columns) gives the gold rows."""
    checked = 0
    for instance in instances:
        if "order by" not in instance.gold.lower():
            continue
        conn = sqlite3.connect(f"file:{instance.db_path}?mode=ro", uri=True)
        try:
            cursor = conn.execute(instance.gold)
            gold, columns = cursor.fetchall(), len(cursor.description)
            for direction in ("ASC", "DESC"):
                broken = _tie_broken(instance.gold, columns, direction)
                assert conn.execute(broken).fetchall() == gold, (instance.instance_id, broken)
        finally:
            conn.close()
        checked += 1
    assert checked >= 25
    # The check finds a tie: two of library's nationalities have two authors each.
    tied = "SELECT nationality FROM author GROUP BY nationality ORDER BY count(*) DESC LIMIT 1"
    path = str(database_path("library"))
    assert execute(path, _tie_broken(tied, 1, "ASC")) != execute(path, _tie_broken(tied, 1, "DESC"))


@pytest.mark.parametrize("name", DATABASES)
def test_the_shipped_sqlite_file_holds_what_its_sql_builds(name, tmp_path):
    built = build_database(database_folder(name), tmp_path / f"{name}.sqlite")
    assert dump(database_path(name)) == dump(built)
    readme = (database_folder(name) / "README.md").read_text("utf-8")
    tables = read_schema(built)
    assert all(f"`{table}`" in readme for table in tables), readme
    assert f"{len(load_questions(name))} questions" in readme


def test_build_database_refuses_to_overwrite_or_to_build_without_a_schema(tmp_path):
    target = tmp_path / "x.sqlite"
    target.touch()
    with pytest.raises(ValueError, match="already exists"):
        build_database(database_folder("library"), target)
    with pytest.raises(ValueError, match="no schema.sql"):
        build_database(tmp_path, tmp_path / "y.sqlite")


def test_the_first_instances_are_a_stratified_sample(instances):
    first = instances[: len(DATABASES) * len(DIFFICULTIES)]
    assert {(i.db_id, i.difficulty) for i in first} == {
        (db, d) for db in DATABASES for d in DIFFICULTIES
    }
    assert len(first) == 12


def test_databases_choose_a_subset_and_bad_choices_raise():
    library = SpiderDataset(databases=["library"])
    assert {i.db_id for i in library} == {"library"}
    assert len(library) == len(load_questions("library"))
    with pytest.raises(ValueError, match="concert_singer, library, flights"):
        SpiderDataset(databases=["nope"])
    with pytest.raises(ValueError, match="empty"):
        SpiderDataset(databases=[])
    with pytest.raises(ValueError, match="not both"):
        SpiderDataset(questions=[{"question": "q", "gold": "SELECT 1"}], databases=["library"])


def test_own_questions_and_a_copied_database_keep_working_and_their_identity(tmp_path):
    copy = tmp_path / "copy.sqlite"
    shutil.copy(database_path("concert_singer"), copy)
    own = SpiderDomain([{"question": "How many?", "gold": "SELECT count(*) FROM singer"}], copy)
    (instance,) = list(own.dataset)
    assert instance.instance_id == 0 and instance.db_id == "copy"
    assert "singer(Singer_ID, Name" in own.prompt(instance)
    # The shipped concert_singer questions over a copy of the file: the same runs.
    shipped, copied = SpiderDomain(databases=["concert_singer"]), SpiderDomain(db_path=copy)
    a, b = next(iter(shipped.dataset)), next(iter(copied.dataset))
    assert a.db_path != b.db_path
    assert shipped.identity(a) == copied.identity(b)
    # A change to the database's rows is a change of identity.
    with sqlite3.connect(copy) as conn:
        conn.execute("DELETE FROM singer WHERE Singer_ID = 1")
    conn.close()
    assert SpiderDomain(db_path=copy).identity(b) != shipped.identity(a)


def test_each_prompt_shows_its_own_database_and_an_example_that_is_not_a_question(domain):
    seen = set()
    for instance in domain.dataset:
        if instance.db_id in seen:
            continue
        seen.add(instance.db_id)
        prompt = domain.prompt(instance)
        for table, columns in read_schema(instance.db_path).items():
            assert f"{table}({', '.join(columns)})" in prompt
        example = prompt.split("Question: ")[1].split("\n")[0]
        assert example not in {q["question"] for q in load_questions(instance.db_id)}
        assert prompt.endswith(f"Question: {instance.question}\nSQL: ")
    assert seen == set(DATABASES)


def test_the_checker_compares_rows_and_refuses_writes():
    domain = load_domain("spider", databases=["concert_singer"])
    first = next(iter(domain.dataset))  # SELECT count(*) FROM singer
    assert domain.evaluator.evaluate_sample(first, "SELECT count(Name) FROM singer").score == 1
    assert domain.evaluator.evaluate_sample(first, "SELECT count(*) FROM stadium").score == 0
    wrong = domain.evaluator.evaluate_sample(first, "SELECT nope FROM singer")
    assert wrong.desc == "error" and "nope" in wrong.metadata["error"]
    assert domain.evaluator.evaluate_sample(first, "DELETE FROM singer").desc == "error"
    assert domain.evaluator.evaluate_sample(first, first.gold).score == 1
    # Order counts only when the gold query orders: a reversed list of a sorted answer is wrong.
    sorted_q = next(i for i in domain.dataset if i.gold.endswith("ORDER BY Capacity DESC"))
    reverse = "SELECT Name, Capacity FROM stadium ORDER BY Capacity"
    assert domain.evaluator.evaluate_sample(sorted_q, reverse).score == 0
    unordered = next(i for i in domain.dataset if i.gold == "SELECT Name FROM stadium")
    reverse = "SELECT Name FROM stadium ORDER BY Name DESC"
    assert domain.evaluator.evaluate_sample(unordered, reverse).score == 1
