"""LLMClient against a real HTTP endpoint on 127.0.0.1.

The endpoint (``openai_emulator`` in conftest.py) is an emulator of a remote OpenAI-compatible
service, scripted per test to fail with 429/5xx, stall past the timeout, trickle its answer or
answer at once. Every request really crosses a socket through the ``openai`` package; the tests
measure what the emulator saw (how many requests, when, how many at once).
"""

from __future__ import annotations

import socket
import statistics
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from polysql.core.errors import LLMError
from polysql.llm.client import Completion, LLMClient, ModelConfig, ResponseCache

pytest.importorskip("openai", reason="the client tests need the openai package (polysql[llm])")


def config_for(base_url: str, **overrides: Any) -> ModelConfig:
    settings: dict[str, Any] = {"max_retries": 3, "timeout": 5.0, "backoff_base": 0.05,
                                "params": {"temperature": 0}}
    settings.update(overrides)
    return ModelConfig(name="emulated", base_url=base_url, model="emulated-model-1", **settings)


def ask(text: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": "You write SQL."}, {"role": "user", "content": text}]


def gaps(endpoint: Any) -> list[float]:
    arrivals = sorted(seen.arrived for seen in endpoint.requests)
    return [later - earlier for earlier, later in zip(arrivals, arrivals[1:], strict=False)]


def run_in_threads(client: LLMClient, count: int) -> list[Completion]:
    results: list[Completion | None] = [None] * count
    errors: list[BaseException] = []

    def work(index: int) -> None:
        try:
            results[index] = client.complete(ask(f"question number {index}"))
        except BaseException as exc:  # surfaced below, with the thread's own traceback
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not errors, errors
    assert all(result is not None for result in results)
    return [result for result in results if result is not None]


# --- retries and backoff ---------------------------------------------------------------------------


def test_429_and_500_are_retried_with_growing_backoff(openai_emulator: Any) -> None:
    openai_emulator.script(openai_emulator.reply(status=429), openai_emulator.reply(status=500),
                           then=openai_emulator.reply(text="SELECT 42"))
    client = LLMClient(config_for(openai_emulator.base_url, backoff_base=0.3), cache=None)

    completion = client.complete(ask("how many?"))

    assert completion.text == "SELECT 42"
    assert completion.cached is False
    assert len(openai_emulator.requests) == 3
    first, second = gaps(openai_emulator)
    # Jittered exponential backoff: the n-th wait lies in [base*2^n / 2, base*2^n].
    assert 0.15 <= first < 0.3 + 0.25
    assert 0.3 <= second < 0.6 + 0.25
    stats = client.stats
    assert (stats.calls, stats.requests, stats.retries, stats.errors) == (1, 3, 2, 0)


def test_retry_after_header_sets_the_wait(openai_emulator: Any) -> None:
    openai_emulator.script(openai_emulator.reply(status=429, headers={"Retry-After": "1"}),
                           then=openai_emulator.reply())
    client = LLMClient(config_for(openai_emulator.base_url, backoff_base=0.01), cache=None)

    client.complete(ask("q"))

    assert len(openai_emulator.requests) == 2
    assert gaps(openai_emulator)[0] >= 1.0


def test_retry_after_ms_header_sets_the_wait(openai_emulator: Any) -> None:
    openai_emulator.script(openai_emulator.reply(status=503, headers={"retry-after-ms": "700"}),
                           then=openai_emulator.reply())
    client = LLMClient(config_for(openai_emulator.base_url, backoff_base=0.01), cache=None)

    client.complete(ask("q"))

    assert 0.7 <= gaps(openai_emulator)[0] < 1.5


def test_gives_up_after_max_retries_with_a_clear_error(openai_emulator: Any) -> None:
    openai_emulator.script(then=openai_emulator.reply(status=503))
    client = LLMClient(config_for(openai_emulator.base_url, max_retries=2), cache=None)

    with pytest.raises(LLMError, match=r"'emulated' at http://127\.0\.0\.1:\d+/v1 failed after "
                                       r"3 attempt\(s\): HTTP 503"):
        client.complete(ask("q"))

    assert len(openai_emulator.requests) == 3
    stats = client.stats
    assert (stats.calls, stats.errors, stats.requests) == (0, 1, 3)


@pytest.mark.parametrize(("status", "message"), [
    (401, r"refused the request \(HTTP 401.*check the API key in \$EMULATED_KEY"),
    (404, r"HTTP 404 .*check base_url .* model id 'emulated-model-1'"),
    (400, r"rejected the request \(HTTP 400"),
])
def test_client_errors_are_not_retried(openai_emulator: Any, monkeypatch: pytest.MonkeyPatch,
                                       status: int, message: str) -> None:
    monkeypatch.setenv("EMULATED_KEY", "k")
    openai_emulator.script(then=openai_emulator.reply(status=status))
    client = LLMClient(config_for(openai_emulator.base_url, api_key_env="EMULATED_KEY"), cache=None)

    with pytest.raises(LLMError, match=message):
        client.complete(ask("q"))

    assert len(openai_emulator.requests) == 1


def test_connection_refused_is_retried_then_reported() -> None:
    with socket.socket() as sock:  # a port nobody listens on once the socket is closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = LLMClient(config_for(f"http://127.0.0.1:{port}/v1", max_retries=1), cache=None)

    with pytest.raises(LLMError, match=r"failed after 2 attempt\(s\): cannot connect"):
        client.complete(ask("q"))

    assert client.stats.requests == 2


# --- the hard timeout ------------------------------------------------------------------------------


def test_silent_server_hits_the_timeout_and_is_retried(openai_emulator: Any) -> None:
    openai_emulator.script(then=openai_emulator.reply(delay=10))
    client = LLMClient(config_for(openai_emulator.base_url, timeout=0.5, max_retries=1), cache=None)

    started = time.monotonic()
    with pytest.raises(LLMError, match=r"failed after 2 attempt\(s\).*(timed out|timeout)"):
        client.complete(ask("q"))

    assert time.monotonic() - started < 3.0  # two 0.5 s attempts and a short backoff, not 20 s
    assert len(openai_emulator.requests) == 2


def test_trickling_server_is_cut_off_at_the_timeout(openai_emulator: Any) -> None:
    # Every byte arrives well within the read timeout, so only a whole-request deadline stops it.
    openai_emulator.script(then=openai_emulator.reply(trickle=6))
    client = LLMClient(config_for(openai_emulator.base_url, timeout=1.0, max_retries=0), cache=None)

    started = time.monotonic()
    with pytest.raises(LLMError, match=r"no complete answer within the 1s timeout"):
        client.complete(ask("q"))

    assert time.monotonic() - started < 2.0


# --- concurrency and rate limits -------------------------------------------------------------------


@pytest.mark.parametrize("limit", [1, 2, 3])
def test_requests_in_flight_never_exceed_max_concurrency(openai_emulator: Any, limit: int) -> None:
    openai_emulator.script(then=openai_emulator.reply(delay=0.3))
    client = LLMClient(config_for(openai_emulator.base_url, max_concurrency=limit), cache=None)

    started = time.monotonic()
    run_in_threads(client, 6)
    took = time.monotonic() - started

    assert openai_emulator.max_in_flight == limit  # reached, never exceeded
    assert took >= 0.3 * (6 // limit) - 0.05
    stats = client.stats
    assert stats.calls == 6
    # Wall time counts the time anything was in flight once, however many were in flight.
    assert 0.3 * (6 // limit) - 0.05 <= stats.wall_time <= took + 0.05


def test_requests_per_minute_spaces_request_starts(openai_emulator: Any) -> None:
    interval = 0.2  # seconds between request starts: 300 per minute
    client = LLMClient(config_for(openai_emulator.base_url, requests_per_minute=60 / interval,
                                  max_concurrency=5), cache=None)

    client.complete(ask("warm-up"))  # the first request pays one-off setup costs
    run_in_threads(client, 5)

    assert len(openai_emulator.requests) == 6
    spacing = gaps(openai_emulator)[1:]  # between the five concurrent requests
    # The limiter gives the five starts exactly one interval apart; the emulator sees each
    # arrival some time after its start, and on a busy machine that lag varies by tens of
    # milliseconds, moving single gaps either way (so no gap is held to the interval). The lags
    # cannot bunch the five together, though: without the limit (max_concurrency lets all five
    # go at once) they arrive within a few ms, so the total and the typical gap are near 0.
    assert sum(spacing) >= 0.6 * 4 * interval
    assert statistics.median(spacing) >= 0.5 * interval


# --- usage accounting ------------------------------------------------------------------------------


def test_tokens_and_answers_are_recorded_per_call(openai_emulator: Any) -> None:
    answer = "SELECT name FROM singer WHERE age > 30"
    openai_emulator.script(then=openai_emulator.reply(text=answer, finish_reason="length"))
    client = LLMClient(config_for(openai_emulator.base_url), cache=None)
    questions = ["who is older than thirty?", "list the singers", "names please"]

    completions = [client.complete(ask(q)) for q in questions]

    # The emulator counts whitespace-separated words as tokens.
    expected_prompts = [len("You write SQL.".split()) + len(q.split()) for q in questions]
    assert [c.prompt_tokens for c in completions] == expected_prompts
    assert {c.completion_tokens for c in completions} == {len(answer.split())}
    assert {(c.text, c.model, c.finish_reason) for c in completions} == {
        (answer, "emulated-model-1", "length")}
    assert all(c.elapsed > 0 for c in completions)
    stats = client.stats.to_dict()
    assert stats["calls"] == 3
    assert stats["prompt_tokens"] == sum(expected_prompts)
    assert stats["completion_tokens"] == 3 * len(answer.split())
    assert stats["cache_hits"] == 0


def test_request_carries_model_params_and_api_key(openai_emulator: Any,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMULATED_KEY", "sk-test-123")
    config = config_for(openai_emulator.base_url, api_key_env="EMULATED_KEY",
                        params={"temperature": 0.2, "max_tokens": 64, "seed": 11})
    LLMClient(config, cache=None).complete(ask("q"))

    seen = openai_emulator.requests[0]
    assert seen.path == "/v1/chat/completions"
    assert seen.authorization == "Bearer sk-test-123"
    assert seen.body["model"] == "emulated-model-1"
    assert seen.body["messages"] == ask("q")
    assert (seen.body["temperature"], seen.body["max_tokens"], seen.body["seed"]) == (0.2, 64, 11)


def test_missing_api_key_variable_is_named_when_the_model_is_used(
        openai_emulator: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("POLYSQL_TEST_UNSET_KEY", raising=False)
    config = config_for(openai_emulator.base_url, api_key_env="POLYSQL_TEST_UNSET_KEY")
    client = LLMClient(config, cache=None)  # constructing is fine: the key is needed to send

    with pytest.raises(LLMError, match=r"'emulated' needs an API key in the environment "
                                       r"variable \$POLYSQL_TEST_UNSET_KEY"):
        client.complete(ask("q"))
    assert openai_emulator.requests == []


# --- the response cache ----------------------------------------------------------------------------


def test_second_identical_call_is_a_cache_hit_with_no_request(openai_emulator: Any,
                                                              tmp_path: Path) -> None:
    openai_emulator.script(then=openai_emulator.reply(text="SELECT 7"))
    cache = ResponseCache(tmp_path / "responses.sqlite")
    client = LLMClient(config_for(openai_emulator.base_url), cache=cache)

    first = client.complete(ask("q"))
    second = client.complete(ask("q"))

    assert len(openai_emulator.requests) == 1
    assert (first.cached, second.cached) == (False, True)
    assert (second.text, second.prompt_tokens, second.completion_tokens, second.model) == (
        first.text, first.prompt_tokens, first.completion_tokens, first.model)
    stats = client.stats
    assert (stats.calls, stats.cache_hits, stats.requests) == (1, 1, 1)
    assert stats.prompt_tokens == first.prompt_tokens  # a hit spends nothing


def test_a_rerun_with_a_fresh_client_costs_nothing(openai_emulator: Any, tmp_path: Path) -> None:
    path = tmp_path / "responses.sqlite"
    config = config_for(openai_emulator.base_url)
    LLMClient(config, cache=ResponseCache(path)).complete(ask("q"))
    assert len(openai_emulator.requests) == 1

    rerun = LLMClient(config, cache=ResponseCache(path))
    assert rerun.complete(ask("q")).cached is True
    assert len(openai_emulator.requests) == 1
    assert rerun.stats.calls == 0 and rerun.stats.cache_hits == 1


@pytest.mark.parametrize("change", [
    {"params": {"temperature": 0.7}},
    {"model": "another-model"},
])
def test_changed_model_or_params_miss_the_cache(openai_emulator: Any, tmp_path: Path,
                                                change: dict[str, Any]) -> None:
    cache = ResponseCache(tmp_path / "responses.sqlite")
    config = config_for(openai_emulator.base_url)
    LLMClient(config, cache=cache).complete(ask("q"))

    LLMClient(replace(config, **change), cache=cache).complete(ask("q"))
    LLMClient(config, cache=cache).complete(ask("a different question"))

    assert len(openai_emulator.requests) == 3
    assert len(cache) == 3


def test_cache_ignores_settings_that_do_not_change_the_answer(openai_emulator: Any,
                                                              tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "responses.sqlite")
    config = config_for(openai_emulator.base_url)
    LLMClient(config, cache=cache).complete(ask("q"))

    tuned = replace(config, timeout=9.0, max_concurrency=1, max_retries=0, name="renamed")
    assert LLMClient(tuned, cache=cache).complete(ask("q")).cached is True
    assert len(openai_emulator.requests) == 1


def test_cached_answers_need_no_api_key(openai_emulator: Any, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "responses.sqlite"
    config = config_for(openai_emulator.base_url, api_key_env="POLYSQL_TEST_KEY")
    monkeypatch.setenv("POLYSQL_TEST_KEY", "secret")
    LLMClient(config, cache=ResponseCache(path)).complete(ask("q"))
    monkeypatch.delenv("POLYSQL_TEST_KEY")

    client = LLMClient(config, cache=ResponseCache(path))
    assert client.complete(ask("q")).cached is True
    with pytest.raises(LLMError, match=r"\$POLYSQL_TEST_KEY"):
        client.complete(ask("not asked before"))
    assert len(openai_emulator.requests) == 1


def test_failures_are_not_cached(openai_emulator: Any, tmp_path: Path) -> None:
    openai_emulator.script(openai_emulator.reply(status=500), then=openai_emulator.reply())
    cache = ResponseCache(tmp_path / "responses.sqlite")
    client = LLMClient(config_for(openai_emulator.base_url, max_retries=0), cache=cache)

    with pytest.raises(LLMError):
        client.complete(ask("q"))
    assert len(cache) == 0
    assert client.complete(ask("q")).cached is False
    assert len(openai_emulator.requests) == 2
