"""Verdicts on results cut at the row cap, end to end (CLI, real SQLite and DuckDB): the same
rows in another order are the same answer although each engine kept other rows under the cap,
and a verdict that still rests on cut rows after the re-run is counted on screen."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from polysql.cli.main import main
from polysql.core.store import ResultsStore

pytestmark = pytest.mark.usefixtures("isolated_cache")

# A demo question whose gold returns 72 rows with no ORDER BY: SQLite hands them back in
# ascending order; the prediction below asks for them descending.
QUESTION = "demo-011"
GOLD = "SELECT order_id FROM order_items GROUP BY order_id HAVING COUNT(*) > 4"
ROWS = 72


def sweep(tmp_path: Path, name: str, max_rows: int) -> tuple[int, str, list[dict[str, object]]]:
    predictions = tmp_path / "preds.jsonl"
    predictions.write_text(json.dumps({"question_id": QUESTION,
                                       "sql": f"{GOLD} ORDER BY order_id DESC"}) + "\n",
                           encoding="utf-8")
    run = tmp_path / name
    result = CliRunner().invoke(main, ["sweep", "--dataset", "demo", "--engines", "sqlite,duckdb",
                                       "--question", QUESTION, "--predictor",
                                       f"desc={predictions}", "--max-rows", str(max_rows),
                                       "--out", str(run)])
    return result.exit_code, result.output, list(ResultsStore(run).records())


def test_rows_in_another_order_past_the_cap_are_the_same_answer(tmp_path: Path) -> None:
    code, output, records = sweep(tmp_path, "ten", 10)
    assert code == 0, output
    assert {r["engine"]: r["status"] for r in records} == {"sqlite": "match", "duckdb": "match"}
    for record in records:
        details = record["details"]
        assert isinstance(details, dict)
        assert details["row_cap"] == 100 and "rests_on_cut_rows" not in details
        # the record describes the results the verdict was reached on
        assert record["pred"]["row_count"] == ROWS and not record["pred"]["truncated"]  # type: ignore[index]
        assert record["gold"]["row_count"] == ROWS  # type: ignore[index]
    assert "cut at cap" not in output


def test_a_verdict_still_resting_on_cut_rows_is_counted_on_screen(tmp_path: Path) -> None:
    code, output, records = sweep(tmp_path, "five", 5)
    assert code == 0, output
    assert len(records) == 2
    for record in records:
        details = record["details"]
        assert isinstance(details, dict)
        assert details["rests_on_cut_rows"] is True and details["row_cap"] == 50
        assert "truncated at the row cap" in str(record["reason"])
    flat = " ".join(output.split())
    assert "cut at cap" in flat
    assert ("2 verdict(s) compared results cut at the row cap of 5 rows, even after a re-run "
            "under a cap 10 times higher") in flat
    for report in ("report.md", "report.html"):
        text = " ".join((tmp_path / "five" / report).read_text(encoding="utf-8").split())
        assert "2 verdict(s) compared results cut at the row cap of 5 rows" in text
    summary = json.loads((tmp_path / "five" / "summary.json").read_text(encoding="utf-8"))
    assert summary["cut"] == 2
    assert {cell["engine"]: cell["cut"] for cell in summary["cells"]} == {"sqlite": 1,
                                                                          "duckdb": 1}
