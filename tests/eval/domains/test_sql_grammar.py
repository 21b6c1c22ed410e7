"""sql_grammar: the generated Lark grammar against lark's own Earley parser and SQLite itself."""

from __future__ import annotations

import asyncio
import math
import random
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from lark import Lark
from lark.exceptions import LarkError

from genlm_lab.control import BoolCFG
from genlm_lab.eval.domains.sql_grammar import read_schema, sql_grammar


def _find_database() -> Path:
    """The Spider concert_singer folder: ../shared/datasets beside the checkout, or /work/shared."""
    for shared in (Path(__file__).parents[2].parent / "shared", Path("/work/shared")):
        folder = shared / "datasets" / "spider_concert_singer"
        if (folder / "concert_singer.sqlite").exists():
            return folder
    pytest.skip("the Spider concert_singer database is not here", allow_module_level=True)


DATABASE = _find_database()
SQLITE = DATABASE / "concert_singer.sqlite"

# Questions over concert_singer written for these tests (Spider's style: T1/T2 aliases,
# double-quoted strings, spaced operators); each one runs in SQLite.
QUERIES = [
    "SELECT count(*) FROM singer",
    "SELECT name ,  country ,  age FROM singer ORDER BY age DESC",
    "SELECT avg(age) ,  min(age) ,  max(age) FROM singer WHERE country  =  'France'",
    "SELECT song_name ,  song_release_year FROM singer ORDER BY age LIMIT 1",
    "SELECT DISTINCT country FROM singer WHERE age  >  20",
    "SELECT country ,  count(*) FROM singer GROUP BY country",
    "SELECT song_name FROM singer WHERE age  >  (SELECT avg(age) FROM singer)",
    "SELECT LOCATION ,  name FROM stadium WHERE capacity BETWEEN 5000 AND 10000",
    "select max(capacity), average from stadium",
    "SELECT avg(capacity) ,  max(capacity) FROM stadium",
    "SELECT name ,  capacity FROM stadium ORDER BY average DESC LIMIT 1",
    "SELECT count(*) FROM concert WHERE YEAR  =  2014 OR YEAR  =  2015",
    "SELECT T2.name ,  count(*) FROM concert AS T1 JOIN stadium AS T2 ON T1.stadium_id  =  "
    "T2.stadium_id GROUP BY T1.stadium_id",
    "SELECT T2.name ,  T2.capacity FROM concert AS T1 JOIN stadium AS T2 ON T1.stadium_id  =  "
    "T2.stadium_id WHERE T1.year  >=  2014 GROUP BY T2.stadium_id ORDER BY count(*) DESC LIMIT 1",
    "SELECT YEAR FROM concert GROUP BY YEAR ORDER BY count(*) DESC LIMIT 1",
    "SELECT name FROM stadium WHERE stadium_id NOT IN (SELECT stadium_id FROM concert)",
    "SELECT country FROM singer WHERE age  >  40 INTERSECT SELECT country FROM singer WHERE age  <  30",
    "SELECT name FROM stadium EXCEPT SELECT T2.name FROM concert AS T1 JOIN stadium AS T2 ON "
    "T1.stadium_id  =  T2.stadium_id WHERE T1.year  =  2014",
    "SELECT T2.concert_name ,  T2.theme ,  count(*) FROM singer_in_concert AS T1 JOIN concert AS T2 "
    "ON T1.concert_id  =  T2.concert_id GROUP BY T2.concert_id",
    "SELECT T2.name ,  count(*) FROM singer_in_concert AS T1 JOIN singer AS T2 ON T1.singer_id  =  "
    "T2.singer_id GROUP BY T2.singer_id",
    "SELECT T2.name FROM singer_in_concert AS T1 JOIN singer AS T2 ON T1.singer_id  =  T2.singer_id "
    "JOIN concert AS T3 ON T1.concert_id  =  T3.concert_id WHERE T3.year  =  2014",
    "SELECT name ,  country FROM singer WHERE song_name LIKE '%Hey%'",
    "SELECT name ,  location FROM stadium WHERE stadium_id IN (SELECT stadium_id FROM concert "
    "WHERE YEAR  =  2014) INTERSECT SELECT name ,  location FROM stadium WHERE stadium_id IN "
    "(SELECT stadium_id FROM concert WHERE YEAR  =  2015)",
    "SELECT count(*) FROM concert WHERE stadium_id  =  (SELECT stadium_id FROM stadium ORDER BY "
    "capacity DESC LIMIT 1)",
    'SELECT count(*) FROM stadium WHERE capacity > 10000 AND NOT location = "Raith Rovers";',
    "SELECT name, CASE WHEN is_male = 'T' THEN 'm' ELSE 'f' END AS sex FROM singer ORDER BY name "
    "ASC LIMIT 3 OFFSET 1",
    "SELECT singer.name, upper(singer.country) FROM singer WHERE singer.age IS NOT NULL",
    "SELECT count(DISTINCT country) FROM singer",
    "SELECT max(age) - min(age) FROM singer GROUP BY country HAVING count(*) > 1",
    "SELECT s.* FROM singer AS T1 JOIN singer AS s ON 1 = 1",  # invalid: table aliases are T<n>
    "SELECT T1.* FROM singer AS T1 WHERE EXISTS (SELECT * FROM singer_in_concert AS T2 WHERE "
    "T2.singer_id = T1.singer_id)",
]
NOT_SQL = [
    "SELECTname FROM singer",
    "SELECT name FROMsinger",
    "SELECT nam FROM singer",
    "SELECT stadium.age FROM stadium",  # age is a column of singer
    "SELECT name FROM singer WHERE",
    "SELECT * FROM singer LIMIT",
    "SELECT count(* FROM singer",
    "select name from singer order by",
]


def run(coro):
    return asyncio.run(coro)


@pytest.fixture(scope="module")
def grammar() -> str:
    return sql_grammar(SQLITE)


@pytest.fixture(scope="module")
def lark_parser(grammar):
    return Lark(grammar, parser="earley")


@pytest.fixture(scope="module")
def cfg(grammar):
    return BoolCFG.from_lark(grammar)


def lark_accepts(parser: Lark, text: str) -> bool:
    try:
        parser.parse(text)
    except LarkError:
        return False
    return True


def sqlite_runs(text: str) -> bool:
    connection = sqlite3.connect(f"file:{SQLITE}?mode=ro", uri=True)
    try:
        connection.execute(text).fetchall()
    except sqlite3.Error:
        return False
    finally:
        connection.close()
    return True


def test_the_schema_is_read_from_the_database():
    tables = read_schema(SQLITE)
    assert set(tables) == {"concert", "singer", "singer_in_concert", "stadium"}
    assert tables["singer"][:3] == ["Singer_ID", "Name", "Country"]
    with pytest.raises(ValueError, match="no SQLite database"):
        sql_grammar(DATABASE / "missing.sqlite")


@pytest.mark.slow
def test_queries_that_sqlite_runs_are_accepted_by_lark_and_the_potential(cfg, lark_parser):
    gold = (DATABASE / "dev_gold.sql").read_text().split("\t")[0].strip()
    accepted = 0
    for query in [gold, *QUERIES]:
        expected = lark_accepts(lark_parser, query)
        assert (run(cfg.complete(list(query.encode()))) == 0) == expected, query
        if sqlite_runs(query) and "s.*" not in query:
            assert expected, query
            accepted += 1
    assert accepted >= 30


def test_malformed_queries_are_refused_by_both(cfg, lark_parser):
    for query in NOT_SQL:
        assert not lark_accepts(lark_parser, query), query
        assert run(cfg.complete(list(query.encode()))) == -math.inf, query


def mutations(text: str, rng: random.Random, n: int) -> list[str]:
    """Near-misses: a word or character deleted, duplicated or swapped."""
    out = []
    words = text.split(" ")
    for _ in range(n):
        kind = rng.randrange(4)
        if kind == 0:
            i = rng.randrange(len(words))
            out.append(" ".join(words[:i] + words[i + 1 :]))
        elif kind == 1:
            i = rng.randrange(len(words))
            out.append(" ".join(words[: i + 1] + words[i:]))
        elif kind == 2:
            i = rng.randrange(len(text))
            out.append(text[:i] + text[i + 1 :])
        else:
            i, j = sorted(rng.sample(range(len(words)), 2))
            out.append(
                " ".join(words[:i] + [words[j]] + words[i + 1 : j] + [words[i]] + words[j + 1 :])
            )
    return out


@pytest.mark.slow
def test_complete_agrees_with_lark_on_near_misses(cfg, lark_parser):
    rng = random.Random(0)
    agreed = rejected = 0
    for query in QUERIES[:16]:
        for text in mutations(query, rng, 6):
            expected = lark_accepts(lark_parser, text)
            assert (run(cfg.complete(list(text.encode()))) == 0) == expected, text
            agreed += 1
            rejected += not expected
    assert agreed == 96 and rejected > 20


def test_every_byte_of_a_query_is_allowed_and_walks_end_in_lark_sentences(cfg, lark_parser):
    query = QUERIES[13].encode()
    for cut in range(len(query)):
        assert cfg.allowed(list(query[:cut]))[query[cut]], query[:cut]
    rng = random.Random(1)
    ended = 0
    for _ in range(12):
        text = b"SELECT "
        for _ in range(120):
            mask = cfg.allowed(list(text))
            if mask[256] and rng.random() < 0.3:
                assert lark_accepts(lark_parser, text.decode()), text
                ended += 1
                break
            options = np.flatnonzero(mask[:256])
            assert len(options), text
            # prefer letters and spaces so that walks reach the end of words
            text += bytes([int(rng.choice(options))])
    assert ended >= 3
