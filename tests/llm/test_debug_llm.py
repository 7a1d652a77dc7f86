"""The SQL-debugging task's model predictor (``polysql debug eval --predictor llm:NAME``) goes
through polysql's own model config, client, response cache and usage accounting.

The endpoint is the scripted emulator of a remote OpenAI-compatible service (tests/llm/conftest.py)
so each kind of answer can be produced on demand; the tasks are the bundled ones, scored on their
real demo database.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from polysql.core.errors import ConfigError, LLMUnavailableError
from polysql.debug.evaluate import DemoBackends, LLMFixer, evaluate, load_tasks, make_predictor
from polysql.llm.client import ResponseCache

pytest.importorskip("openai", reason="model calls need the openai package (polysql[llm])")


def write_config(folder: Path, base_url: str, **extra: str) -> Path:
    lines = ["[models.fixer]", f'base_url = "{base_url}"', 'model = "emulated-fixer"',
             "max_retries = 1", "backoff_base = 0.01", "backoff_max = 0.02", "timeout = 5",
             *(f'{key} = "{value}"' for key, value in extra.items()),
             "[models.fixer.params]", "temperature = 0"]
    path = folder / "polysql.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def cache(tmp_path: Path) -> Any:
    opened = ResponseCache(tmp_path / "responses.sqlite")
    yield opened
    opened.close()


def test_fixes_come_from_the_configured_model_and_are_cached(openai_emulator: Any, tmp_path: Path,
                                                             cache: ResponseCache) -> None:
    task = next(t for t in load_tasks() if t.kind == "syntax")
    openai_emulator.script(then=openai_emulator.reply(
        text=f"The LIMIT takes a number.\n\n```sql\n{task.references[0]};\n```"))
    predictor = make_predictor("llm:fixer", model_config=write_config(tmp_path, openai_emulator.base_url),
                               cache=cache)
    assert isinstance(predictor, LLMFixer)
    with DemoBackends() as backends:
        (scored,) = evaluate([task], predictor, backends)
    assert scored.prediction == task.references[0]
    assert scored.scores["exact_match"] and scored.scores["execution_match"]
    # what the model was asked: the buggy script, the engine's error and the dialect
    (request,) = openai_emulator.requests
    assert request.body["model"] == "emulated-fixer" and request.body["temperature"] == 0
    (message,) = request.body["messages"]
    assert task.buggy_sql in message["content"] and str(task.error_message) in message["content"]
    assert f"This {task.dialect} SQL query is buggy" in message["content"]
    # asked again: the response cache answers, nothing is sent, and the usage says so
    assert predictor(task) == task.references[0]
    assert len(openai_emulator.requests) == 1
    usage = predictor.usage()
    assert (usage["model"], usage["calls"], usage["cache_hits"]) == ("emulated-fixer", 1, 1)
    assert usage["completion_tokens"] > 0
    predictor.close()


def test_a_rejected_request_or_an_answer_without_sql_is_no_fix(openai_emulator: Any, tmp_path: Path,
                                                                cache: ResponseCache) -> None:
    tasks = load_tasks()[:2]
    openai_emulator.script(openai_emulator.reply(status=400),
                           openai_emulator.reply(text="I cannot tell what is wrong here."))
    predictor = make_predictor("llm:fixer", model_config=write_config(tmp_path, openai_emulator.base_url),
                               cache=cache)
    assert [predictor(task) for task in tasks] == [None, None]
    assert predictor.usage()["errors"] == 1  # type: ignore[attr-defined]


def test_an_endpoint_that_never_answers_stops_the_evaluation(openai_emulator: Any, tmp_path: Path,
                                                            cache: ResponseCache) -> None:
    openai_emulator.script(then=openai_emulator.reply(status=503))
    predictor = make_predictor("llm:fixer", model_config=write_config(tmp_path, openai_emulator.base_url),
                               cache=cache)
    with pytest.raises(LLMUnavailableError):
        evaluate(load_tasks()[:1], predictor)


def test_model_config_problems_are_reported_before_any_request(openai_emulator: Any,
                                                               tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    config = write_config(tmp_path, openai_emulator.base_url)
    with pytest.raises(ConfigError, match=r"unknown model 'other': .*polysql.toml declares fixer"):
        make_predictor("llm:other", model_config=config)
    with pytest.raises(ConfigError, match="'llm:' needs a model name"):
        make_predictor("llm:", model_config=config)
    monkeypatch.delenv("POLYSQL_TEST_KEY", raising=False)
    keyed = write_config(tmp_path, openai_emulator.base_url, api_key_env="POLYSQL_TEST_KEY")
    with pytest.raises(ConfigError, match=r"\$POLYSQL_TEST_KEY, which is not set"):
        make_predictor("llm:fixer", model_config=keyed)
    with pytest.raises(ConfigError, match="model config file .* not found"):
        make_predictor("llm:fixer", model_config=tmp_path / "missing.toml")
    assert openai_emulator.requests == []
