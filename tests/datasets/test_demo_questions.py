"""The bundled demo questions: well-formed, tagged from the vocabulary, and runnable on SQLite."""

from __future__ import annotations

import re
import sqlite3
from collections import Counter
from pathlib import Path

import pytest
import sqlglot
from sqlglot import exp

from polysql.datasets.base import Question
from polysql.datasets.demo import DB_ID, DemoDataset
from polysql.datasets.tags import ALL_TAGS, CONSTRUCT_TAGS, DIFFICULTIES, HAZARD_TAGS

DOCS = Path(__file__).resolve().parents[2] / "docs" / "datasets.md"


def run(db: Path, sql: str) -> list[tuple]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_at_least_eighty_questions_with_unique_ids(demo_questions: list[Question]) -> None:
    assert len(demo_questions) >= 80
    ids = [q.id for q in demo_questions]
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"demo-\d{3}", i) for i in ids)


def test_fields_are_filled_and_from_the_vocabulary(demo_questions: list[Question]) -> None:
    for q in demo_questions:
        assert q.db_id == DB_ID
        assert q.question.strip() and q.gold_sql.strip()
        assert q.difficulty in DIFFICULTIES, q.id
        assert q.tags and set(q.tags) <= set(ALL_TAGS), q.id
        assert len(set(q.tags)) == len(q.tags), q.id
        hazards = set(q.tags) & set(HAZARD_TAGS)
        assert ("portable" in q.tags) != bool(hazards), f"{q.id}: portable xor hazard"


def test_spread_of_portable_and_hazardous_questions(demo_questions: list[Question]) -> None:
    counts = Counter(tag for q in demo_questions for tag in q.tags)
    portable = counts["portable"]
    assert 15 <= portable <= len(demo_questions) // 2
    # every hazard in the vocabulary is exercised by at least one question
    assert [tag for tag in HAZARD_TAGS if counts[tag] == 0] == []
    assert counts["limit_with_ties"] >= 2


def test_every_gold_query_runs_on_sqlite(demo_db: Path, demo_questions: list[Question]) -> None:
    empty = []
    for q in demo_questions:
        try:
            rows = run(demo_db, q.gold_sql)
        except sqlite3.Error as exc:  # pragma: no cover - the failure message is the point
            pytest.fail(f"{q.id}: gold SQL fails on SQLite: {exc}\n{q.gold_sql}")
        if not rows or all(v is None for row in rows for v in row):
            empty.append(q.id)
    assert len(empty) <= len(demo_questions) // 10, f"empty results: {empty}"


def test_gold_queries_do_not_depend_on_the_clock_or_chance(demo_questions: list[Question]) -> None:
    banned = re.compile(r"'now'|current_(date|time|timestamp)|random\s*\(|localtime", re.I)
    offenders = [q.id for q in demo_questions if banned.search(q.gold_sql)]
    assert offenders == []


def test_limited_queries_are_ordered(demo_questions: list[Question]) -> None:
    for q in demo_questions:
        if re.search(r"\blimit\b", q.gold_sql, re.I):
            assert re.search(r"\border\s+by\b", q.gold_sql, re.I), q.id
            assert "order_limit" in q.tags, q.id


def tie_at_limit(db: Path, sql: str) -> bool:
    """Whether the rows at positions LIMIT and LIMIT+1 share their ORDER BY keys.

    The query is re-run without its LIMIT and with the ORDER BY keys appended to the output
    (aliases and ordinals resolved to their expressions), so the keys can be compared directly.
    """
    tree = sqlglot.parse_one(sql, read="sqlite")
    limit = int(tree.args["limit"].expression.name)
    projections = list(tree.expressions)
    aliases = {p.alias: p.this for p in projections if isinstance(p, exp.Alias)}
    keys = []
    for ordered in tree.args["order"].expressions:
        key = ordered.this
        if isinstance(key, exp.Column) and not key.table and key.name in aliases:
            key = aliases[key.name]
        elif isinstance(key, exp.Literal) and key.is_int:
            projection = projections[int(key.name) - 1]
            key = projection.this if isinstance(projection, exp.Alias) else projection
        keys.append(key.copy())
    probe = tree.copy()
    probe.set("limit", None)
    probe.set("expressions", [*projections, *(exp.alias_(k, f"_key{i}") for i, k in enumerate(keys))])
    rows = [row[len(projections):] for row in run(db, probe.sql(dialect="sqlite"))]
    return len(rows) > limit and rows[limit - 1] == rows[limit]


def test_ties_at_the_limit_only_where_tagged(demo_db: Path,
                                             demo_questions: list[Question]) -> None:
    limited = [q for q in demo_questions if "order_limit" in q.tags]
    assert limited
    for q in limited:
        assert tie_at_limit(demo_db, q.gold_sql) == ("limit_with_ties" in q.tags), q.id


def test_tags_that_name_sql_features_match_the_sql(demo_questions: list[Question]) -> None:
    # A cheap guard against mis-tagging: the tag's tell-tale keyword appears in the gold SQL.
    tells = {
        "group_concat": r"group_concat\(", "iif": r"\biif\(", "ifnull": r"\bifnull\(",
        "glob": r"\bglob\b", "printf": r"\bprintf\(", "typeof": r"\btypeof\(",
        "cast": r"\bcast\(", "window_function": r"\bover\s*\(", "cte": r"^\s*with\b",
        "recursive_cte": r"\bwith\s+recursive\b", "having": r"\bhaving\b",
        "string_concat": r"\|\|", "double_quoted_strings": r"= \"[a-z]",
        "outer_join": r"\bleft\s+join\b", "set_operation": r"\b(union|intersect|except)\b",
        "case_sensitive_like": r"\blike\b", "exists": r"\bexists\b",
    }
    for q in demo_questions:
        for tag, pattern in tells.items():
            has_tag = tag in q.tags
            has_sql = re.search(pattern, q.gold_sql, re.I) is not None
            if tag in ("case_sensitive_like", "string_concat", "cte", "outer_join",
                       "set_operation", "exists", "cast", "having"):
                assert not has_tag or has_sql, f"{q.id} tagged {tag} without {pattern}"
            else:
                assert has_tag == has_sql, f"{q.id}: tag {tag} vs SQL"


def test_derived_table_alias_tag_matches_the_sql(demo_questions: list[Question]) -> None:
    for q in demo_questions:
        tree = sqlglot.parse_one(q.gold_sql, read="sqlite")
        unaliased = [s for s in tree.find_all(exp.Subquery)
                     if not s.alias and isinstance(s.parent, (exp.From, exp.Join))]
        assert bool(unaliased) == ("derived_table_alias" in q.tags), q.id


def test_demo_dataset_serves_the_database(demo_db: Path) -> None:
    dataset = DemoDataset.load(cache_dir=demo_db.parents[3])
    assert dataset.name == "demo"
    assert dataset.db_ids() == [DB_ID]
    assert dataset.database_path(DB_ID) == demo_db
    assert dataset.database_url(DB_ID) == f"sqlite:///{demo_db}"
    assert dataset.question("demo-001").db_id == DB_ID


def test_docs_list_every_tag() -> None:
    text = DOCS.read_text(encoding="utf-8")
    missing = [tag for tag in {**HAZARD_TAGS, **CONSTRUCT_TAGS} if f"`{tag}`" not in text]
    assert missing == []
