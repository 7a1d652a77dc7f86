"""``polysql audit transpile``: predictions of a real sweep re-judged the way transpile-based
evaluators judge them, beside the dual-execution verdicts of the run."""

from __future__ import annotations

import csv
import hashlib
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from polysql_testkit.bird_layout import make_bird

from polysql.audit.tally import ALL, by_engine, by_tag
from polysql.audit.transpile import (
    ACCEPTS_REJECTED,
    REJECTS_ACCEPTED,
    SourceDatabases,
    TranspileJudgement,
    audit_transpile,
    transpile_back,
)
from polysql.cli.main import EXIT_CONFIG, EXIT_STORE
from polysql.core.errors import EngineUnavailableError
from polysql.core.store import ResultsStore
from polysql.datasets.registry import get_dataset

ENGINES = ("duckdb", "postgres", "mysql")


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def sweep(polysql: Callable[..., Result], *args: str) -> None:
    result = polysql("sweep", *args)
    assert result.exit_code == 0, result.output


def by_pair(judgements: list[TranspileJudgement]) -> dict[tuple[str, str], TranspileJudgement]:
    return {(j.question_id, j.engine): j for j in judgements}


def table_rows(text: str, title: str) -> dict[str, list[str]]:
    """The rows of one of the tables printed on stdout: first cell -> the other cells."""
    section = text.split(title, 1)[1].split("└", 1)[0]  # up to the table's bottom border
    rows: dict[str, list[str]] = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.split("│")[1:-1]]
        if len(cells) == 8:
            rows[cells[0]] = cells[1:]
    return rows


def test_native_golds_judged_both_ways(shop, engines: str, polysql: Callable[..., Result],
                                      tmp_path: Path) -> None:
    run = tmp_path / "run"
    sweep(polysql, "--dataset", shop.spec, "--predictor", "native-gold", "--engines", engines,
          "--out", str(run))
    before = digest(shop.database)
    records_before = (run / "results.jsonl").read_bytes()

    audit = audit_transpile(run)
    pairs = by_pair(audit.judgements)

    # MySQL counts 'Paris' too (case-insensitive collation); translated back, SQLite does not
    case = pairs[("case", "mysql")]
    assert (case.dual_status, case.verdict, case.direction) == ("mismatch", "match", ACCEPTS_REJECTED)
    assert case.why.startswith("mismatch on mysql:")
    # PostgreSQL's SUM of integers is numeric (3.5); sqlglot reads `/` as integer division there
    assert pairs[("intdiv", "postgres")].direction == ACCEPTS_REJECTED
    # MySQL's and DuckDB's `/` is translated to a real division: 3.5 both ways, both reject
    for engine in ("mysql", "duckdb"):
        judgement = pairs[("intdiv", engine)]
        assert (judgement.dual_status, judgement.verdict, judgement.differs) == (
            "mismatch", "result_differs", False)
        assert "3.5" in judgement.reason
    # MySQL's DATE_ADD becomes SQLite's date(..., '1 MONTH'), which overflows into March
    assert (pairs[("month", "mysql")].verdict, pairs[("month", "mysql")].dual_status) == (
        "match", "mismatch")
    # sqlglot cannot parse PostgreSQL's ORDER BY ... USING >, which PostgreSQL runs correctly
    top = pairs[("top", "postgres")]
    assert (top.dual_status, top.verdict, top.direction) == ("match", "transpile_failure",
                                                             REJECTS_ACCEPTED)
    assert top.transpiled is None and "sqlglot cannot translate it" in top.reason
    # correct native date functions whose translations SQLite cannot run
    for engine in ENGINES:
        year = pairs[("year", engine)]
        assert (year.dual_status, year.verdict, year.direction) == ("match", "exec_error",
                                                                    REJECTS_ACCEPTED)
        assert "fails on the source database" in year.reason
    for question in ("count", "concat"):
        for engine in ENGINES:
            assert pairs[(question, engine)].verdict == "match"
            assert not pairs[(question, engine)].differs

    # what was not judged is counted: SQLite's own records, and the pairs without native gold
    assert audit.skipped == {"engine speaks the gold's dialect (nothing to translate)": 10,
                             "no SQL was produced": 7}
    assert len(audit.judgements) == 23 and audit.reference_dialect == "sqlite"
    total = by_engine(audit.judgements)[-1]
    assert total.group == ALL and total.audited == 23
    assert total.accepts_rejected == 3 and total.rejects_accepted == 4
    tags = {count.group: count for count in by_tag(audit.judgements)}
    assert tags["date-functions"].differ == tags["date-functions"].audited == 3
    assert tags["portable"].differ == 0

    # the dataset's database and the run's records are untouched
    assert digest(shop.database) == before
    assert (run / "results.jsonl").read_bytes() == records_before


def test_hostile_predictions_are_refused_on_the_source_database(
        shop, engines: str, polysql: Callable[..., Result], tmp_path: Path) -> None:
    predictions = tmp_path / "hostile.jsonl"
    lines = [{"question_id": "count", "dialect": "postgres", "sql": "DELETE FROM people"},
             {"question_id": "count", "dialect": "duckdb",
              "sql": "UPDATE people SET name = 'x' WHERE id = 1"},
             {"question_id": "bare", "dialect": "mysql",
              "sql": "CREATE TABLE stolen AS SELECT * FROM people"}]
    predictions.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    run = tmp_path / "run"
    sweep(polysql, "--dataset", shop.spec, "--predictor", f"hostile={predictions}",
          "--engines", engines, "--out", str(run), "--question", "count", "--question", "bare")
    before = digest(shop.database)

    audit = audit_transpile(run)
    pairs = by_pair(audit.judgements)
    for key in (("count", "postgres"), ("count", "duckdb"), ("bare", "mysql")):
        assert pairs[key].verdict == "exec_error", pairs[key]
        assert pairs[key].dual_status == "exec_error"  # the engines' copies are read-only too
    assert digest(shop.database) == before
    con = sqlite3.connect(f"file:{shop.database}?mode=ro", uri=True)
    try:
        assert con.execute("SELECT COUNT(*), MIN(name) FROM people").fetchone() == (5, "Alice")
        assert con.execute("SELECT COUNT(*) FROM sqlite_master WHERE name = 'stolen'").fetchone() == (0,)
    finally:
        con.close()


def test_the_command_on_a_demo_sweep(polysql: Callable[..., Result], engines: str,
                                     tmp_path: Path) -> None:
    run, out = tmp_path / "run", tmp_path / "audit"
    sweep(polysql, "--predictor", "transpile,gold", "--engines", engines, "--limit", "30",
          "--out", str(run))
    result = polysql("audit", "transpile", str(run), "--out", str(out))
    assert result.exit_code == 0, result.output

    records = ResultsStore(run).latest_records()
    judged = [r for r in records if r["dialect"] != r["gold_dialect"] and r["sql"] is not None
              and r["status"] != "invalid_gold"]
    rows = read_csv(out / "transpile_audit.csv")
    assert len(rows) == len(judged) > 0
    dual = {(r["question_id"], r["predictor"], r["engine"]): r["status"] for r in records}
    for row in rows:
        assert row["dual_status"] == dual[(row["question_id"], row["predictor"], row["engine"])]
        differs = (row["dual_status"] == "match") != (row["transpile_verdict"] == "match")
        assert row["differs"] == ("yes" if differs else "no"), row
        assert bool(row["direction"]) == differs

    # the printed table, the CSV and the report hold the same numbers
    printed = table_rows(result.stdout, "per engine")
    report = (out / "transpile_audit.md").read_text(encoding="utf-8")
    for engine in ENGINES:
        mine = [row for row in rows if row["engine"] == engine]
        differ = sum(row["differs"] == "yes" for row in mine)
        correct = sum(row["dual_status"] == "match" for row in mine)
        accepted = sum(row["transpile_verdict"] == "match" for row in mine)
        assert printed[engine][:4] == [str(len(mine)), str(correct), str(accepted), str(differ)]
        assert f"| {engine} | {len(mine)} | {correct} | {accepted} | {differ} |" in report
    differing = sum(row["differs"] == "yes" for row in rows)
    assert printed[ALL][3] == str(differing)
    assert f"The verdicts differ on {differing} " in report
    assert "## Per tag" in report and "per tag" in result.stdout
    assert "not judged: 60 record(s): engine speaks the gold's dialect" in result.stdout


def test_a_folder_without_results_is_refused(polysql: Callable[..., Result], tmp_path: Path) -> None:
    result = polysql("audit", "transpile", str(tmp_path))
    assert result.exit_code == EXIT_STORE, result.output
    assert "holds no results.jsonl" in result.output


def test_a_run_on_the_reference_engine_only_has_nothing_to_translate(
        polysql: Callable[..., Result], tmp_path: Path) -> None:
    run = tmp_path / "run"
    sweep(polysql, "--predictor", "gold", "--engines", "sqlite", "--limit", "3", "--out", str(run))
    result = polysql("audit", "transpile", str(run))
    assert result.exit_code == EXIT_CONFIG, result.output
    assert "nothing to translate" in result.output


def test_transpile_back_says_why_it_cannot() -> None:
    sql, why = transpile_back("SELECT 1; SELECT 2", read="postgres", write="sqlite")
    assert sql is None and why == "sqlglot produced 2 statements"
    sql, why = transpile_back("SELECT x FROM t ORDER BY x USING >", read="postgres", write="sqlite")
    assert sql is None and why
    sql, why = transpile_back("SELECT 7 / 2", read="mysql", write="sqlite")
    assert why is None and sql is not None and "REAL" in sql


def test_a_run_swept_with_a_relative_dataset_path_is_audited_from_anywhere(
        polysql: Callable[..., Result], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """run.json keeps the dataset spec as the sweep was given it and the folder it ran in: the
    audit finds a relative dataset path from there, wherever it is started."""
    swept_in = tmp_path / "swept_in"
    make_bird(swept_in / "bird")
    monkeypatch.chdir(swept_in)
    sweep(polysql, "--dataset", "bird:bird", "--predictor", "transpile,gold", "--engines",
          "sqlite,duckdb", "--out", "run")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    audit = audit_transpile(swept_in / "run")
    assert len(audit.judgements) == 8 and not audit.warnings  # 4 questions x 2 predictors, duckdb
    result = polysql("audit", "transpile", "../swept_in/run", "--out", "audit")
    assert result.exit_code == 0, result.output
    assert (elsewhere / "audit" / "transpile_audit.csv").exists()


def test_results_cut_at_the_row_cap_are_judged_as_the_sweep_judged_them(
        polysql: Callable[..., Result], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The demo gold returns 72 rows with no ORDER BY; the DuckDB prediction asks for them
    descending. Under a 10-row cap each side keeps other rows: the sweep ran both again under a
    higher cap and matched, and the translation judged on SQLite must be too."""
    monkeypatch.setenv("POLYSQL_CACHE", str(tmp_path / "cache"))
    gold = "SELECT order_id FROM order_items GROUP BY order_id HAVING COUNT(*) > 4"
    predictions = tmp_path / "preds.jsonl"
    predictions.write_text(json.dumps({"question_id": "demo-011",
                                       "sql": f"{gold} ORDER BY order_id DESC"}) + "\n",
                           encoding="utf-8")
    run, out = tmp_path / "run", tmp_path / "audit"
    sweep(polysql, "--dataset", "demo", "--engines", "sqlite,duckdb", "--question", "demo-011",
          "--predictor", f"desc={predictions}", "--max-rows", "10", "--out", str(run))
    result = polysql("audit", "transpile", str(run), "--out", str(out))
    assert result.exit_code == 0, result.output
    (row,) = read_csv(out / "transpile_audit.csv")
    assert (row["engine"], row["dual_status"], row["transpile_verdict"]) == ("duckdb", "match",
                                                                             "match"), row


def test_a_source_database_that_cannot_run_anything_is_an_outage(tmp_path: Path) -> None:
    """A real outage: the source database's backend, closed, answers "unavailable". That is no
    translation's exec_error: the audit stops with EngineUnavailableError naming the database."""
    sources = SourceDatabases(get_dataset(f"bird:{make_bird(tmp_path / 'bird')}"),
                              timeout=5.0, max_rows=100)
    assert sources.run("shop", "SELECT count(*) FROM item").rows == [(2,)]
    sources.backend("shop").close()
    with pytest.raises(EngineUnavailableError, match="on shop's source database could not run"):
        sources.run("shop", "SELECT name FROM item")
    sources.close()
