"""A predictions file through the real sweep (CLI, SQLite engine): a bad line costs only its own
question, and lines the sweep cannot use are reported, never dropped silently."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from polysql.cli.main import EXIT_DATA, main
from polysql.core.store import ResultsStore
from polysql.datasets.registry import get_dataset

pytestmark = pytest.mark.usefixtures("isolated_cache")


def sweep(preds: Path, run: Path) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["sweep", "--dataset", "demo", "--engines", "sqlite", "--limit", "3",
                                       "--predictor", f"m={preds}", "--out", str(run)])
    return result.exit_code, result.output


def test_a_bad_byte_and_a_lone_surrogate_cost_only_their_own_questions(tmp_path: Path) -> None:
    demo = get_dataset("demo")
    first, second, third = demo.questions[:3]
    bad_byte = (b'{"question_id": "%s", "dialect": "sqlite", "sql": "SELECT \'caf\xe9\'"}'
                % second.id.encode())
    preds = tmp_path / "preds.jsonl"
    preds.write_bytes(b"\n".join([
        json.dumps({"question_id": first.id, "dialect": "sqlite", "sql": first.gold_sql}).encode(),
        bad_byte,
        json.dumps({"question_id": third.id, "sql": "SELECT '\ud800'"}).encode(),
        json.dumps({"question_id": "no-such-question", "sql": "SELECT 1"}).encode(),
        json.dumps({"question_id": first.id, "dialect": "postgress", "sql": "SELECT 1"}).encode(),
    ]) + b"\n")
    run = tmp_path / "run"
    code, output = sweep(preds, run)
    assert code == 0, output
    column = bad_byte.index(b"\xe9") + 1
    assert f"{preds}:2: not valid UTF-8 (byte 0xe9 at column {column}); save the file as UTF-8" in output
    assert f"{preds}:3: 'sql' holds a lone surrogate U+D800 at offset 8" in output
    records = {r["question_id"]: r for r in ResultsStore(run).records()}
    assert set(records) == {first.id, second.id, third.id}
    assert records[first.id]["status"] == "match"
    assert records[first.id]["prediction_meta"] == {"line": 1}
    assert records[second.id]["status"] == "generation_failure"
    assert records[second.id]["prediction_failure"] == (
        f"invalid_prediction: {preds}:2: not valid UTF-8 (byte 0xe9 at column {column}); "
        "save the file as UTF-8")
    assert records[third.id]["prediction_failure"].startswith(
        f"invalid_prediction: {preds}:3: 'sql' holds a lone surrogate U+D800 at offset 8")
    # the coverage audit: lines no swept question or engine can use are reported with file:line
    assert (f"{preds}: 1 prediction(s) for question ids not in dataset demo are ignored: "
            f"{preds}:4: question id 'no-such-question'") in output
    assert f"{preds}:5: dialect 'postgress' (did you mean 'postgres'?)" in output


def test_a_file_for_another_dataset_is_an_error_not_a_zero_score(tmp_path: Path) -> None:
    preds = tmp_path / "preds.jsonl"
    preds.write_text("".join(json.dumps({"question_id": f"q{i}", "sql": "SELECT 1"}) + "\n"
                             for i in range(1, 4)), encoding="utf-8")
    run = tmp_path / "run"
    code, output = sweep(preds, run)
    assert code == EXIT_DATA, output
    assert (f"{preds}: none of its 3 predictions matches a question of dataset demo (first id 'q1' at "
            "line 1); are these predictions for another dataset?") in output
    assert not (run / "results.jsonl").exists()


def test_lines_that_could_not_be_read_are_named_beside_the_mismatch(tmp_path: Path) -> None:
    """All ids wrong and a line broken: the error names both, so one fix does not lead to
    another error."""
    preds = tmp_path / "preds.jsonl"
    preds.write_text(json.dumps({"question_id": "q1", "sql": "SELECT 1"}) + "\n"
                     + '{"question_id": "q2", "sql": "SELECT\n', encoding="utf-8")
    code, output = sweep(preds, tmp_path / "run")
    assert code == EXIT_DATA, output
    assert "are these predictions for another dataset?; 1 more line(s) could not be read " \
           f"(first: {preds}:2: not valid JSON" in " ".join(output.split())
