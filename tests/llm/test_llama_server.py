"""LLMClient and extract_sql against a real model: llama.cpp's server running SmolLM2-135M.

The server comes from the session fixture ``llama_server`` (conftest.py). The model is tiny, so
what it writes is not judged, only that real answers come back with real token counts, go through
extraction without trouble, and are cached.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path

from polysql.llm.client import Completion, LLMClient, ModelConfig, ResponseCache
from polysql.llm.extract import extract_sql

SCHEMA = """CREATE TABLE singer (
  singer_id INTEGER PRIMARY KEY,
  name TEXT,
  country TEXT,
  age INTEGER
);"""


def sql_question(question: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": "You translate questions into SQLite SQL. Answer with one "
                                      "SQL query in a ```sql block."},
        {"role": "user", "content": f"{SCHEMA}\n\nQuestion: {question}"},
    ]


def assert_real(completion: Completion) -> None:
    assert completion.prompt_tokens > 0
    assert completion.completion_tokens > 0
    assert completion.finish_reason in ("stop", "length")
    extraction = extract_sql(completion.text, "sqlite")
    assert (extraction.sql is None) == (extraction.failure is not None)


def test_real_completion_comes_back_with_tokens_and_is_cached(
        llama_model_config: ModelConfig, tmp_path: Path) -> None:
    client = LLMClient(llama_model_config, cache=ResponseCache(tmp_path / "responses.sqlite"))
    messages = sql_question("How many singers are there?")

    first = client.complete(messages)
    second = client.complete(messages)

    assert_real(first)
    assert first.cached is False and second.cached is True
    assert (second.text, second.prompt_tokens, second.completion_tokens) == (
        first.text, first.prompt_tokens, first.completion_tokens)
    stats = client.stats
    assert (stats.calls, stats.cache_hits, stats.errors) == (1, 1, 0)
    assert stats.prompt_tokens == first.prompt_tokens > 0
    assert stats.completion_tokens == first.completion_tokens > 0
    assert stats.wall_time > 0
    client.close()


def test_concurrent_real_completions(llama_model_config: ModelConfig) -> None:
    client = LLMClient(llama_model_config, cache=None)
    questions = ["List the names of all singers.", "What is the average age of singers?",
                 "Which countries have more than two singers?"]
    results: dict[int, Completion] = {}
    errors: list[BaseException] = []

    def work(index: int) -> None:
        try:
            results[index] = client.complete(sql_question(questions[index]))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(questions))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)

    assert not errors, errors
    assert sorted(results) == [0, 1, 2]
    for completion in results.values():
        assert_real(completion)
    stats = client.stats
    assert stats.calls == 3
    assert stats.prompt_tokens == sum(c.prompt_tokens for c in results.values())
    client.close()


def test_max_tokens_cuts_the_answer_short(llama_model_config: ModelConfig) -> None:
    short = replace(llama_model_config, params={**llama_model_config.params, "max_tokens": 4})
    client = LLMClient(short, cache=None)

    completion = client.complete(sql_question("List every singer with their country and age, "
                                              "oldest first, and explain the query in detail."))

    assert 0 < completion.completion_tokens <= 4
    assert completion.finish_reason == "length"
    extraction = extract_sql(completion.text, "sqlite")  # a cut-off answer must not trip it
    assert (extraction.sql is None) == (extraction.failure is not None)
    client.close()
