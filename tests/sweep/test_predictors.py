from __future__ import annotations

import codecs
import hashlib
import json
import re
from pathlib import Path

import duckdb
import pytest

from polysql.core.errors import ConfigError, PredictionFileError
from polysql.core.predictor import TargetEngine
from polysql.datasets.base import Question
from polysql.sweep.execution_cache import SCHEMA_VERSION, execution_key
from polysql.sweep.prediction_files import FilePredictor
from polysql.sweep.predictors import make_predictor
from polysql.sweep.text_checks import first_text_problem, text_problem

QUESTION = Question(id="q1", db_id="db", question="?",
                    gold_sql="SELECT 'a' || 'b' AS ab, GROUP_CONCAT(x) AS xs FROM (SELECT 1 AS x)")
DUCKDB = TargetEngine("duckdb", "duckdb")
SQLITE = TargetEngine("sqlite", "sqlite")
MYSQL = TargetEngine("mysql", "mysql")


def test_gold_runs_verbatim_everywhere() -> None:
    gold = make_predictor("gold")
    assert gold.predict(QUESTION, DUCKDB).sql == QUESTION.gold_sql
    assert gold.predict(QUESTION, MYSQL).sql == QUESTION.gold_sql


def test_transpile_rewrites_for_the_target_and_keeps_the_source_verbatim() -> None:
    transpile = make_predictor("transpile")
    mysql = transpile.predict(QUESTION, MYSQL)
    assert mysql.sql is not None and "CONCAT" in mysql.sql.upper()
    same = transpile.predict(QUESTION, SQLITE)
    assert same.sql == QUESTION.gold_sql and same.meta == {"identity": True}
    # GROUP_CONCAT does not exist in DuckDB; the transpiled query runs there
    duck = transpile.predict(QUESTION, DUCKDB)
    assert duck.sql is not None and "GROUP_CONCAT" not in duck.sql.upper()
    assert duckdb.sql(duck.sql).fetchall() == [("ab", "1")]


def test_transpile_failure_is_recorded_not_raised() -> None:
    broken = Question(id="q2", db_id="db", question="?", gold_sql="SELECT * FROM t WHERE")
    prediction = make_predictor("transpile").predict(broken, DUCKDB)
    assert prediction.sql is None
    assert prediction.failure is not None and prediction.failure.startswith("transpile_failure")


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_file_predictor_matches_engine_name_dialect_or_any(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "preds.jsonl", [
        json.dumps({"question_id": "q1", "dialect": "duckdb", "sql": "SELECT 1"}),
        json.dumps({"question_id": "q1", "dialect": "postgres", "sql": "SELECT 2"}),
        json.dumps({"question_id": "q1", "sql": "SELECT 3"}),
    ])
    predictor = FilePredictor(path)
    assert predictor.name == "file:preds"
    assert predictor.predict(QUESTION, DUCKDB).sql == "SELECT 1"
    assert predictor.predict(QUESTION, TargetEngine("pg", "postgres")).sql == "SELECT 2"
    assert predictor.predict(QUESTION, SQLITE).sql == "SELECT 3"
    other = Question(id="q9", db_id="db", question="?", gold_sql="SELECT 1")
    missing = predictor.predict(other, DUCKDB)
    assert missing.sql is None and missing.failure == "missing_prediction"


def test_malformed_lines_are_reported_with_file_and_line_and_skipped(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "preds.jsonl", [
        json.dumps({"question_id": "q1", "dialect": "duckdb", "sql": "SELECT 1"}),
        "{not json",
        json.dumps(["a", "list"]),
        json.dumps({"question_id": "q2", "dialect": "duckdb"}),
        "",
        json.dumps({"question_id": "q1", "dialect": "duckdb", "sql": "SELECT 2"}),
    ])
    predictor = FilePredictor(path, name="mine")
    problems = [str(p) for p in predictor.problems]
    assert [p.line for p in predictor.problems] == [2, 3, 4, 6]
    assert problems[0].startswith(f"{path}:2: not valid JSON")
    assert "missing 'sql'" in problems[2]
    assert "duplicate" in problems[3]
    assert predictor.predict(QUESTION, DUCKDB).sql == "SELECT 1"  # first one kept


def test_unreadable_prediction_files_raise_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(PredictionFileError, match="does not exist"):
        FilePredictor(tmp_path / "nope.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n", encoding="utf-8")
    with pytest.raises(PredictionFileError, match="empty"):
        FilePredictor(tmp_path / "empty.jsonl")


def test_predictor_specs(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "p.jsonl", [json.dumps({"question_id": "q1", "sql": "SELECT 1"})])
    assert make_predictor(f"model-a={path}").name == "model-a"
    assert make_predictor(f"file:{path}").name == "file:p"
    with pytest.raises(ConfigError, match="unknown predictor 'oracle'"):
        make_predictor("oracle")


# -- predictions files: one bad line never spoils the others, nothing is dropped silently ---------

ENGINES = [("sqlite", "sqlite"), ("duckdb", "duckdb")]


def line(qid: object, sql: str, dialect: str | None = "duckdb") -> bytes:
    """One JSONL line; json.dumps escapes non-ASCII, so a lone surrogate stays valid JSON."""
    obj: dict[str, object] = {"question_id": qid, "sql": sql}
    if dialect is not None:
        obj["dialect"] = dialect
    return json.dumps(obj).encode("ascii")


def question(qid: str) -> Question:
    return Question(id=qid, db_id="db", question="?", gold_sql="SELECT 1")


def test_a_bad_byte_spoils_only_its_line_and_its_question_records_why(tmp_path: Path) -> None:
    bad = b'{"question_id": "q2", "dialect": "duckdb", "sql": "SELECT \'caf\xe9\'"}'
    path = tmp_path / "preds.jsonl"
    path.write_bytes(b"\n".join([line("q1", "SELECT 1"), bad, line("q3", "SELECT 3")]) + b"\n")
    predictor = FilePredictor(path)
    column = bad.index(b"\xe9") + 1
    assert [str(p) for p in predictor.problems] == [
        f"{path}:2: not valid UTF-8 (byte 0xe9 at column {column}); save the file as UTF-8"
    ]
    assert predictor.predict(question("q1"), DUCKDB).sql == "SELECT 1"
    assert predictor.predict(question("q3"), DUCKDB).sql == "SELECT 3"
    spoiled = predictor.predict(question("q2"), DUCKDB)
    assert spoiled.sql is None
    assert spoiled.failure == f"invalid_prediction: {path}:2: not valid UTF-8 (byte 0xe9 at column {column}); " \
                              "save the file as UTF-8"
    assert predictor.predict(question("q2"), SQLITE).failure == "missing_prediction"  # other engine
    assert predictor.describe()["predictions"] == 2 and predictor.describe()["skipped_lines"] == 1


def test_a_bad_byte_where_the_id_cannot_be_read_is_reported_and_nothing_is_guessed(tmp_path: Path) -> None:
    in_id = b'{"question_id": "q\xff1", "dialect": "duckdb", "sql": "SELECT 1"}'
    outside = b'{"question_id": "q2", "dialect": "duckdb", "sql": "SELECT 2"}\xff'  # not in a string
    path = tmp_path / "preds.jsonl"
    path.write_bytes(b"\n".join([in_id, outside, line("q3", "SELECT 3")]))
    predictor = FilePredictor(path)
    assert [(p.line, p.message.split(" (")[0]) for p in predictor.problems] == [
        (1, "not valid UTF-8"), (2, "not valid UTF-8")]
    column = in_id.index(b"\xff") + 1
    assert f"byte 0xff at column {column})" in predictor.problems[0].message
    assert f"byte 0xff at column {len(outside)})" in predictor.problems[1].message
    for qid in ("q1", "q\ufffd1", "q2"):
        assert predictor.predict(question(qid), DUCKDB).failure == "missing_prediction"
    assert predictor.predict(question("q3"), DUCKDB).sql == "SELECT 3"


def test_a_lone_surrogate_is_an_invalid_prediction_and_a_surrogate_pair_is_text(tmp_path: Path) -> None:
    path = tmp_path / "preds.jsonl"
    path.write_bytes(b"\n".join([
        line("q1", "SELECT '\ud800'"),
        line("q2", "SELECT '\U0001f600'"),  # json.dumps writes the escaped pair \ud83d\ude00
        b'{"question_id": "q3", "sql": "SELECT 3", "meta": {"notes": ["ok", "\\udfff"]}}',
    ]))
    assert b"\\ud83d\\ude00" in path.read_bytes()
    predictor = FilePredictor(path)
    assert [p.line for p in predictor.problems] == [1, 3]
    first = predictor.problems[0].message
    assert first.startswith("'sql' holds a lone surrogate U+D800 at offset 8, which is not valid Unicode")
    assert "write the character itself or a complete surrogate pair" in first
    assert predictor.problems[1].message.startswith("'meta.notes[1]' holds a lone surrogate U+DFFF at offset 0")
    failure = predictor.predict(question("q1"), DUCKDB).failure
    assert failure == f"invalid_prediction: {path}:1: {first}"
    assert predictor.predict(question("q2"), DUCKDB).sql == "SELECT '\U0001f600'"
    assert predictor.predict(question("q3"), SQLITE).failure == f"invalid_prediction: {predictor.problems[1]}"


def test_text_problem_names_the_lone_surrogate_and_its_offset() -> None:
    assert text_problem("SELECT 'café \U0001f600'") is None
    assert text_problem("ab\udc80") == "lone surrogate U+DC80 at offset 2"


def test_bom_crlf_and_unicode_line_separators_are_read_as_one_line_each(tmp_path: Path) -> None:
    path = tmp_path / "preds.jsonl"
    path.write_bytes(codecs.BOM_UTF8 + b"\r\n".join([
        line("q1", "SELECT 1"),
        json.dumps({"question_id": "q2", "sql": "SELECT '\u2028'"}, ensure_ascii=False).encode(),
        b"{broken",
        b"",
    ]))
    predictor = FilePredictor(path)
    assert [str(p) for p in predictor.problems] == [
        f"{path}:3: not valid JSON (Expecting property name enclosed in double quotes at column 2)"]
    assert predictor.predict(question("q1"), DUCKDB).sql == "SELECT 1"
    assert predictor.predict(question("q2"), SQLITE).sql == "SELECT '\u2028'"


def test_a_utf16_file_is_refused_with_how_to_fix_it(tmp_path: Path) -> None:
    path = tmp_path / "preds.jsonl"
    path.write_bytes(line("q1", "SELECT 1").decode().encode("utf-16"))
    with pytest.raises(PredictionFileError, match="UTF-16 .* save it as UTF-8"):
        FilePredictor(path)


def test_a_line_without_sql_records_invalid_prediction_and_duplicates_keep_the_first(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "preds.jsonl", [
        json.dumps({"question_id": "q1", "dialect": "DuckDB", "sql": None}),
        json.dumps({"question_id": "q1", "dialect": "duckdb", "sql": "SELECT 1"}),
        json.dumps({"question_id": 7, "sql": "SELECT 7"}),
    ])
    predictor = FilePredictor(path)
    assert [str(p) for p in predictor.problems] == [
        f"{path}:1: missing 'sql' (must be a string)",
        f"{path}:2: duplicate prediction for question 'q1' dialect 'duckdb' (the one at line 1 is kept)",
    ]
    assert predictor.predict(question("q1"), DUCKDB).failure == \
        f"invalid_prediction: {path}:1: missing 'sql' (must be a string)"
    kept = predictor.predict(question("7"), MYSQL)
    assert kept.sql == "SELECT 7" and kept.meta == {"line": 3}


def test_other_names_of_an_engine_match_it(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "preds.jsonl", [
        json.dumps({"question_id": "q1", "dialect": "postgresql", "sql": "SELECT 'pg'"}),
        json.dumps({"question_id": "q1", "engine": "mariadb", "sql": "SELECT 'maria'"}),
        json.dumps({"question_id": "q1", "dialect": "mysql", "sql": "SELECT 'my'"}),
    ])
    predictor = FilePredictor(path)
    assert predictor.predict(QUESTION, TargetEngine("postgres", "postgres")).sql == "SELECT 'pg'"
    assert predictor.predict(QUESTION, TargetEngine("pg16", "postgres")).sql == "SELECT 'pg'"
    # the engine's own name comes first, then its dialect, then the backend's other names
    assert predictor.predict(QUESTION, TargetEngine("mariadb", "mysql")).sql == "SELECT 'maria'"
    assert predictor.predict(QUESTION, TargetEngine("mysql", "mysql")).sql == "SELECT 'my'"
    assert predictor.predict(QUESTION, DUCKDB).failure == "missing_prediction"


def coverage_file(tmp_path: Path) -> FilePredictor:
    return FilePredictor(write_lines(tmp_path / "preds.jsonl", [
        json.dumps({"question_id": "q1", "dialect": "sqlite", "sql": "SELECT 1"}),       # 1 applies
        json.dumps({"question_id": "q1", "dialect": "postgress", "sql": "SELECT 1"}),    # 2 typo
        json.dumps({"question_id": "q2", "sql": "SELECT 2"}),                            # 3 every engine
        json.dumps({"question_id": "nope", "dialect": "sqlite", "sql": "SELECT 0"}),     # 4 unknown id
        json.dumps({"question_id": "q1", "dialect": "postgres", "sql": "SELECT 1"}),     # 5 not swept
        json.dumps({"question_id": "q2", "dialect": "mysql", "sql": "SELECT 2"}),        # 6 not swept
        json.dumps({"question_id": "q2", "dialect": "tsql", "sql": "SELECT 2"}),         # 7 not swept
        json.dumps({"question_id": "q3", "dialect": "duckdb", "sql": "SELECT \ud800"}),  # 8 invalid
        json.dumps({"question_id": "q4", "dialect": "duckdb"}),                          # 9 invalid
    ]))


def test_audit_counts_what_a_sweep_would_not_use(tmp_path: Path) -> None:
    predictor = coverage_file(tmp_path)
    audit = predictor.audit(["q1", "q2", "q3", "q4", "q5"], ENGINES, dataset="demo")
    path = predictor.path
    assert audit.predictions == 9 and audit.skipped_lines == 2
    assert audit.unknown_questions == 1
    assert [str(p) for p in audit.unknown_question_lines] == [f"{path}:4: question id 'nope'"]
    assert audit.unknown_dialects == 1
    assert [str(p) for p in audit.unknown_dialect_lines] == [
        f"{path}:2: dialect 'postgress' (did you mean 'postgres'?)"]
    assert (audit.unswept_lines, audit.unswept_dialects) == (3, ("mysql", "postgres", "tsql"))
    # q1: sqlite; q2: both (no dialect); q3, q4: duckdb (invalid_prediction records); q5: none
    assert (audit.answered, audit.pairs) == (5, 10)
    warnings = audit.warnings()
    assert warnings == [
        f"{path}: 1 prediction(s) for question ids not in dataset demo are ignored: "
        f"{path}:4: question id 'nope'; check their 'question_id'",
        f"{path}: 1 prediction(s) name a dialect polysql does not know and are ignored: "
        f"{path}:2: dialect 'postgress' (did you mean 'postgres'?); use an engine name "
        "(bigquery, clickhouse, duckdb, mariadb, mysql, postgres, postgresql, snowflake, spark, sqlite) "
        "or a sqlglot dialect name",
        f"{path}: 3 line(s) for engines not swept: mysql, postgres, tsql (add them to --engines to "
        "evaluate them)",
        f"{path}: answers 5 of the 10 (question, engine) pairs of this sweep; the other 5 are recorded "
        "as missing_prediction",
    ]
    audit.require_match()  # something matches: no error


def test_audit_lists_the_first_five_lines_and_counts_the_rest(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "preds.jsonl", [
        json.dumps({"question_id": f"x{i}", "sql": "SELECT 1"}) for i in range(8)
    ] + [json.dumps({"question_id": "q1", "sql": "SELECT 1"})])
    audit = FilePredictor(path).audit(["q1"], ENGINES, dataset="demo")
    assert audit.unknown_questions == 8
    assert [p.line for p in audit.unknown_question_lines] == [1, 2, 3, 4, 5]
    assert audit.warnings()[0].endswith("question id 'x4' and 3 more; check their 'question_id'")
    assert (audit.answered, audit.pairs) == (2, 2)
    assert len(audit.warnings()) == 1


def test_a_file_that_matches_nothing_is_an_error_saying_why(tmp_path: Path) -> None:
    predictor = coverage_file(tmp_path)
    path = predictor.path
    with pytest.raises(PredictionFileError) as other_dataset:
        predictor.audit(["demo-001", "demo-002"], ENGINES, dataset="demo").require_match()
    assert str(other_dataset.value) == (
        f"{path}: none of its 9 predictions matches a question of dataset demo (first id 'q1' at "
        "line 1); are these predictions for another dataset?; 2 more line(s) could not be read "
        f"(first: {path}:8: 'sql' holds a lone surrogate U+D800 at offset 7, which is not valid "
        "Unicode (a \\ud800-\\udfff escape without its pair); write the character itself or a "
        "complete surrogate pair)")
    with pytest.raises(PredictionFileError, match=r"none of its 9 predictions is for the 1 question\(s\) "
                       r"selected from dataset demo \(first id 'q1' at line 1\); check --question"):
        predictor.audit(["q1", "q2", "q9"], ENGINES, selected=["q9"], dataset="demo").require_match()
    only_mysql = write_lines(tmp_path / "mysql.jsonl", [
        json.dumps({"question_id": "q1", "dialect": "mysql", "sql": "SELECT 1"}),
        json.dumps({"question_id": "q2", "dialect": "mysqll", "sql": "SELECT 1"}),
    ])
    with pytest.raises(PredictionFileError) as other_engines:
        FilePredictor(only_mysql).audit(["q1", "q2"], ENGINES, dataset="demo").require_match()
    assert str(other_engines.value) == (
        f"{only_mysql}: none of its predictions for the selected questions is for the swept engine(s) "
        f"sqlite, duckdb; its lines are for mysql and unknown dialects (e.g. {only_mysql}:2: dialect "
        "'mysqll' (did you mean 'mysql'?)): sweep those with --engines, or correct the lines' 'dialect'")
    all_bad = tmp_path / "bad.jsonl"
    all_bad.write_bytes(b"{broken\n[1]\n")
    with pytest.raises(PredictionFileError, match=r"none of its 2 line\(s\) holds a usable prediction "
                       rf"\(first: {re.escape(str(all_bad))}:1: not valid JSON"):
        FilePredictor(all_bad).audit(["q1"], ENGINES, dataset="demo").require_match()
    # the same files are fine for a sweep they do answer
    FilePredictor(only_mysql).audit(["q1"], [("mariadb", "mysql")], dataset="demo").require_match()


def test_execution_key_takes_any_str_and_keeps_keys_of_valid_text() -> None:
    def key(sql: str) -> str:
        return execution_key(engine="sqlite", engine_version="3", db_fingerprint="f", sql=sql,
                             timeout=30.0, max_rows=10)

    lone = key("SELECT '\ud800'")
    assert lone == key("SELECT '\ud800'")
    assert len({lone, key("SELECT '\udfff'"), key("SELECT '\ufffd'"), key("SELECT '?'")}) == 4
    joined = "\x1f".join([SCHEMA_VERSION, "sqlite", "3", "f", "30.0", "10", "SELECT 'café'"])
    assert key("SELECT 'café'") == hashlib.sha256(joined.encode("utf-8")).hexdigest()


def test_first_text_problem_says_where_in_a_record() -> None:
    record = {"sql": "SELECT 1", "meta": {"raw": ["fine", "bad \udc80"]}}
    assert first_text_problem(record) == "'meta.raw[1]' holds a lone surrogate U+DC80 at offset 4"
    assert first_text_problem({"k\ud800": 1}) == "the field name 'k\\ud800' holds a lone surrogate U+D800 " \
                                                 "at offset 1"
    assert first_text_problem({"sql": "SELECT 'é'", "n": 3, "none": None}) is None
