"""Sweeps with a model predictor, through the CLI, on real SQLite and DuckDB engines.

The model is the ``openai_emulator`` fixture (conftest.py, :mod:`polysql_testkit.openai_emulator`):
a real HTTP server on 127.0.0.1 that stands in for a remote OpenAI-compatible service and answers
each question as scripted here, so the sweep's handling of good answers, unusable answers and
failing requests can be checked exactly. The real-model run is test_llm_sweep.py, beside this file.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from polysql_testkit.bird_layout import GOLD, make_bird
from polysql_testkit.openai_emulator import Reply

from polysql.cli.main import EXIT_CONFIG, EXIT_INCOMPLETE, EXIT_STORE, main
from polysql.core.store import ResultsStore
from polysql.sweep.freshness import check_freshness

pytest.importorskip("jinja2", reason="prompt templates need Jinja2 (polysql[llm])")

COUNT_CUSTOMERS = "```sql\nSELECT COUNT(*) FROM customers\n```"


def user_text(body: dict[str, Any]) -> str:
    return next(m["content"] for m in body["messages"] if m["role"] == "user")


def answer_by_question(body: dict[str, Any]) -> Reply:
    """Right for demo-001, a server error for demo-002, prose for the rest."""
    text = user_text(body)
    if "How many customers are there?" in text:
        return Reply(text=COUNT_CUSTOMERS)
    if "online channel" in text:
        return Reply(status=500, error="internal error")
    return Reply(text="I would need to look at the data to answer that.")


def write_config(tmp_path: Path, base_url: str, extra: str = "") -> Path:
    path = tmp_path / "polysql.toml"
    path.write_text(
        f'[models.emu]\nbase_url = "{base_url}"\nmodel = "emulated-chat-1"\nmax_concurrency = 3\n'
        "max_retries = 1\nbackoff_base = 0\ntimeout = 10\n"
        f"[models.emu.params]\ntemperature = 0\n{extra}"
        '[models.other]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "other"\n',
        encoding="utf-8")
    return path


def sweep(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["sweep", "--dataset", "demo", "--engines", "sqlite,duckdb", *args],
                                catch_exceptions=False)
    return result.exit_code, result.output


def test_model_sweep_records_every_outcome_and_a_rerun_is_served_from_the_cache(
        openai_emulator: Any, isolated_cache: Path, tmp_path: Path) -> None:
    openai_emulator.responder = answer_by_question
    config = write_config(tmp_path, openai_emulator.base_url)
    run = tmp_path / "run"
    code, output = sweep("--limit", "4", "--model", "emu", "--config", str(config), "--out", str(run))
    # the server error got no answer: not the model's wrong answer, but pending work
    assert code == EXIT_INCOMPLETE, output
    assert "llm:emu gave no answers" in output and "HTTP 500" in output
    assert "2 prediction(s) are pending" in output and "INCOMPLETE: 2 pending" in output
    records = list(ResultsStore(run).records())
    # everything answered is recorded: 4 questions x 2 engines, but for the two unanswered ones
    assert sorted((r["question_id"], r["engine"]) for r in records) == sorted(
        (f"demo-00{i}", e) for i in (1, 3, 4) for e in ("sqlite", "duckdb"))
    assert {r["predictor"] for r in records} == {"llm:emu"}
    by_key = {(r["question_id"], r["engine"]): r for r in records}
    summary = json.loads((run / "summary.json").read_text())
    assert summary["complete"] is False and summary["pending"] == 2
    for engine in ("sqlite", "duckdb"):
        good = by_key[("demo-001", engine)]
        assert good["status"] == "match" and good["sql"] == "SELECT COUNT(*) FROM customers"
        prose = by_key[("demo-003", engine)]
        assert prose["status"] == "generation_failure"
        assert prose["prediction_failure"] == "generation_failure: no_sql_found"
        assert prose["prediction_meta"]["response"].startswith("I would need")
    # each engine's prompt shows that engine's schema and names it
    duck_prompt = by_key[("demo-001", "duckdb")]["prediction_meta"]["prompt_text"]
    lite_prompt = by_key[("demo-001", "sqlite")]["prediction_meta"]["prompt_text"]
    assert "DuckDB" in duck_prompt and "VARCHAR" in duck_prompt
    assert "SQLite" in lite_prompt and "VARCHAR" not in lite_prompt
    meta = by_key[("demo-001", "duckdb")]["prediction_meta"]
    assert meta["prompt_template"] == "text2sql" and meta["prompt_level"] == "dialect"
    assert meta["usage"]["prompt_tokens"] > 0 and meta["cached"] is False
    # usage: what the emulator answered is what the summary counts
    answered = len(openai_emulator.answers)
    assert answered == 6  # 3 answerable questions x 2 engines; the failing ones got no answer
    assert len(openai_emulator.requests) == answered + 2 * 2  # each failing one: attempt + 1 retry
    usage = json.loads((run / "summary.json").read_text())["models"]["llm:emu"]
    assert usage["calls"] == answered and usage["cache_hits"] == 0 and usage["errors"] == 2
    assert usage["prompt_tokens"] == sum(a["usage"]["prompt_tokens"] for a in openai_emulator.answers)
    assert usage["completion_tokens"] == sum(a["usage"]["completion_tokens"] for a in openai_emulator.answers)
    report = (run / "report.md").read_text()
    assert "## Model usage" in report and f"| llm:emu | {answered} | 0 |" in report
    assert "model usage" in output and "generate llm:emu" in output

    # the same sweep into a fresh folder: answers come from the cache, failures are asked again
    seen = len(openai_emulator.requests)
    code, output = sweep("--limit", "4", "--model", "emu", "--config", str(config), "--out", str(tmp_path / "again"))
    assert code == EXIT_INCOMPLETE, output
    usage = json.loads((tmp_path / "again" / "summary.json").read_text())["models"]["llm:emu"]
    assert (usage["calls"], usage["cache_hits"], usage["prompt_tokens"]) == (0, answered, 0)
    assert len(openai_emulator.requests) - seen == 2 * 2
    again = {(r["question_id"], r["engine"]): r for r in ResultsStore(tmp_path / "again").records()}
    assert again[("demo-001", "duckdb")]["prediction_meta"]["cached"] is True
    assert {k: r["status"] for k, r in again.items()} == {k: r["status"] for k, r in by_key.items()}

    # --no-cache asks the model again
    code, output = sweep("--limit", "1", "--model", "emu", "--config", str(config), "--no-cache",
                         "--out", str(tmp_path / "uncached"))
    assert code == 0, output
    usage = json.loads((tmp_path / "uncached" / "summary.json").read_text())["models"]["llm:emu"]
    assert (usage["calls"], usage["cache_hits"]) == (2, 0)


def test_waiting_for_model_answers_is_the_models_time_not_polysqls(
        openai_emulator: Any, isolated_cache: Path, tmp_path: Path) -> None:
    # Every answer takes 0.6 s to arrive; meanwhile each engine has nothing else to run.
    openai_emulator.script(then=openai_emulator.reply(text=COUNT_CUSTOMERS, delay=0.6))
    config = write_config(tmp_path, openai_emulator.base_url)
    run = tmp_path / "run"
    code, output = sweep("--limit", "3", "--model", "emu", "--config", str(config), "--out", str(run),
                         "--timings")
    assert code == 0, output
    assert "waiting for model answers" in " ".join(output.split())
    lanes = json.loads((run / "timings.json").read_text())["lanes"]
    for name in ("sqlite", "duckdb"):
        lane = lanes[name]
        assert lane["model"] >= 0.4, (name, lane)  # the wait, less what ran in the meantime
        assert lane["polysql"] < lane["model"], (name, lane)
        assert lane["engine"] + lane["load"] + lane["model"] + lane["polysql"] == \
            pytest.approx(lane["total"], abs=1e-5)


def test_models_and_file_predictors_sweep_together(openai_emulator: Any, isolated_cache: Path,
                                                    tmp_path: Path) -> None:
    openai_emulator.script(then=openai_emulator.reply(text=COUNT_CUSTOMERS))
    config = write_config(tmp_path, openai_emulator.base_url)
    run = tmp_path / "run"
    code, output = sweep("--limit", "2", "--predictor", "gold,llm:emu", "--config", str(config),
                         "--prompt-level", "pitfalls", "--cot", "--sample-rows", "1", "--out", str(run))
    assert code == 0, output
    records = list(ResultsStore(run).records())
    assert sorted({r["predictor"] for r in records}) == ["gold", "llm:emu"] and len(records) == 8
    prompt = next(r for r in records if r["predictor"] == "llm:emu" and r["engine"] == "duckdb")["prediction_meta"]
    assert "step by step" in prompt["prompt_text"] and "example row(s)" in prompt["prompt_text"]
    assert "string_agg" in prompt["prompt_text"]  # a DuckDB pitfall
    run_info = json.loads((run / "run.json").read_text())
    described = next(p for p in run_info["predictors"] if p["name"] == "llm:emu")
    assert described["settings"]["level"] == "pitfalls" and described["settings"]["cot"] is True


def test_each_engines_schema_is_rendered_once_for_all_its_questions(openai_emulator: Any, isolated_cache: Path,
                                                                    tmp_path: Path) -> None:
    from polysql.sweep.runner import Sweep, SweepConfig

    config = write_config(tmp_path, openai_emulator.base_url)
    runner = Sweep(SweepConfig(dataset="demo", engines="sqlite,duckdb", predictors=[], models=["emu"],
                               model_config=config, limit=5, out=tmp_path / "run"))
    outcome = runner.run()
    assert outcome.written == 10 and len(openai_emulator.requests) == 10
    assert runner.schemas.renders == 2  # one database on two engines
    assert outcome.models["llm:emu"]["calls"] == 10


def test_resuming_under_other_prompt_settings_is_refused(openai_emulator: Any, isolated_cache: Path,
                                                         tmp_path: Path) -> None:
    config = write_config(tmp_path, openai_emulator.base_url)
    run = tmp_path / "run"
    assert sweep("--limit", "1", "--model", "emu", "--config", str(config), "--out", str(run))[0] == 0
    code, output = sweep("--limit", "1", "--model", "emu", "--config", str(config), "--out", str(run),
                         "--prompt-level", "generic")
    assert code == EXIT_STORE
    assert "llm:emu" in output and "level" in output and "--fresh" in output


def test_unknown_model_lists_the_models_and_the_config_file(tmp_path: Path, isolated_cache: Path) -> None:
    config = write_config(tmp_path, "http://127.0.0.1:9/v1")
    code, output = sweep("--model", "gpt9", "--config", str(config), "--out", str(tmp_path / "run"))
    assert code == EXIT_CONFIG
    assert "unknown model 'gpt9'" in output and "emu, other" in output
    assert str(config.resolve()) in output.replace("\n", "")
    assert not (tmp_path / "run" / "results.jsonl").exists()


def test_a_missing_api_key_is_named_before_any_work(tmp_path: Path, isolated_cache: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("POLYSQL_TEST_NO_SUCH_KEY", raising=False)
    config = write_config(tmp_path, "http://127.0.0.1:9/v1", extra="")
    text = config.read_text().replace('model = "emulated-chat-1"\n',
                                      'model = "emulated-chat-1"\napi_key_env = "POLYSQL_TEST_NO_SUCH_KEY"\n')
    config.write_text(text)
    code, output = sweep("--model", "emu", "--config", str(config), "--out", str(tmp_path / "run"))
    assert code == EXIT_CONFIG
    assert "$POLYSQL_TEST_NO_SUCH_KEY" in output and "not set" in output


def test_a_models_records_are_stale_once_its_database_changes(
        openai_emulator: Any, isolated_cache: Path, tmp_path: Path) -> None:
    """What a model was asked is not rebuilt by a report (no model config there), but the rest
    of its records' inputs are: a database replaced after the sweep makes them stale."""
    openai_emulator.responder = lambda body: Reply(text=f"```sql\n{GOLD}\n```")
    root = make_bird(tmp_path / "bird")
    config = write_config(tmp_path, openai_emulator.base_url)
    run = tmp_path / "run"
    result = CliRunner().invoke(main, ["sweep", "--dataset", f"bird:{root}", "--engines", "sqlite",
                                       "--model", "emu", "--config", str(config), "--out",
                                       str(run)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert check_freshness(run).message() is None

    with sqlite3.connect(root / "dev_databases" / "zoo" / "zoo.sqlite") as con:
        con.execute("INSERT INTO item VALUES (3, 'c')")
    freshness = check_freshness(run)
    assert (freshness.checked, freshness.stale, freshness.predictors) == (4, 2, {"llm:emu"})
    assert freshness.changed == {"database": 2}
    output = CliRunner().invoke(main, ["report", str(run)], catch_exceptions=False).output
    assert "STALE" in output and "2 of 4 records" in output, output
