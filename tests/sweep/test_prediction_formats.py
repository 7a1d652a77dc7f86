"""Predictions files in the formats of BIRD's and Spider's own evaluation scripts: read, checked
against the dataset's question order, and swept end to end through the CLI on real SQLite and
DuckDB engines over the bundled demo dataset."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from polysql.cli.main import EXIT_CONFIG, EXIT_DATA, main
from polysql.core.errors import ConfigError, PredictionFileError
from polysql.core.predictor import TargetEngine
from polysql.core.store import ResultsStore
from polysql.datasets.base import Question
from polysql.datasets.registry import get_dataset
from polysql.sweep.prediction_files import FilePredictor
from polysql.sweep.prediction_formats import (
    BIRD_SEPARATOR,
    FileOptions,
    detect_format,
    dialect_in_file_name,
    read_bird,
    read_spider,
    split_spec_options,
)
from polysql.sweep.predictors import make_predictor

DEMO = get_dataset("demo")
SQLITE = TargetEngine("sqlite", "sqlite")
DUCKDB = TargetEngine("duckdb", "duckdb")
ENGINES = [("sqlite", "sqlite"), ("duckdb", "duckdb")]
KNOWN = {"mysql", "postgresql", "postgres", "sqlite", "duckdb"}


pytestmark = pytest.mark.usefixtures("isolated_cache")


def bird_value(sql: str, db_id: str) -> str:
    return f"{sql}{BIRD_SEPARATOR}{db_id}"


def write_bird(path: Path, entries: dict[str, object]) -> Path:
    """A BIRD predict_*.json as its scripts write it: one indented JSON object."""
    path.write_text(json.dumps(entries, indent=4), encoding="utf-8")
    return path


def write_spider(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def questions(*db_ids: str) -> list[Question]:
    return [Question(id=f"q{i}", db_id=db, question="?", gold_sql=f"SELECT {i}")
            for i, db in enumerate(db_ids)]


# -- the spec: PATH?format=...&dialect=... ----------------------------------------------------------

def test_spec_options_are_only_a_trailing_query_of_known_keys(tmp_path: Path) -> None:
    assert split_spec_options("preds.json", spec="s") == ("preds.json", FileOptions())
    assert split_spec_options("preds.json?format=bird&dialect=mysql", spec="s") == (
        "preds.json", FileOptions(format="bird", dialect="mysql"))
    assert split_spec_options("p.txt?format=SPIDER", spec="s") == ("p.txt", FileOptions(format="spider"))
    # a '?' that does not start key=value pairs is part of the path
    assert split_spec_options("what?.txt", spec="s") == ("what?.txt", FileOptions())
    assert split_spec_options("runs?x=1/preds.json", spec="s") == ("runs?x=1/preds.json", FileOptions())
    # a file really named so is taken as it is
    odd = tmp_path / "preds.json?format=bird"
    odd.write_text("{}", encoding="utf-8")
    assert split_spec_options(str(odd), spec="s") == (str(odd), FileOptions())
    with pytest.raises(ConfigError) as unknown:
        split_spec_options("preds.json?formt=bird", spec="m=preds.json?formt=bird")
    assert str(unknown.value).startswith(
        "predictor 'm=preds.json?formt=bird': unknown option 'formt' after '?'; known options: format: ")
    assert "; dialect: " in str(unknown.value)
    with pytest.raises(ConfigError, match="option 'format' is given twice"):
        split_spec_options("p.json?format=bird&format=spider", spec="s")
    with pytest.raises(ConfigError, match="option 'dialect' is empty"):
        split_spec_options("p.json?dialect=", spec="s")
    with pytest.raises(ConfigError, match="unknown format 'csv'; use one of jsonl, bird, spider"):
        split_spec_options("p.json?format=csv", spec="s")


def test_make_predictor_reads_the_options_of_every_file_form(tmp_path: Path) -> None:
    bird = write_bird(tmp_path / "out.json", {"0": bird_value("SELECT 1", "retail")})
    spider = write_spider(tmp_path / "out.sql", ["SELECT 1"])
    named = make_predictor(f"m={bird}?format=bird&dialect=mysql")
    assert isinstance(named, FilePredictor)
    assert (named.name, named.format, named.dialect, named.path) == ("m", "bird", "mysql", bird)
    prefixed = make_predictor(f"file:{spider}?dialect=duckdb")
    assert isinstance(prefixed, FilePredictor)
    assert (prefixed.name, prefixed.format, prefixed.dialect) == ("file:out", "spider", "duckdb")
    bare = make_predictor(f"{bird}?dialect=any")
    assert isinstance(bare, FilePredictor) and (bare.format, bare.dialect) == ("bird", None)
    with pytest.raises(ConfigError, match="unknown option 'engine' after '\\?'; known options: format"):
        make_predictor(f"m={bird}?engine=mysql")
    with pytest.raises(ConfigError, match="did you mean 'postgres'"):
        make_predictor(f"m={bird}?dialect=postgress")
    jsonl = tmp_path / "p.jsonl"
    jsonl.write_text(json.dumps({"question_id": "q0", "sql": "SELECT 1"}) + "\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="is JSONL, whose lines each give their 'dialect'"):
        make_predictor(f"m={jsonl}?dialect=mysql")


# -- which format ---------------------------------------------------------------------------------

def test_the_format_is_detected_from_the_content(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    bird = json.dumps({"0": bird_value("SELECT 1", "db")}, indent=4).encode()
    assert detect_format(bird, path) == "bird"
    # keyed by indexes but every value broken: still BIRD, so each entry is reported as such
    assert detect_format(b'{"0": "SELECT 1", "1": "SELECT 2"}', path) == "bird"
    # broken JSON holding BIRD's separator: BIRD, whose reader says where the JSON breaks
    assert detect_format(bird[:-2], path) == "bird"
    jsonl = b'{"question_id": "q1", "sql": "SELECT 1"}\n{"question_id": "q2", "sql": "SELECT 2"}\n'
    assert detect_format(jsonl, path) == "jsonl"
    assert detect_format(b'{"question_id": "q1", "sql": "SELECT 1"}', path) == "jsonl"
    assert detect_format(b"not json\n" + jsonl, path) == "jsonl"  # a bad first line
    assert detect_format(b"SELECT 1\nSELECT 2\n", tmp_path / "p.jsonl") == "jsonl"
    assert detect_format(b"\xef\xbb\xbfSELECT 1\n\nSELECT 2\tdb\n", path) == "spider"
    with pytest.raises(PredictionFileError, match="is a JSON array, which is no predictions format"):
        detect_format(b'["SELECT 1"]', path)


def test_the_dialect_word_of_a_file_name() -> None:
    assert dialect_in_file_name(Path("predict_dev_mysql.json"), KNOWN) == "mysql"
    assert dialect_in_file_name(Path("predict_mini_dev_postgresql.json"), KNOWN) == "postgresql"
    assert dialect_in_file_name(Path("predict_mini_dev_gpt-4-32k_cot_SQLite.json"), KNOWN) == "sqlite"
    assert dialect_in_file_name(Path("out/predict_dev.json"), KNOWN) is None
    assert dialect_in_file_name(Path("mysqlish_preds.json"), KNOWN) is None  # whole words only
    with pytest.raises(ConfigError, match="names the dialects 'mysql' and 'postgresql'; say which"):
        dialect_in_file_name(Path("predict_mysql_to_postgresql.json"), KNOWN)


# -- reading BIRD and Spider files -----------------------------------------------------------------

def test_bird_entries_carry_their_key_and_what_is_wrong(tmp_path: Path) -> None:
    path = tmp_path / "predict_dev.json"
    data = (b'{"0": "SELECT 1\\t----- bird -----\\tdb", "1": "SELECT 2", "x": "SELECT 3\\t----- bird -----\\tdb",'
            b' "2": 7, "3": "  \\t----- bird -----\\tdb", "0": "SELECT 9\\t----- bird -----\\tdb"}')
    entries = read_bird(data, path).entries
    assert [(e.key, e.index, e.sql, e.db_id) for e in entries] == [
        ("0", 0, "SELECT 1", "db"), ("1", 1, None, None), ("x", None, None, None),
        ("2", 2, None, None), ("3", 3, None, "db"), ("0", 0, None, None)]
    assert [e.problem for e in entries] == [
        None,
        'no "\\t----- bird -----\\t" separator between the SQL and the db_id; write '
        '"SQL\\t----- bird -----\\tdb_id"',
        "key 'x' is not a question index; BIRD keys are each question's 0-based position in the "
        'dataset\'s question file ("0", "1", ...)',
        'expected a string "SQL\\t----- bird -----\\tdb_id", got a JSON number',
        'empty SQL before the "\\t----- bird -----\\t" separator',
        'duplicate entry for question index 0 (the one at entry "0" is kept)',
    ]


def test_a_bird_file_that_is_not_one_json_object_is_an_error_saying_where(tmp_path: Path) -> None:
    path = tmp_path / "predict_dev.json"
    with pytest.raises(PredictionFileError) as broken:
        read_bird(b'{\n    "0": "SELECT 1\\t----- bird -----\\tdb",\n    "1": "SELECT 2\n}', path)
    assert str(broken.value).startswith(
        f"predictions file {path} is not valid JSON (Invalid control character at line 3, column 19); "
        "write one JSON object mapping each question's index")
    with pytest.raises(PredictionFileError, match=r"not valid UTF-8 \(byte 0xe9 on line 2\)"):
        read_bird(b'{\n"0": "SELECT \'caf\xe9\'\\t----- bird -----\\tdb"}', path)
    with pytest.raises(PredictionFileError, match="expected a JSON object, got list"):
        read_bird(b"[]", path)


def test_spider_lines_answer_positions_and_may_carry_a_db_id(tmp_path: Path) -> None:
    path = tmp_path / "pred.txt"
    file = read_spider(b"SELECT 1\r\n\nSELECT 'caf\xe9'\nSELECT 4 \tdb4\n\n\n", path)
    assert [(e.line, e.index, e.sql, e.db_id) for e in file.entries] == [
        (1, 0, "SELECT 1", None), (2, 1, None, None), (3, 2, None, None), (4, 3, "SELECT 4", "db4"),
        (5, 4, None, None), (6, 5, None, None)]
    assert file.entries[1].problem == "empty line: no SQL for the question at this position"
    assert file.entries[2].problem == "not valid UTF-8 (byte 0xe9 at column 12); save the file as UTF-8"
    assert (file.lines, file.text_lines) == (6, 4)
    # 4 to 6 questions fit: the blank lines at the end are layout beyond the last question
    assert file.count_problem(4, "demo", path) is None
    assert file.count_problem(6, "demo", path) is None
    assert file.count_problem(7, "demo", path) == (
        f"predictions file {path} has 6 line(s) but dataset demo has 7 question(s); a spider file "
        "answers by position (line i is question i in the dataset's order), so it needs exactly one "
        "line per question of the whole dataset (an empty line for a question without prediction), "
        "whatever --limit selects")
    assert "has 4 line(s) but dataset demo has 3 question(s)" in str(file.count_problem(3, "demo", path))


# -- a FilePredictor over them: aligned with the dataset's question order -------------------------

def test_a_bird_file_is_aligned_with_the_question_order_and_checks_each_db_id(tmp_path: Path) -> None:
    path = write_bird(tmp_path / "predict_dev.json", {
        "0": bird_value("SELECT 'a'", "shop"),
        "1": bird_value("SELECT 'b'", "zoo"),   # question 1 is on "shop"
        "2": "SELECT 'c'",                     # no separator
        "7": bird_value("SELECT 'd'", "shop"),  # past the last question
    })
    predictor = FilePredictor(path)
    assert (predictor.format, predictor.dialect) == ("bird", None)
    with pytest.raises(PredictionFileError, match="answers questions by position: align"):
        predictor.predict(questions("shop")[0], SQLITE)
    qs = questions("shop", "shop", "shop", "shop")
    predictor.align(qs, dataset="toy")
    first = predictor.predict(qs[0], DUCKDB)
    assert (first.sql, first.meta) == ("SELECT 'a'", {"entry": "0"})
    assert predictor.predict(qs[0], SQLITE).sql == "SELECT 'a'"  # no dialect: every engine
    wrong_db = predictor.predict(qs[1], SQLITE)
    assert wrong_db.sql is None and wrong_db.meta == {"entry": "1"}
    assert wrong_db.failure == (
        f"invalid_prediction: {path}: entry \"1\": db_id 'zoo', but question 1 of toy (id 'q1') is on "
        "database 'shop'; entries must follow the dataset's question order")
    assert str(predictor.predict(qs[2], SQLITE).failure).startswith(
        f"invalid_prediction: {path}: entry \"2\": no \"\\t----- bird -----\\t\" separator")
    assert predictor.predict(qs[3], SQLITE).failure == "missing_prediction"
    assert [str(p).split(": ", 2)[1] for p in predictor.problems] == ['entry "1"', 'entry "2"']
    audit = predictor.audit([q.id for q in qs], ENGINES, dataset="toy")
    assert audit.unknown_questions == 1
    assert [str(p) for p in audit.unknown_question_lines] == [f'{path}: entry "7": question index 7']
    assert audit.warnings()[0] == (
        f"{path}: 1 prediction(s) for question positions not in dataset toy are ignored: "
        f"{path}: entry \"7\": question index 7; key \"i\" answers question i of the dataset's question "
        "file, from 0; are these predictions for another split of the dataset?")
    assert predictor.describe() == {"name": "file:predict_dev", "path": str(path), "predictions": 1,
                                    "skipped_lines": 2, "format": "bird", "dialect": "any"}


def test_a_bird_file_for_positions_the_dataset_does_not_have_is_an_error(tmp_path: Path) -> None:
    path = write_bird(tmp_path / "predict_dev.json", {"5": bird_value("SELECT 1", "shop"),
                                                     "6": bird_value("SELECT 1", "shop")})
    predictor = FilePredictor(path)
    qs = questions("shop", "shop")
    predictor.align(qs, dataset="toy")
    with pytest.raises(PredictionFileError) as nothing:
        predictor.audit([q.id for q in qs], ENGINES, dataset="toy").require_match()
    assert str(nothing.value) == (
        f"{path}: none of its 2 predictions matches a question of dataset toy (first index 5 at "
        "entry \"5\"); are these predictions for another dataset?")


def test_a_dialect_in_the_file_name_or_the_spec_picks_the_engines(tmp_path: Path) -> None:
    path = write_bird(tmp_path / "predict_dev_duckdb.json", {"0": bird_value("SELECT 1", "shop")})
    qs = questions("shop")
    by_name = FilePredictor(path)
    by_name.align(qs)
    assert by_name.dialect == "duckdb"
    assert by_name.predict(qs[0], DUCKDB).sql == "SELECT 1"
    assert by_name.predict(qs[0], SQLITE).failure == "missing_prediction"
    with pytest.raises(PredictionFileError) as unswept:
        by_name.audit(["q0"], [("sqlite", "sqlite")], dataset="toy").require_match()
    assert str(unswept.value) == (
        f"{path}: none of its predictions for the selected questions is for the swept engine(s) sqlite; "
        "its entries are for duckdb: sweep those with --engines, or name the file's dialect with "
        "?dialect=NAME on the --predictor spec")
    everywhere = FilePredictor(path, dialect="any")
    everywhere.align(qs)
    assert everywhere.predict(qs[0], SQLITE).sql == "SELECT 1"
    other = FilePredictor(path, dialect="SQLite")
    other.align(qs)
    assert other.predict(qs[0], SQLITE).sql == "SELECT 1"
    assert other.predict(qs[0], DUCKDB).failure == "missing_prediction"


def test_a_spider_file_must_cover_the_whole_dataset_and_an_empty_line_costs_its_question(
        tmp_path: Path) -> None:
    path = write_spider(tmp_path / "pred.txt", ["SELECT 1", "", "SELECT 3\tzoo"])
    qs = questions("shop", "shop", "shop")
    predictor = FilePredictor(path)
    assert (predictor.format, predictor.dialect) == ("spider", None)
    predictor.align(qs, dataset="toy")
    first = predictor.predict(qs[0], DUCKDB)
    assert (first.sql, first.meta) == ("SELECT 1", {"line": 1})
    assert predictor.predict(qs[1], SQLITE).failure == (
        f"invalid_prediction: {path}:2: empty line: no SQL for the question at this position")
    assert predictor.predict(qs[2], SQLITE).failure == (
        f"invalid_prediction: {path}:3: db_id 'zoo', but question 2 of toy (id 'q2') is on database "
        "'shop'; entries must follow the dataset's question order")
    assert [p.line for p in predictor.problems] == [2, 3]
    with pytest.raises(PredictionFileError, match=r"has 3 line\(s\) but dataset toy has 4 question\(s\)"):
        predictor.align(questions("shop", "shop", "shop", "shop"), dataset="toy")


# -- end to end: polysql sweep on the demo dataset ---------------------------------------------------

def sweep(predictor: str, run: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["sweep", "--dataset", "demo", "--engines", "sqlite,duckdb",
                                       "--predictor", predictor, "--out", str(run), *args])
    return result.exit_code, result.output


def by_pair(run: Path) -> dict[tuple[str, str], dict[str, object]]:
    return {(str(r["question_id"]), str(r["engine"])): r for r in ResultsStore(run).records()}


def test_sweep_a_bird_predict_file(tmp_path: Path) -> None:
    q = DEMO.questions
    path = write_bird(tmp_path / "predict_dev.json", {
        "0": bird_value(q[0].gold_sql, q[0].db_id),
        "1": bird_value(q[1].gold_sql, q[1].db_id),
        "2": bird_value("SELECT 42", q[2].db_id),
        "3": bird_value(q[3].gold_sql, "bird_other_db"),
        "4": q[4].gold_sql,
        str(len(q)): bird_value("SELECT 1", q[0].db_id),
    })
    run = tmp_path / "run"
    code, output = sweep(f"m={path}", run, "--limit", "5")
    assert code == 0, output
    records = by_pair(run)
    assert len(records) == 10
    for engine in ("sqlite", "duckdb"):
        assert records[(q[0].id, engine)]["status"] == "match"
        assert records[(q[0].id, engine)]["prediction_meta"] == {"entry": "0"}
        assert records[(q[1].id, engine)]["status"] == "match"
        assert records[(q[2].id, engine)]["status"] == "mismatch"
        assert records[(q[2].id, engine)]["sql"] == "SELECT 42"
        assert records[(q[3].id, engine)]["status"] == "generation_failure"
        assert records[(q[3].id, engine)]["prediction_failure"] == (
            f"invalid_prediction: {path}: entry \"3\": db_id 'bird_other_db', but question 3 of demo "
            f"(id {q[3].id!r}) is on database {q[3].db_id!r}; entries must follow the dataset's question order")
        assert str(records[(q[4].id, engine)]["prediction_failure"]).startswith(
            f"invalid_prediction: {path}: entry \"4\": no \"\\t----- bird -----\\t\" separator")
    assert f"{path}: entry \"3\": db_id 'bird_other_db'" in output
    assert (f"{path}: 1 prediction(s) for question positions not in dataset demo are ignored: "
            f"{path}: entry \"{len(q)}\": question index {len(q)}") in output
    info = json.loads((run / "run.json").read_text(encoding="utf-8"))
    assert info["predictors"][0]["format"] == "bird" and info["predictors"][0]["dialect"] == "any"


def test_sweep_a_bird_file_whose_name_says_its_dialect(tmp_path: Path) -> None:
    q = DEMO.questions
    entries: dict[str, object] = {str(i): bird_value(q[i].gold_sql, q[i].db_id) for i in range(3)}
    path = write_bird(tmp_path / "predict_mini_dev_duckdb.json", entries)
    run = tmp_path / "run"
    code, output = sweep(f"m={path}", run, "--limit", "3")
    assert code == 0, output
    records = by_pair(run)
    assert [records[(q[i].id, "duckdb")]["status"] for i in range(3)] == ["match"] * 3
    assert [records[(q[i].id, "sqlite")]["prediction_failure"] for i in range(3)] == ["missing_prediction"] * 3
    assert f"{path}: answers 3 of the 6 (question, engine) pairs of this sweep" in output
    # the spec's dialect wins over the name's
    code, output = sweep(f"m={path}?dialect=sqlite", tmp_path / "run2", "--limit", "3")
    assert code == 0, output
    records = by_pair(tmp_path / "run2")
    assert [records[(q[i].id, "sqlite")]["status"] for i in range(3)] == ["match"] * 3
    assert records[(q[0].id, "duckdb")]["prediction_failure"] == "missing_prediction"


def test_sweep_a_broken_bird_file_is_an_error_saying_where(tmp_path: Path) -> None:
    path = tmp_path / "predict_dev.json"
    path.write_text('{\n    "0": "SELECT 1\\t----- bird -----\\tretail",\n    "1": "SELECT 2\\t----- bird', encoding="utf-8")
    run = tmp_path / "run"
    code, output = sweep(f"m={path}", run, "--limit", "2")
    assert code == EXIT_DATA, output
    assert f"predictions file {path} is not valid JSON (" in output and "at line 3, column" in output
    assert not (run / "results.jsonl").exists()


def test_sweep_a_spider_file_aligned_with_the_whole_dataset(tmp_path: Path) -> None:
    q = DEMO.questions
    lines = [question.gold_sql for question in q]
    lines[1] = ""
    lines[2] = "SELECT 42"
    path = write_spider(tmp_path / "pred.txt", lines)
    run = tmp_path / "run"
    code, output = sweep(f"m={path}", run, "--limit", "3")
    assert code == 0, output
    records = by_pair(run)
    assert len(records) == 6
    for engine in ("sqlite", "duckdb"):
        assert records[(q[0].id, engine)]["status"] == "match"
        assert records[(q[0].id, engine)]["prediction_meta"] == {"line": 1}
        assert records[(q[1].id, engine)]["status"] == "generation_failure"
        assert records[(q[1].id, engine)]["prediction_failure"] == (
            f"invalid_prediction: {path}:2: empty line: no SQL for the question at this position")
        assert records[(q[2].id, engine)]["status"] == "mismatch"
    assert f"{path}:2: empty line: no SQL for the question at this position" in output
    # --question picks by id; the line that answers it is still its position in the whole dataset
    last = tmp_path / "last"
    code, output = sweep(f"m={path}", last, "--question", q[-1].id)
    assert code == 0, output
    assert by_pair(last)[(q[-1].id, "sqlite")]["prediction_meta"] == {"line": len(q)}
    assert by_pair(last)[(q[-1].id, "sqlite")]["status"] == "match"


def test_sweep_a_spider_file_with_the_wrong_line_count_is_an_error_giving_both(tmp_path: Path) -> None:
    path = write_spider(tmp_path / "pred.txt", [question.gold_sql for question in DEMO.questions[:5]])
    run = tmp_path / "run"
    code, output = sweep(f"m={path}", run, "--limit", "5")
    assert code == EXIT_DATA, output
    assert (f"predictions file {path} has 5 line(s) but dataset demo has {len(DEMO.questions)} "
            "question(s)") in output
    assert not (run / "results.jsonl").exists()


def test_sweep_with_the_format_and_dialect_given_on_the_spec(tmp_path: Path) -> None:
    # SQL lines in a .json file, read as Spider because the spec says so, for one engine
    path = write_spider(tmp_path / "model_output.json", [question.gold_sql for question in DEMO.questions])
    run = tmp_path / "run"
    code, output = sweep(f"m={path}?format=spider&dialect=sqlite", run, "--limit", "2")
    assert code == 0, output
    records = by_pair(run)
    assert [records[(q.id, "sqlite")]["status"] for q in DEMO.questions[:2]] == ["match", "match"]
    assert records[(DEMO.questions[0].id, "duckdb")]["prediction_failure"] == "missing_prediction"
    code, output = sweep(f"m={path}?formats=spider", tmp_path / "bad", "--limit", "2")
    assert code == EXIT_CONFIG
    assert "unknown option 'formats' after '?'; known options: format: " in output
