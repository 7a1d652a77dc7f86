"""``polysql audit golds`` end to end on real SQLite, DuckDB, PostgreSQL and MySQL/MariaDB: the
shop fixture's native golds (tests/audit/conftest.py) against its SQLite reference gold."""

from __future__ import annotations

import csv
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from click.testing import Result

from polysql.audit.golds import audit_gold_records
from polysql.audit.report import write_gold_audit
from polysql.cli.main import EXIT_CONFIG, EXIT_DATA
from polysql.core.store import ResultsStore

AUDITED = ("duckdb", "postgres", "mysql")
COUNT_COLUMNS = ("audited", "agree", "disagree", "error", "reference error", "no native gold")


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def outcomes(rows: list[dict[str, str]]) -> dict[tuple[str, str], dict[str, str]]:
    return {(row["question_id"], row["engine"]): row for row in rows}


def stdout_table(text: str) -> dict[str, list[int]]:
    """The per-engine rows of the table printed on stdout: engine -> its six counts."""
    table: dict[str, list[int]] = {}
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.split("│")[1:-1]]
        if len(cells) == 8 and cells[0] in AUDITED:
            table[cells[0]] = [int(cell) for cell in cells[2:]]
    return table


def report_table(text: str) -> dict[str, list[int]]:
    """The same rows as the Markdown report holds them."""
    section = text.split("## Per engine", 1)[1].split("##", 1)[0]
    table: dict[str, list[int]] = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 8 and cells[0] in AUDITED:
            table[cells[0]] = [int(cell) for cell in cells[2:]]
    return table


def csv_counts(rows: list[dict[str, str]], records: list[dict[str, object]]) -> dict[str, list[int]]:
    """The per-engine counts computed afresh: outcomes from the CSV, questions without a native
    gold from the sweep's own records."""
    by_outcome = Counter((row["engine"], row["outcome"]) for row in rows)
    missing = Counter(r["engine"] for r in records if r["prediction_failure"] == "missing_prediction")
    return {engine: [sum(n for (e, _o), n in by_outcome.items() if e == engine),
                     by_outcome[(engine, "agree")], by_outcome[(engine, "disagree")],
                     by_outcome[(engine, "error")], by_outcome[(engine, "reference_error")],
                     missing[engine]] for engine in AUDITED}


def test_the_real_disagreements_are_found_with_their_reasons(
        shop, engines: str, polysql: Callable[..., Result], tmp_path: Path) -> None:
    out = tmp_path / "audit"
    result = polysql("audit", "golds", shop.spec, "--engines", engines, "--out", str(out))
    assert result.exit_code == 0, result.output
    assert "sqlite speaks the reference gold's dialect" in result.stderr
    rows = read_csv(out / "gold_audit.csv")
    pairs = outcomes(rows)

    # integer division: 3 on SQLite, 3.5 on every other engine
    for engine in AUDITED:
        row = pairs[("intdiv", engine)]
        assert row["outcome"] == "disagree", row
        assert "(3)" in row["reason"] and "3.5" in row["reason"], row["reason"]
    # MySQL's default collation ignores case: 'Paris' counts too
    assert pairs[("case", "mysql")]["outcome"] == "disagree"
    assert "e.g. (1)" in pairs[("case", "mysql")]["reason"]
    assert "e.g. (2)" in pairs[("case", "mysql")]["reason"]
    assert pairs[("case", "postgres")]["outcome"] == pairs[("case", "duckdb")]["outcome"] == "agree"
    # one month after 31 January
    for engine in AUDITED:
        row = pairs[("month", engine)]
        assert row["outcome"] == "disagree", row
        assert "1990-03-03" in row["reason"] and "1990-02-28" in row["reason"], row["reason"]
    # NULL placement is each engine's convention, which the default contract accepts
    for engine in AUDITED:
        assert pairs[("nulls", engine)]["outcome"] == "agree", pairs[("nulls", engine)]
    assert "NULLs ordered by" in pairs[("nulls", "postgres")]["reason"]
    # a native gold that fails on its engine is an error, with the engine's message
    assert pairs[("broken", "postgres")]["outcome"] == "error"
    assert "citty" in pairs[("broken", "postgres")]["reason"]
    for question in ("count", "concat", "year"):
        for engine in AUDITED:
            assert pairs[(question, engine)]["outcome"] == "agree", pairs[(question, engine)]
    assert pairs[("top", "postgres")]["outcome"] == "agree"
    # pairs without a native gold are not audited pairs; no SQLite pair is audited
    assert ("bare", "postgres") not in pairs and ("top", "mysql") not in pairs
    assert {row["engine"] for row in rows} == set(AUDITED)
    assert len(rows) == 23

    # the table, the CSV and the report hold the same numbers
    records = [r for r in ResultsStore(out / "run").latest_records() if r["engine"] in AUDITED]
    expected = csv_counts(rows, records)
    assert stdout_table(result.stdout) == expected
    report = (out / "gold_audit.md").read_text(encoding="utf-8")
    assert report_table(report) == expected
    assert expected["postgres"][5] == 1 and expected["mysql"][5] == expected["duckdb"][5] == 3

    # the question without any native gold is counted and named, not dropped
    assert "1 of 10 question(s) have no native gold for any audited engine: bare" in result.stdout
    assert "without: 1" in report and "1 question(s): bare." in report

    # disagreements are listed with their reasons; agreeing pairs are not
    listed = report.split("## Disagreements", 1)[1]
    listed_pairs = set(re.findall(r"^\| (\w+) \| (\w+) \|", listed, flags=re.MULTILINE))
    listed_pairs.discard(("question", "engine"))  # the header
    assert listed_pairs == {(row["question_id"], row["engine"]) for row in rows
                            if row["outcome"] != "agree"}
    assert ("count", "mysql") not in listed_pairs and ("nulls", "postgres") not in listed_pairs
    assert "MONTH" in listed  # the native SQL is shown
    printed = result.stdout.split("disagreements (", 1)[1]
    assert re.search(r"│ case\s+│ mysql\s+│ disagree", printed)
    assert not re.search(r"│ count\s+│", printed)


def test_a_rerun_resumes_and_reports_the_same(shop, engines: str, polysql: Callable[..., Result],
                                             tmp_path: Path) -> None:
    out = tmp_path / "audit"
    first = polysql("audit", "golds", shop.spec, "--engines", engines, "--out", str(out),
                    "--question", "intdiv", "--question", "count")
    assert first.exit_code == 0, first.output
    before = (out / "gold_audit.csv").read_text(encoding="utf-8")
    again = polysql("audit", "golds", shop.spec, "--engines", engines, "--out", str(out),
                    "--question", "intdiv", "--question", "count")
    assert again.exit_code == 0, again.output
    assert (out / "gold_audit.csv").read_text(encoding="utf-8") == before
    assert len(read_csv(out / "gold_audit.csv")) == 6
    assert len(ResultsStore(out / "run").latest_records()) == 6  # nothing ran twice


def test_null_ordering_disagrees_under_the_strict_policy(
        shop, engines: str, polysql: Callable[..., Result], tmp_path: Path) -> None:
    out = tmp_path / "strict"
    result = polysql("audit", "golds", shop.spec, "--engines", engines, "--out", str(out),
                     "--question", "nulls", "--policy", "null_order=strict")
    assert result.exit_code == 0, result.output
    pairs = outcomes(read_csv(out / "gold_audit.csv"))
    # PostgreSQL and DuckDB sort NULLs last: Carol (no score) drops out of the first two
    for engine in ("postgres", "duckdb"):
        assert pairs[("nulls", engine)]["outcome"] == "disagree", pairs[("nulls", engine)]
        assert "Carol" in pairs[("nulls", engine)]["reason"]
    # MySQL puts NULLs first, as SQLite does
    assert pairs[("nulls", "mysql")]["outcome"] == "agree"
    assert "null_order=strict" in (out / "gold_audit.md").read_text(encoding="utf-8")


def test_a_dataset_without_native_golds_is_a_clear_error(
        shop_without_natives, polysql: Callable[..., Result], tmp_path: Path) -> None:
    result = polysql("audit", "golds", shop_without_natives.spec, "--engines", "sqlite,duckdb",
                     "--out", str(tmp_path / "none"))
    assert result.exit_code == EXIT_DATA, result.output
    assert "carries no gold SQL written for another dialect" in result.output
    assert not (tmp_path / "none").exists()  # refused before any sweep


def test_auditing_only_the_reference_engine_is_a_config_error(
        shop, polysql: Callable[..., Result], tmp_path: Path) -> None:
    result = polysql("audit", "golds", shop.spec, "--engines", "sqlite", "--out",
                     str(tmp_path / "ref"))
    assert result.exit_code == EXIT_CONFIG, result.output
    assert "speaks the reference dialect" in result.output or "speak the reference" in result.output


def test_an_unfinished_audit_never_says_everything_agrees(tmp_path: Path) -> None:
    """Nothing recorded yet and work pending (a Ctrl-C): the report says how little it covers."""
    audit = audit_gold_records([], dataset="shop", engines=["duckdb"], question_ids=["q1", "q2"],
                               pending=2)
    assert not audit.complete
    write_gold_audit(audit, tmp_path, policy={})
    report = (tmp_path / "gold_audit.md").read_text()
    assert "**INCOMPLETE**: 2 (question, engine) pair(s)" in report
    assert "Every native gold agrees" not in report
    assert "2 pending, so this is not the audit's answer yet" in report
