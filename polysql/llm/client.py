"""One client for every OpenAI-compatible chat endpoint: hosted APIs, vLLM, Ollama, llama.cpp.

Models are declared in ``polysql.toml``::

    [models.smol]
    base_url = "http://127.0.0.1:8080/v1"
    model = "smollm2-135m-instruct"      # the id the endpoint knows the model by
    api_key_env = "OPENAI_API_KEY"       # optional: local servers usually need no key
    max_concurrency = 4                  # requests in flight at once
    requests_per_minute = 60             # optional client-side rate limit
    timeout = 60                         # seconds, hard limit per request
    max_retries = 5                      # after the first attempt
    [models.smol.params]                 # sent with every request
    temperature = 0
    max_tokens = 512

:class:`LLMClient` is shared by every thread that asks the same model. It keeps at most
``max_concurrency`` requests in flight, spaces request starts to honour ``requests_per_minute``,
retries 429, 5xx, timeouts and connection failures with exponential backoff and jitter (or the
server's ``Retry-After``), and stops each attempt at ``timeout`` even if the server keeps
trickling bytes. When retries run out it raises :class:`~polysql.core.errors.LLMUnavailableError` (no
answer was obtained: the work is not the model's to be scored); a request the endpoint rejects for
its content raises :class:`~polysql.core.errors.LLMError`. It never hangs.
Answers go through a :class:`~polysql.llm.cache.ResponseCache`, so asking again costs nothing.

The ``openai`` package is imported only when a request is actually sent (``pip install
'polysql[llm]'``); configs, the cache and cached answers work without it.
"""

from __future__ import annotations

import os
import random
import threading
import time
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from polysql.core.errors import ConfigError, LLMError, LLMUnavailableError
from polysql.llm.cache import CachedResponse, ResponseCache, response_key

__all__ = ["Completion", "LLMClient", "ModelConfig", "ResponseCache", "UsageStats",
           "load_model_configs", "ready_model_config"]

DEFAULT_CONFIG_FILE = "polysql.toml"
RETRY_AFTER_CAP = 120.0  # never sleep longer than this on a server's say-so


@dataclass(frozen=True)
class ModelConfig:
    """One ``[models.NAME]`` table of ``polysql.toml``."""

    name: str
    base_url: str
    model: str
    api_key_env: str | None = None
    params: dict[str, Any] = field(default_factory=dict)  # temperature, top_p, max_tokens, seed...
    max_concurrency: int = 4
    requests_per_minute: float | None = None
    timeout: float = 60.0
    max_retries: int = 5
    backoff_base: float = 1.0  # first retry waits about this long, doubling each time
    backoff_max: float = 30.0

    def to_dict(self) -> dict[str, Any]:
        """The config as recorded with a run (the key's variable name, never its value)."""
        return asdict(self)

    def __hash__(self) -> int:  # params is a dict, so the generated hash would fail
        return hash((self.name, self.base_url, self.model))


@dataclass
class Completion:
    text: str
    prompt_tokens: int
    completion_tokens: int
    cached: bool  # served from the response cache: no request was sent, nothing was spent
    elapsed: float  # seconds this call took (for a cached answer: the original request's time)
    model: str  # the model id the endpoint reported
    finish_reason: str | None  # "stop", "length" (hit max_tokens), ...


@dataclass
class UsageStats:
    """What a client spent. Tokens count only answers that came from the endpoint, not the cache."""

    calls: int = 0  # completions answered by the endpoint
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    errors: int = 0  # completions that failed after all retries
    wall_time: float = 0.0  # seconds during which at least one request was in flight
    requests: int = 0  # HTTP requests sent, retries included
    retries: int = 0

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["wall_time"] = round(self.wall_time, 3)
        return out


# --- configuration ---------------------------------------------------------------------------------

_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "base_url": (str,), "model": (str,), "api_key_env": (str,), "params": (dict,),
    "max_concurrency": (int,), "requests_per_minute": (int, float), "timeout": (int, float),
    "max_retries": (int,), "backoff_base": (int, float), "backoff_max": (int, float),
}
_KIND = {(str,): "a string", (dict,): "a table", (int,): "an integer", (int, float): "a number"}
_REQUIRED = ("base_url", "model")


def load_model_configs(path: str | Path | None = None) -> dict[str, ModelConfig]:
    """The ``[models.NAME]`` tables of ``path`` (default ``./polysql.toml``), by name.

    Any problem raises :class:`ConfigError` naming the file, the model and the field.
    """
    file = Path(path) if path is not None else Path.cwd() / DEFAULT_CONFIG_FILE
    if not file.is_file():
        raise ConfigError(
            f"model config file {file} not found: create it with a [models.NAME] table "
            "(base_url, model, ...) or pass --config PATH")
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read model config file {file}: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{file} is not valid TOML: {exc}") from exc
    models = data.get("models")
    if not isinstance(models, dict) or not models:
        raise ConfigError(f"{file} declares no models: add a [models.NAME] table with base_url "
                          "and model")
    configs: dict[str, ModelConfig] = {}
    for name, table in models.items():
        where = f"{file}: [models.{name}]"
        if not isinstance(table, dict):
            raise ConfigError(f"{where} must be a table, got {type(table).__name__}")
        configs[name] = _model_config(name, table, where)
    return configs


def ready_model_config(name: str, path: str | Path | None = None) -> ModelConfig:
    """Model ``name`` of the config file ``path`` (default ``./polysql.toml``), ready to ask.

    Checked before any work starts: a model the file does not declare, or whose API key variable
    is not set (every request would fail the same way), is a :class:`ConfigError`.
    """
    file = Path(path) if path is not None else Path.cwd() / DEFAULT_CONFIG_FILE
    configs = load_model_configs(file)
    if name not in configs:
        declared = ", ".join(sorted(configs)) or "no models"
        raise ConfigError(f"unknown model {name!r}: {file.resolve()} declares {declared}; add a "
                          f"[models.{name}] table there or pick one of those (--config selects "
                          "another file)")
    config = configs[name]
    if config.api_key_env and not os.environ.get(config.api_key_env):
        raise ConfigError(f"model {name!r} ({file}) reads its API key from the environment "
                          f"variable ${config.api_key_env}, which is not set; export it first")
    return config


def _model_config(name: str, table: dict[str, Any], where: str) -> ModelConfig:
    unknown = sorted(set(table) - set(_FIELD_TYPES))
    if unknown:
        raise ConfigError(f"{where}: unknown field {unknown[0]!r}; allowed fields: "
                          f"{', '.join(_FIELD_TYPES)}")
    for required in _REQUIRED:
        if required not in table:
            raise ConfigError(f"{where}: missing required field {required!r}")
    for key, value in table.items():
        allowed = _FIELD_TYPES[key]
        if isinstance(value, bool) or not isinstance(value, allowed):
            raise ConfigError(f"{where}: field {key!r} must be {_KIND[allowed]}, got {value!r}")
    config = ModelConfig(name=name, **{k: float(v) if _FIELD_TYPES[k] == (int, float) else v
                                       for k, v in table.items()})
    _check_values(config, where)
    return config


def _check_values(config: ModelConfig, where: str) -> None:
    if not config.base_url.startswith(("http://", "https://")):
        raise ConfigError(f"{where}: field 'base_url' must start with http:// or https://, got "
                          f"{config.base_url!r} (e.g. http://127.0.0.1:8080/v1)")
    if not config.model.strip():
        raise ConfigError(f"{where}: field 'model' is empty")
    if config.api_key_env is not None and not config.api_key_env.strip():
        raise ConfigError(f"{where}: field 'api_key_env' is empty; name an environment variable "
                          "or leave the field out")
    if config.max_concurrency < 1:
        raise ConfigError(f"{where}: field 'max_concurrency' must be at least 1")
    if config.requests_per_minute is not None and config.requests_per_minute <= 0:
        raise ConfigError(f"{where}: field 'requests_per_minute' must be positive (leave it out "
                          "for no limit)")
    if config.timeout <= 0:
        raise ConfigError(f"{where}: field 'timeout' must be positive seconds")
    if config.max_retries < 0:
        raise ConfigError(f"{where}: field 'max_retries' must be 0 or more")
    if config.backoff_base < 0 or config.backoff_max < 0:
        raise ConfigError(f"{where}: backoff fields must not be negative")
    if "messages" in config.params or "model" in config.params or "stream" in config.params:
        raise ConfigError(f"{where}: [params] may not set 'model', 'messages' or 'stream'; they "
                          "are set by polysql")


# --- the client ------------------------------------------------------------------------------------


class _Retryable(Exception):
    """An attempt failed in a way worth retrying."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class _RateLimiter:
    """Spaces request starts at least ``60 / requests_per_minute`` seconds apart, across threads."""

    def __init__(self, requests_per_minute: float | None) -> None:
        self.interval = 60.0 / requests_per_minute if requests_per_minute else 0.0
        self._lock = threading.Lock()
        self._next = 0.0

    def wait(self) -> None:
        if not self.interval:
            return
        with self._lock:  # reserve a start slot; sleeping happens outside the lock
            now = time.monotonic()
            start = max(now, self._next)
            self._next = start + self.interval
        if start > now:
            time.sleep(start - now)


class LLMClient:
    """Thread-safe chat-completion client for one configured model."""

    def __init__(self, config: ModelConfig, *, cache: ResponseCache | None) -> None:
        self.config = config
        self.cache = cache
        self._slots = threading.BoundedSemaphore(config.max_concurrency)
        self._rate = _RateLimiter(config.requests_per_minute)
        self._stats = UsageStats()
        self._stats_lock = threading.Lock()
        self._in_flight = 0
        self._busy_since = 0.0
        self._client: Any = None
        self._client_lock = threading.Lock()

    @property
    def stats(self) -> UsageStats:
        """A consistent snapshot of what this client has spent so far."""
        with self._stats_lock:
            snapshot = UsageStats(**asdict(self._stats))
            if self._in_flight:
                snapshot.wall_time += time.monotonic() - self._busy_since
        return snapshot

    def cache_key(self, messages: list[dict[str, str]],
                  extra: dict[str, Any] | None = None) -> str:
        return response_key(model=self.config.model, base_url=self.config.base_url,
                            params=self._request_params(extra), messages=messages)

    def complete(self, messages: list[dict[str, str]], *,
                 extra: dict[str, Any] | None = None) -> Completion:
        """The model's answer to ``messages``, from the cache when it has been asked before.

        ``extra`` adds request parameters for this call only (e.g. a ``response_format``); they
        override the config's params and are part of the cache key, like everything sent.
        """
        params = self._request_params(extra)
        cache = self.cache
        key = self.cache_key(messages, extra) if cache is not None else ""
        if cache is not None:
            hit = cache.get(key)
            if hit is not None:
                with self._stats_lock:
                    self._stats.cache_hits += 1
                return Completion(hit.text, hit.prompt_tokens, hit.completion_tokens, True,
                                  hit.elapsed, hit.model, hit.finish_reason)
        try:
            completion = self._request_with_retries(messages, params)
        except LLMError:
            with self._stats_lock:
                self._stats.errors += 1
            raise
        with self._stats_lock:
            self._stats.calls += 1
            self._stats.prompt_tokens += completion.prompt_tokens
            self._stats.completion_tokens += completion.completion_tokens
        if cache is not None:
            cache.put(key, CachedResponse(
                completion.text, completion.prompt_tokens, completion.completion_tokens,
                completion.finish_reason, completion.model, completion.elapsed))
        return completion

    def close(self) -> None:
        """Close the HTTP connections (the response cache belongs to the caller)."""
        with self._client_lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def _request_params(self, extra: dict[str, Any] | None) -> dict[str, Any]:
        """The parameters sent besides model and messages: the config's, then ``extra``'s."""
        if not extra:
            # Unchanged object, so keys of calls without extra stay what they always were.
            return self.config.params
        reserved = sorted({"model", "messages", "stream"} & set(extra))
        if reserved:
            raise ConfigError(f"extra request parameters may not set {reserved[0]!r}; it is set "
                              "by polysql")
        return {**self.config.params, **extra}

    # -- retries ---------------------------------------------------------------------------------

    def _request_with_retries(self, messages: list[dict[str, str]],
                              params: dict[str, Any]) -> Completion:
        client = self._openai_client()
        started = time.monotonic()
        attempts = self.config.max_retries + 1
        for attempt in range(attempts):
            if attempt:
                with self._stats_lock:
                    self._stats.retries += 1
            try:
                completion = self._attempt(client, messages, params)
            except _Retryable as exc:
                if attempt + 1 == attempts:
                    raise LLMUnavailableError(
                        f"model {self.config.name!r} at {self.config.base_url} failed after "
                        f"{attempts} attempt(s): {exc}") from exc
                time.sleep(self._backoff(attempt, exc.retry_after))
                continue
            completion.elapsed = time.monotonic() - started
            return completion
        raise AssertionError("unreachable: the loop returns or raises")

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), RETRY_AFTER_CAP)
        ceiling = min(self.config.backoff_max, self.config.backoff_base * 2 ** attempt)
        # Jitter keeps many threads that failed together from retrying together.
        return random.uniform(ceiling / 2, ceiling)

    # -- one attempt ------------------------------------------------------------------------------

    def _attempt(self, client: Any, messages: list[dict[str, str]],
                 params: dict[str, Any]) -> Completion:
        """One HTTP request, holding a concurrency slot, stopped at the hard timeout."""
        with self._slots:
            # Wait for the rate limit while holding the slot, so that a slot freed later cannot
            # let two requests start closer together than the limit allows.
            self._rate.wait()
            self._enter()
            try:
                return self._call_with_deadline(client, messages, params)
            finally:
                self._leave()

    def _call_with_deadline(self, client: Any, messages: list[dict[str, str]],
                            params: dict[str, Any]) -> Completion:
        # The HTTP library's timeout bounds each read, not the whole request: a server that
        # trickles bytes could hold a call forever. So the call runs in a daemon thread and the
        # caller waits at most ``timeout``; an abandoned thread ends on its own read timeout.
        outcome: dict[str, Any] = {}
        done = threading.Event()

        def run() -> None:
            try:
                outcome["value"] = self._send(client, messages, params)
            except BaseException as exc:  # handed to the waiting thread, re-raised there
                outcome["error"] = exc
            finally:
                done.set()

        worker = threading.Thread(target=run, name=f"llm-{self.config.name}", daemon=True)
        worker.start()
        if not done.wait(self.config.timeout):
            raise _Retryable(f"no complete answer within the {self.config.timeout:g}s timeout")
        if "error" in outcome:
            raise outcome["error"]
        return outcome["value"]

    def _send(self, client: Any, messages: list[dict[str, str]],
              params: dict[str, Any]) -> Completion:
        import openai

        with self._stats_lock:
            self._stats.requests += 1
        try:
            response = client.chat.completions.create(
                model=self.config.model, messages=messages, **params)
        except openai.APITimeoutError as exc:
            raise _Retryable(f"timed out after {self.config.timeout:g}s") from exc
        except openai.APIConnectionError as exc:
            raise _Retryable(f"cannot connect: {exc}") from exc
        except openai.APIStatusError as exc:
            raise self._status_error(exc) from exc
        except Exception as exc:  # e.g. a 200 answer that is not a chat completion
            # not an answer of the model: the endpoint does not speak the chat API
            raise LLMUnavailableError(
                f"model {self.config.name!r} at {self.config.base_url} sent an unusable answer: "
                f"{type(exc).__name__}: {_short(str(exc))}") from exc
        return self._completion(response)

    def _status_error(self, exc: Any) -> Exception:
        status = int(exc.status_code)
        detail = _short(str(getattr(exc, "message", "") or exc))
        if status == 429 or status >= 500 or status == 408:
            return _Retryable(f"HTTP {status}: {detail}", _retry_after(exc))
        where = f"model {self.config.name!r} at {self.config.base_url}"
        if status in (401, 403):
            hint = (f"check the API key in ${self.config.api_key_env}" if self.config.api_key_env
                    else "the endpoint wants an API key: set api_key_env in the model config")
            return LLMUnavailableError(
                f"{where} refused the request (HTTP {status}: {detail}); {hint}")
        if status == 404:
            return LLMUnavailableError(f"{where}: HTTP 404 ({detail}); check base_url (usually ends in /v1) "
                            f"and the model id {self.config.model!r}")
        return LLMError(f"{where} rejected the request (HTTP {status}: {detail})")

    def _completion(self, response: Any) -> Completion:
        choices = getattr(response, "choices", None) or []
        first = choices[0] if choices else None
        message = getattr(first, "message", None)
        usage = getattr(response, "usage", None)
        return Completion(
            text=(getattr(message, "content", None) or ""),
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            cached=False, elapsed=0.0,
            model=str(getattr(response, "model", None) or self.config.model),
            finish_reason=getattr(first, "finish_reason", None),
        )

    # -- bookkeeping -------------------------------------------------------------------------------

    def _enter(self) -> None:
        with self._stats_lock:
            if self._in_flight == 0:
                self._busy_since = time.monotonic()
            self._in_flight += 1

    def _leave(self) -> None:
        with self._stats_lock:
            self._in_flight -= 1
            if self._in_flight == 0:
                self._stats.wall_time += time.monotonic() - self._busy_since

    def _openai_client(self) -> Any:
        with self._client_lock:
            if self._client is None:
                self._client = self._make_openai_client()
            return self._client

    def _make_openai_client(self) -> Any:
        api_key = "unused"  # local servers ignore it, but the openai package wants a value
        if self.config.api_key_env:
            api_key = os.environ.get(self.config.api_key_env, "")
            if not api_key:
                raise LLMUnavailableError(
                    f"model {self.config.name!r} needs an API key in the environment variable "
                    f"${self.config.api_key_env}, which is not set")
        try:
            import openai
        except ImportError as exc:
            raise LLMUnavailableError("model-backed predictors need the openai package: "
                           "pip install 'polysql[llm]'") from exc
        # Retries are ours (they share the rate limit and are counted); the library's are off.
        return openai.OpenAI(base_url=self.config.base_url, api_key=api_key,
                             timeout=self.config.timeout, max_retries=0)


def _retry_after(exc: Any) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    try:
        if headers.get("retry-after-ms") is not None:  # OpenAI's finer-grained variant
            return float(headers["retry-after-ms"]) / 1000.0
        if headers.get("retry-after") is not None:
            return float(headers["retry-after"])
    except ValueError:
        pass  # an HTTP date or junk: fall back to our own backoff
    return None


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."

