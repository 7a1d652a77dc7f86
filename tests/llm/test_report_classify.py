"""`polysql report --classify` end to end: a real demo sweep, then every failure classified by the
real llama.cpp server, written to classifications.jsonl and counted in the report."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from polysql_testkit.model_config import write_config

from polysql.analysis.categories import CATEGORIES, UNCLASSIFIED
from polysql.cli import EXIT_INCOMPLETE, main
from polysql.llm.client import ModelConfig


def sweep_with_failures(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A demo sweep of questions whose SQLite gold breaks on DuckDB (integer division, date
    functions), in a cache of the test's own; returns the run folder."""
    monkeypatch.setenv("POLYSQL_CACHE", str(tmp_path / "cache"))
    run = tmp_path / "run"
    questions = [arg for q in ("demo-001", "demo-027", "demo-031", "demo-040", "demo-044")
                 for arg in ("--question", q)]
    swept = CliRunner().invoke(main, ["sweep", *questions, "--predictor", "gold",
                                      "--engines", "sqlite,duckdb", "--out", str(run)],
                               catch_exceptions=False)
    assert swept.exit_code == 0, swept.output
    return run


def test_report_classifies_every_failure_with_the_real_model(
        llama_model_config: ModelConfig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = sweep_with_failures(tmp_path, monkeypatch)
    failures = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    failures = [r for r in failures if r["status"] in ("mismatch", "exec_error")]
    assert len(failures) >= 3

    config = write_config(tmp_path / "polysql.toml",
                          replace(llama_model_config, params={**llama_model_config.params,
                                                              "max_tokens": 200}))
    out = tmp_path / "report"
    args = ["report", str(run), "--out", str(out), "--resamples", "200", "--classify", "smol",
            "--config", str(config)]
    first = CliRunner().invoke(main, args, catch_exceptions=False)
    assert first.exit_code == 0, first.output
    lines = [json.loads(line) for line in (out / "classifications.jsonl").read_text().splitlines()]
    assert len(lines) == len(failures)
    assert {tuple(line["key"]) for line in lines} == {
        (r["dataset"], r["question_id"], r["predictor"], r["engine"]) for r in failures}
    for line in lines:
        assert line["category"] in (*CATEGORIES, UNCLASSIFIED)
        assert line["attempts"] >= 1 and line["signal"]
    findings = json.loads((out / "findings.json").read_text())
    assert findings["classified"] is True
    counted = sum(sum(row["categories"].values()) for row in findings["taxonomy"])
    assert counted == len(failures)

    again = CliRunner().invoke(main, args, catch_exceptions=False)
    assert again.exit_code == 0, again.output
    assert "0 calls" in again.output  # every answer came from the response cache


def test_a_classifier_outage_leaves_the_taxonomy_out_and_says_so(
        openai_emulator: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An endpoint that gives no answer must not file every failure as "unclassified": the
    report is written without a taxonomy, says why on screen and in report.md, removes an
    earlier report's classifications, and exits incomplete."""
    run = sweep_with_failures(tmp_path, monkeypatch)
    config = tmp_path / "polysql.toml"
    config.write_text(f'[models.emu]\nbase_url = "{openai_emulator.base_url}"\nmodel = "m"\n'
                      "max_retries = 1\nbackoff_base = 0.01\nbackoff_max = 0.02\n"
                      "max_concurrency = 1\n", encoding="utf-8")
    openai_emulator.script(then=openai_emulator.reply(status=503, error="overloaded"))
    out = tmp_path / "report"
    out.mkdir()
    (out / "classifications.jsonl").write_text('{"stale": true}\n', encoding="utf-8")

    result = CliRunner().invoke(main, ["report", str(run), "--out", str(out), "--resamples", "200",
                                       "--classify", "emu", "--config", str(config)],
                                catch_exceptions=False)
    assert result.exit_code == EXIT_INCOMPLETE, result.output
    assert "INCOMPLETE" in result.output and "no error taxonomy" in result.output
    assert "HTTP 503" in result.output
    findings = json.loads((out / "findings.json").read_text())
    assert findings["classified"] is False and findings["accuracy"]
    assert "No error taxonomy" in (out / "report.md").read_text()
    assert not (out / "classifications.jsonl").exists()
    assert len(openai_emulator.requests) == 2  # the first failure (with its retry), then it stopped
