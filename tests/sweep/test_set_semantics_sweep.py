"""``polysql sweep --policy set_semantics=true`` end to end (CLI, real SQLite and DuckDB): rows
are judged as sets, the screen and the reports say the policy is not the default, and a run
folder made under one policy is not resumed under another; ``polysql report`` over runs of
different policies says their numbers are different measures."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from polysql.cli.main import main
from polysql.core.store import ResultsStore
from polysql.datasets.registry import get_dataset
from polysql.normalizers.policy import preset_options

pytestmark = pytest.mark.usefixtures("isolated_cache")

NOTE = "Comparison policy changed from the contract's defaults: set_semantics=true"


def plain_question() -> tuple[str, str]:
    """A demo question whose gold is one plain SELECT (no ORDER BY, LIMIT or set operation), so
    that repeating it with UNION ALL gives every row twice."""
    for question in get_dataset("demo").questions:
        upper = question.gold_sql.upper()
        if not any(word in upper for word in ("ORDER BY", "LIMIT", "UNION", "WITH", ";", "EXCEPT",
                                              "INTERSECT")):
            return question.id, question.gold_sql
    raise AssertionError("the demo dataset has no plain SELECT gold")


def every_row_twice(folder: Path) -> Path:
    """A predictions file answering :func:`plain_question` with each of the gold's rows twice."""
    question_id, gold_sql = plain_question()
    predictions = folder / "twice.jsonl"
    predictions.write_text(json.dumps({"question_id": question_id,
                                       "sql": f"{gold_sql} UNION ALL {gold_sql}"}) + "\n",
                           encoding="utf-8")
    return predictions


def sweep(run: Path, predictions: Path, *policy: str) -> tuple[int, str]:
    args = ["sweep", "--dataset", "demo", "--engines", "sqlite,duckdb", "--question",
            plain_question()[0], "--predictor", f"twice={predictions}", "--out", str(run)]
    for item in policy:
        args += ["--policy", item]
    result = CliRunner().invoke(main, args)
    return result.exit_code, result.output


def test_every_row_twice_matches_only_as_sets(tmp_path: Path) -> None:
    predictions = every_row_twice(tmp_path)
    run = tmp_path / "run"

    code, output = sweep(run, predictions, "set_semantics=true")
    assert code == 0, output
    records = list(ResultsStore(run).records())
    assert {r["engine"]: r["status"] for r in records} == {"sqlite": "match", "duckdb": "match"}
    assert all("as sets" in str(r["reason"]) for r in records)
    assert NOTE in " ".join(output.split())  # the table's caption may wrap
    assert NOTE in (run / "report.md").read_text(encoding="utf-8")
    assert html.escape(NOTE) in (run / "report.html").read_text(encoding="utf-8")

    # The same run folder under the default policy is refused: its verdicts were made as sets.
    code, output = sweep(run, predictions)
    assert code != 0
    assert ("holds a sweep with different policy (policy: set_semantics=true there, the "
            "default policy now)") in " ".join(output.split())
    # The same policy spelled with a default option added is the same policy: it resumes.
    code, output = sweep(run, predictions, "set_semantics=true", "bool_as_int=true")
    assert code == 0, output
    assert "0 new records, 2 resumed" in output

    # A new one judges as bags: every row twice is a different answer.
    code, output = sweep(tmp_path / "bags", predictions)
    assert code == 0, output
    records = list(ResultsStore(tmp_path / "bags").records())
    assert {r["engine"]: r["status"] for r in records} == {"sqlite": "mismatch",
                                                            "duckdb": "mismatch"}
    assert "Comparison policy changed" not in output

    # A report over both runs says their numbers are different measures; over the set run
    # alone, that its policy is not the default.
    report = CliRunner().invoke(main, ["report", str(run), str(tmp_path / "bags"), "--out",
                                       str(tmp_path / "both"), "--resamples", "200"])
    text = " ".join(report.output.split())
    assert report.exit_code == 0, report.output
    assert (f"These runs judged answers under different comparison policies ({run}: "
            f"set_semantics=true; {tmp_path / 'bags'}: the defaults)") in text
    alone = CliRunner().invoke(main, ["report", str(run), "--out", str(tmp_path / "alone"),
                                      "--resamples", "200"])
    assert alone.exit_code == 0, alone.output
    assert ("Comparison policy changed from the contract's defaults in every run: "
            "set_semantics=true") in " ".join(alone.output.split())


def test_the_bird_preset_in_a_sweep(tmp_path: Path) -> None:
    """``--policy bird`` judges as BIRD's script (every row twice is the same set), names the
    preset where it says the policy changed, and resumes under the same options spelled out."""
    predictions = every_row_twice(tmp_path)
    run = tmp_path / "run"
    code, output = sweep(run, predictions, "bird")
    assert code == 0, output
    records = list(ResultsStore(run).records())
    assert {r["engine"]: r["status"] for r in records} == {"sqlite": "match", "duckdb": "match"}
    said = " ".join(output.split())
    assert "Comparison policy changed from the contract's defaults: bird (" in said, said
    assert "set_semantics=true" in said
    spelled = [f"{key}={json.dumps(value)}" for key, value in preset_options("bird").items()]
    code, output = sweep(run, predictions, *spelled)
    assert code == 0, output
    assert "0 new records, 2 resumed" in output
