"""SQL extraction on a corpus of model responses (tests/llm/responses/*.txt).

Each response file has a hand-written expectation in ``responses/expected.toml``: the SQL that
answers the question (or the failure code when there is none), how it was found, how many
distinct queries were seen and whether a choice between them was made.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest
import sqlglot

from polysql.backends import catalog
from polysql.backends.base import EngineInfo
from polysql.core.errors import ConfigError
from polysql.llm.extract import Extraction, extract_sql

RESPONSES = Path(__file__).with_name("responses")
EXPECTED: dict[str, dict[str, Any]] = tomllib.loads(
    (RESPONSES / "expected.toml").read_text(encoding="utf-8"))


def test_every_response_file_has_an_expectation_and_back() -> None:
    files = {path.stem for path in RESPONSES.glob("*.txt")}
    assert files == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_corpus(name: str) -> None:
    expected = EXPECTED[name]
    text = (RESPONSES / f"{name}.txt").read_text(encoding="utf-8")
    got = extract_sql(text, expected.get("dialect"))
    assert got == Extraction(
        sql=expected.get("sql"),
        method=expected["method"],
        candidates=expected["candidates"],
        choice_made=expected["choice_made"],
        failure=expected.get("failure"),
    )


def test_none_is_an_empty_response() -> None:
    assert extract_sql(None).failure == "empty_response"


def test_failure_and_sql_are_exclusive_across_the_corpus() -> None:
    for name in EXPECTED:
        got = extract_sql((RESPONSES / f"{name}.txt").read_text(encoding="utf-8"))
        assert (got.sql is None) == (got.failure is not None), name


@pytest.mark.parametrize("text", [
    "```sql\n", "```", "{", '{"sql": 5}', '{"sql": null}', "'", "/*", "SELECT", "(((",
    "```sql\nSELECT 'unterminated\n```", "WITH", "\x00\x01", "SELECT ;;;; FROM", "<think></think>",
    "`SELECT`", "Answer:", "```json\n{\"sql\": \"\"}\n```", "-- only a comment",
])
def test_odd_inputs_never_raise(text: str) -> None:
    got = extract_sql(text)
    assert (got.sql is None) == (got.failure is not None)


def test_to_dict_is_plain_data() -> None:
    assert extract_sql("SQL: SELECT 1").to_dict() == {
        "sql": "SELECT 1", "method": "labeled", "candidates": 1, "choice_made": False,
        "failure": None,
    }


def test_unknown_dialect_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unknown SQL dialect 'postgress'"):
        extract_sql("SELECT 1", "postgress")


# --- answers the endpoint cut at its token limit ----------------------------------------------------


def test_query_running_to_the_end_of_a_cut_answer_is_truncated() -> None:
    # Looks whole, but the model was stopped mid-way: the WHERE clause may have lost a condition.
    text = "SELECT name FROM singer WHERE country = 'France' AND age"
    assert extract_sql(text).sql == text  # without the hint it cannot be told apart
    assert extract_sql(text, truncated=True) == Extraction(
        None, "bare", 1, False, "truncated_response")


def test_closed_block_before_the_cut_is_kept() -> None:
    text = "```sql\nSELECT COUNT(*) FROM singer\n```\n\nThis query counts the rows of the singer"
    assert extract_sql(text, truncated=True).sql == "SELECT COUNT(*) FROM singer"


def test_cut_json_answer_is_not_taken_as_json() -> None:
    text = '{"sql": "SELECT name FROM singer WHERE age > 3'
    assert extract_sql(text, truncated=True).failure == "truncated_response"


def test_backslash_is_plain_text_in_standard_sql_strings() -> None:
    # In SQLite and PostgreSQL 'C:\' is a whole string: the backslash escapes nothing.
    text = "```sql\nSELECT path FROM file WHERE path = 'C:\\' ;\n```"
    assert extract_sql(text, "sqlite").sql == "SELECT path FROM file WHERE path = 'C:\\'"
    assert extract_sql(text, "mysql").failure == "incomplete_sql"  # MySQL reads an open string


def test_versions_per_dialect_fall_back_to_the_usual_choice_for_an_unnamed_dialect() -> None:
    text = (RESPONSES / "versions_per_dialect_fence_labels.txt").read_text(encoding="utf-8")
    # DuckDB is not among the versions: the last one wins as with any other list of drafts.
    assert extract_sql(text, "duckdb").sql == "SELECT GROUP_CONCAT(name SEPARATOR ', ') FROM singer"
    assert extract_sql(text, "postgres").sql == "SELECT string_agg(name, ', ') FROM singer"


# --- what the engines declare: their names in answers, their string escapes --------------------


@pytest.mark.parametrize("info", catalog.infos(), ids=lambda info: info.name)
def test_every_engine_is_recognised_by_the_names_it_declares(info: EngineInfo) -> None:
    assert info.name in info.text_names
    assert all(name == name.lower() for name in info.text_names)
    other = next(i for i in catalog.infos() if i.dialect != info.dialect)
    for name in info.text_names:
        # a fence labelled with the name holds SQL
        if " " not in name:
            fenced = extract_sql(f"```{name}\nSELECT 1 AS one\n```", info.dialect)
            assert (fenced.sql, fenced.method) == ("SELECT 1 AS one", "fenced_sql"), name
        # and the name in prose picks that engine's version out of several
        text = (f"For {name.title()}:\n\n```sql\nSELECT 'mine' AS v\n```\n\n"
                f"For {other.text_names[0].title()}:\n\n```sql\nSELECT 'theirs' AS v\n```\n")
        assert extract_sql(text, info.dialect).sql == "SELECT 'mine' AS v", name


@pytest.mark.parametrize("info", catalog.infos(), ids=lambda info: info.name)
def test_backslash_escapes_follow_the_dialects_tokenizer(info: EngineInfo) -> None:
    text = "```sql\nSELECT path FROM file WHERE path = 'C:\\' ;\n```"
    escapes = "\\" in sqlglot.Dialect.get_or_raise(info.dialect).tokenizer_class.STRING_ESCAPES
    got = extract_sql(text, info.dialect)
    if escapes:  # the quote is escaped, so the string never closes
        assert got.failure == "incomplete_sql"
    else:
        assert got.sql == "SELECT path FROM file WHERE path = 'C:\\'"


def test_an_unknown_dialect_names_the_installed_engines_dialects() -> None:
    with pytest.raises(ConfigError) as caught:
        extract_sql("SELECT 1", "postgress")
    for info in catalog.infos():
        assert repr(info.dialect) in str(caught.value)
