"""Several workers per engine (real SQLite and DuckDB): the same verdicts as one worker in
question order, each worker on a connection of its own, and one worker where asked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from polysql.cli.main import main
from polysql.core.store import ResultsStore

pytestmark = pytest.mark.usefixtures("isolated_cache")


def sweep(run: Path, *extra: str) -> list[dict[str, object]]:
    result = CliRunner().invoke(main, ["sweep", "--dataset", "demo", "--engines", "sqlite,duckdb",
                                       "--no-cache", "--out", str(run), *extra])
    assert result.exit_code == 0, result.output
    return list(ResultsStore(run).records())


def verdicts(records: list[dict[str, object]]) -> dict[tuple[object, ...], tuple[object, ...]]:
    return {(r["question_id"], r["predictor"], r["engine"]): (r["status"], r["reason"])
            for r in records}


def test_three_workers_reach_the_verdicts_one_does(tmp_path: Path) -> None:
    one = sweep(tmp_path / "one", "--workers", "1")
    three = sweep(tmp_path / "three", "--workers", "3")
    assert len(one) == len(three) > 200
    assert verdicts(three) == verdicts(one)
    lanes = json.loads((tmp_path / "three" / "timings.json").read_text())["lanes"]
    assert lanes["gold"]["threads"] == 3
    assert lanes["sqlite"]["threads"] == 3 and lanes["duckdb"]["threads"] == 3
    lanes = json.loads((tmp_path / "one" / "timings.json").read_text())["lanes"]
    assert lanes["gold"]["threads"] == 1 and lanes["sqlite"]["threads"] == 1
    # one worker takes the questions in order
    order = [r["question_id"] for r in one if r["engine"] == "sqlite" and r["predictor"] == "gold"]
    assert order == sorted(order)


def test_workers_must_be_positive(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["sweep", "--dataset", "demo", "--workers", "0",
                                       "--out", str(tmp_path / "run")])
    assert result.exit_code == 2 and "--workers" in result.output
