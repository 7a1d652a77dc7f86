"""A model endpoint that gives no answer is not a model that answers wrong.

Unreachable, timing out or failing with 5xx/429 after its retries: the work stays pending, the
sweep exits 6 saying what to fix, and the next run asks again. What the endpoint did answer is
scored, a request it rejected for its content (HTTP 400) included. The endpoint is the
``openai_emulator`` fixture (conftest.py), an emulator of a remote OpenAI-compatible service
(:mod:`polysql_testkit.openai_emulator`): a real HTTP server on 127.0.0.1.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from polysql_testkit.openai_emulator import OpenAIEmulator, Reply

from polysql.cli.main import EXIT_INCOMPLETE, main
from polysql.core.predictor import TargetEngine
from polysql.core.store import ResultsStore
from polysql.datasets.base import Question
from polysql.llm.client import ModelConfig
from polysql.llm.predictors import DOWN_AFTER, LLMPredictor

pytest.importorskip("jinja2", reason="prompt templates need Jinja2 (polysql[llm])")

COUNT_CUSTOMERS = "```sql\nSELECT COUNT(*) FROM customers\n```"
ENGINE = TargetEngine(name="sqlite", dialect="sqlite", version="3", schema="CREATE TABLE customers (id INTEGER);")


def question(n: int) -> Question:
    return Question(id=f"q{n}", db_id="retail", question=f"question number {n}?",
                    gold_sql="SELECT COUNT(*) FROM customers")


def model(base_url: str, **overrides: Any) -> ModelConfig:
    settings: dict[str, Any] = {"max_retries": 0, "timeout": 10.0, "backoff_base": 0.0,
                                "max_concurrency": 1}
    settings.update(overrides)
    return ModelConfig(name="emu", base_url=base_url, model="emulated-chat-1", **settings)


def test_a_rejected_request_is_a_scored_failure(openai_emulator: Any) -> None:
    openai_emulator.script(then=openai_emulator.reply(status=400, error="maximum context length exceeded"))
    prediction = LLMPredictor(model(openai_emulator.base_url)).predict(question(1), ENGINE)
    assert prediction.unavailable is None
    assert prediction.failure is not None and "HTTP 400" in prediction.failure
    assert prediction.failure.startswith("generation_failure: llm_error: ")


def test_an_endpoint_down_is_given_up_after_a_few_requests_in_a_row(openai_emulator: Any) -> None:
    openai_emulator.script(then=openai_emulator.reply(status=503, error="overloaded"))
    predictor = LLMPredictor(model(openai_emulator.base_url))
    outcomes = [predictor.predict(question(n), ENGINE) for n in range(10)]
    assert all(p.unavailable is not None and p.sql is None and p.failure is None for p in outcomes)
    assert len(openai_emulator.requests) == DOWN_AFTER  # the rest were not sent
    assert "HTTP 503" in outcomes[-1].unavailable and "in a row" in outcomes[-1].unavailable


def test_an_answer_between_failures_keeps_the_endpoint_in_use(openai_emulator: Any) -> None:
    seen: list[int] = []

    def flaky(body: dict[str, Any]) -> Reply:
        seen.append(1)
        if len(seen) % DOWN_AFTER == 0:
            return openai_emulator.reply(text=COUNT_CUSTOMERS)
        return openai_emulator.reply(status=503, error="busy")

    openai_emulator.responder = flaky
    predictor = LLMPredictor(model(openai_emulator.base_url))
    outcomes = [predictor.predict(question(n), ENGINE) for n in range(3 * DOWN_AFTER)]
    assert len(openai_emulator.requests) == 3 * DOWN_AFTER  # never given up
    assert sum(p.sql is not None for p in outcomes) == 3


def write_config(tmp_path: Path, base_url: str) -> Path:
    path = tmp_path / "polysql.toml"
    path.write_text(f'[models.emu]\nbase_url = "{base_url}"\nmodel = "emulated-chat-1"\n'
                    "max_concurrency = 2\nmax_retries = 1\nbackoff_base = 0\ntimeout = 10\n",
                    encoding="utf-8")
    return path


def sweep(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["sweep", "--dataset", "demo", "--engines", "sqlite,duckdb", *args],
                                catch_exceptions=False)
    return result.exit_code, result.output


def test_a_sweep_with_the_model_server_down_leaves_its_work_pending_and_retries_it(
        openai_emulator: Any, isolated_cache: Path, tmp_path: Path) -> None:
    base_url, port = openai_emulator.base_url, openai_emulator.port
    openai_emulator.stop()  # the model server is down
    config = write_config(tmp_path, base_url)
    run = tmp_path / "run"
    args = ["--limit", "3", "--predictor", "gold,llm:emu", "--config", str(config), "--out", str(run)]
    code, output = sweep(*args)  # nothing listens on the port
    assert code == EXIT_INCOMPLETE, output
    assert "llm:emu gave no answers" in output and "cannot connect" in output
    assert "6 prediction(s) are pending" in output and "start or fix the model endpoint" in output
    records = list(ResultsStore(run).records())
    assert {r["predictor"] for r in records} == {"gold"}  # nothing recorded as the model's answer
    summary = json.loads((run / "summary.json").read_text())
    assert summary["complete"] is False and summary["pending"] == 6
    assert "INCOMPLETE" in (run / "report.md").read_text()

    with OpenAIEmulator(port) as endpoint:  # the server is back, at the same address
        endpoint.script(then=endpoint.reply(text=COUNT_CUSTOMERS))
        code, output = sweep(*args)
    assert code == 0, output
    assert "6 new records, 6 resumed" in output
    assert len(endpoint.requests) == 6
    summary = json.loads((run / "summary.json").read_text())
    assert summary["complete"] is True and summary["pending"] == 0
