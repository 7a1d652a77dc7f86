"""LLMPredictor against a real HTTP endpoint on 127.0.0.1.

The endpoint (``openai_emulator``: :mod:`polysql_testkit.openai_emulator`, via conftest.py) is an
emulator of a remote OpenAI-compatible chat service, not a model: each test scripts what it answers. Requests really cross a socket
through the ``openai`` package, and the tests compare what the predictor recorded with what the
emulator saw and sent.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

import polysql
from polysql.core.predictor import TargetEngine
from polysql.datasets.base import Question
from polysql.datasets.registry import get_dataset
from polysql.engines.ddl import render_schema

pytest.importorskip("openai", reason="model predictors need the openai package (polysql[llm])")
pytest.importorskip("jinja2", reason="prompt templates need Jinja2 (polysql[llm])")

from polysql.llm.client import ModelConfig, ResponseCache  # noqa: E402  (after the importorskip on purpose)
from polysql.llm.predictors import LLMPredictor  # noqa: E402
from polysql.llm.prompting import PromptSettings  # noqa: E402

QUESTION = Question(id="q1", db_id="retail", question="How many customers are there?",
                    gold_sql="SELECT COUNT(*) FROM customers", evidence="each row of customers is one customer")


@pytest.fixture(scope="module")
def duckdb_engine(tmp_path_factory: pytest.TempPathFactory) -> TargetEngine:
    """TargetEngine as a sweep fills it in: the demo database loaded into a real DuckDB copy."""
    url = f"duckdb:///{tmp_path_factory.mktemp('duck') / 'retail.duckdb'}"
    polysql.load(get_dataset("demo").database_url("retail"), url)
    with polysql.connect(url, read_only=True) as backend:
        return TargetEngine(name="duckdb", dialect="duckdb", version=backend.version(),
                          schema=render_schema(backend))


def model(base_url: str, **overrides: Any) -> ModelConfig:
    settings: dict[str, Any] = {"max_retries": 1, "timeout": 10.0, "backoff_base": 0.0,
                                "params": {"temperature": 0, "max_tokens": 200}}
    settings.update(overrides)
    return ModelConfig(name="emu", base_url=base_url, model="emulated-chat-1", **settings)


def test_success_records_prompt_usage_and_extraction(openai_emulator: Any, duckdb_engine: TargetEngine) -> None:
    answer = "Here you go:\n```sql\nSELECT COUNT(*) FROM customers;\n```\nThis counts every customer."
    openai_emulator.script(then=openai_emulator.reply(text=answer))
    predictor = LLMPredictor(model(openai_emulator.base_url), prompts=PromptSettings(level="pitfalls"))
    prediction = predictor.predict(QUESTION, duckdb_engine)
    assert prediction.failure is None
    assert prediction.sql is not None and prediction.sql.rstrip(";").strip() == "SELECT COUNT(*) FROM customers"
    (request,) = openai_emulator.requests
    (sent,) = openai_emulator.answers
    meta = prediction.meta
    # the prompt recorded is the prompt sent, and it shows the DuckDB schema, the question, the hint
    assert request.body["messages"] == [{"role": "system", "content": meta["prompt_system"]},
                                   {"role": "user", "content": meta["prompt_text"]}]
    assert duckdb_engine.schema is not None and duckdb_engine.schema.strip() in meta["prompt_text"]
    assert QUESTION.question in meta["prompt_text"] and QUESTION.evidence in meta["prompt_text"]
    assert request.body["model"] == "emulated-chat-1" and request.body["max_tokens"] == 200
    assert (meta["prompt_template"], meta["prompt_version"], meta["prompt_level"]) == ("text2sql", "1", "pitfalls")
    assert len(meta["prompt_hash"]) == 64
    assert meta["usage"]["prompt_tokens"] == sent["usage"]["prompt_tokens"] > 0
    assert meta["usage"]["completion_tokens"] == sent["usage"]["completion_tokens"] > 0
    assert meta["response"] == answer and meta["cached"] is False
    assert meta["extraction"]["method"] == "fenced_sql" and meta["extraction"]["failure"] is None
    usage = predictor.usage()
    assert (usage["calls"], usage["cache_hits"], usage["errors"]) == (1, 0, 0)
    assert usage["prompt_tokens"] == sent["usage"]["prompt_tokens"]


@pytest.mark.parametrize(("answer", "reason"), [
    ("", "empty_response"),
    ("I'm sorry, but I cannot answer questions about this database.", "refusal"),
    ("The number of customers can be found by counting them.", "no_sql_found"),
])
def test_an_unusable_answer_becomes_a_generation_failure(openai_emulator: Any, duckdb_engine: TargetEngine,
                                                         answer: str, reason: str) -> None:
    openai_emulator.script(then=openai_emulator.reply(text=answer))
    prediction = LLMPredictor(model(openai_emulator.base_url)).predict(QUESTION, duckdb_engine)
    assert prediction.sql is None
    assert prediction.failure == f"generation_failure: {reason}"
    assert prediction.meta["extraction"]["failure"] == reason
    assert prediction.meta["response"] == answer and prediction.meta["prompt_hash"]


@pytest.mark.parametrize(("finish_reason", "failure"), [("stop", None), ("length", "truncated_response")])
def test_an_answer_cut_at_the_token_limit_is_not_taken_as_whole(openai_emulator: Any, duckdb_engine: TargetEngine,
                                                                finish_reason: str, failure: str | None) -> None:
    answer = "SELECT COUNT(*) FROM customers WHERE country = 'Germany'"
    openai_emulator.script(then=openai_emulator.reply(text=answer, finish_reason=finish_reason))
    prediction = LLMPredictor(model(openai_emulator.base_url)).predict(QUESTION, duckdb_engine)
    assert prediction.meta["usage"]["finish_reason"] == finish_reason
    assert prediction.meta["extraction"]["failure"] == failure
    if failure is None:
        assert prediction.sql == answer
    else:
        assert prediction.sql is None and prediction.failure == f"generation_failure: {failure}"


def test_an_endpoint_that_keeps_failing_gives_no_answer_not_a_wrong_one(openai_emulator: Any,
                                                                        duckdb_engine: TargetEngine) -> None:
    openai_emulator.script(then=openai_emulator.reply(status=503, error="overloaded"))
    predictor = LLMPredictor(model(openai_emulator.base_url, max_retries=2))
    prediction = predictor.predict(QUESTION, duckdb_engine)
    assert prediction.sql is None and prediction.failure is None  # nothing to score
    assert prediction.unavailable is not None
    assert "HTTP 503" in prediction.unavailable and "3 attempt(s)" in prediction.unavailable
    assert len(openai_emulator.requests) == 3  # first attempt and two retries
    usage = predictor.usage()
    assert (usage["calls"], usage["errors"]) == (0, 1)


def test_a_cached_answer_costs_no_request(openai_emulator: Any, duckdb_engine: TargetEngine, tmp_path: Path) -> None:
    openai_emulator.script(then=openai_emulator.reply(text="```sql\nSELECT COUNT(*) FROM customers\n```"))
    cache = ResponseCache(tmp_path / "responses.sqlite")
    first = LLMPredictor(model(openai_emulator.base_url), cache=cache).predict(QUESTION, duckdb_engine)
    again_predictor = LLMPredictor(model(openai_emulator.base_url), cache=cache)
    again = again_predictor.predict(QUESTION, duckdb_engine)
    cache.close()
    assert len(openai_emulator.requests) == 1
    assert again.sql == first.sql and again.meta["cached"] is True and first.meta["cached"] is False
    assert again.meta["prompt_hash"] == first.meta["prompt_hash"]
    assert again.meta["usage"]["prompt_tokens"] == first.meta["usage"]["prompt_tokens"]
    usage = again_predictor.usage()
    assert (usage["calls"], usage["cache_hits"], usage["prompt_tokens"]) == (0, 1, 0)


def test_submitted_requests_run_concurrently_up_to_the_models_limit(openai_emulator: Any,
                                                                    duckdb_engine: TargetEngine) -> None:
    openai_emulator.script(then=openai_emulator.reply(text="```sql\nSELECT 1\n```", delay=0.3))
    predictor = LLMPredictor(model(openai_emulator.base_url, max_concurrency=3))
    questions = [Question(id=f"q{i}", db_id="retail", question=f"Question number {i}?", gold_sql="SELECT 1")
                 for i in range(9)]
    started = time.monotonic()
    futures = [predictor.submit(q, duckdb_engine) for q in questions]
    submitted = time.monotonic() - started
    predictions = [f.result(timeout=30) for f in futures]
    elapsed = time.monotonic() - started
    predictor.close()
    assert submitted < 0.3  # submit() hands over and returns; the requests run in the pool
    assert all(p.sql == "SELECT 1" for p in predictions)
    assert openai_emulator.max_in_flight == 3
    assert elapsed < 9 * 0.3  # overlapped, not one after another
    texts = {p.meta["prompt_text"] for p in predictions}
    assert len(texts) == 9


def test_predict_without_a_schema_says_what_is_missing(openai_emulator: Any) -> None:
    from polysql.core.errors import ConfigError

    predictor = LLMPredictor(model(openai_emulator.base_url))
    with pytest.raises(ConfigError, match="needs the schema of 'retail' on duckdb"):
        predictor.predict(QUESTION, TargetEngine(name="duckdb", dialect="duckdb"))
    assert openai_emulator.requests == []
