"""Model-backed predictors: ask a model for each (question, engine) through its chat API.

For every question and target engine, :class:`LLMPredictor` renders a prompt showing the schema as
that engine holds it (see :mod:`polysql.llm.prompting`), sends it through :class:`polysql.llm.client.LLMClient`
(retries, rate limits, response cache), and takes the SQL out of the answer with
:func:`polysql.llm.extract.extract_sql`. Anything that keeps a model from producing a query (an
endpoint that keeps failing, an empty or unusable answer) becomes a ``generation_failure`` with
its reason; it is recorded like every other outcome and never stops a sweep.

Requests run concurrently: :meth:`LLMPredictor.submit` hands a request to a thread pool sized by
the model's ``max_concurrency``, so a sweep can queue every request up front and execute each
prediction the moment it is ready.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from polysql.core.digest import content_digest
from polysql.core.errors import ConfigError, LLMError, LLMUnavailableError
from polysql.core.predictor import Prediction, Predictor
from polysql.core.predictor import TargetEngine as EngineInfo
from polysql.datasets.base import Question
from polysql.llm.client import LLMClient, ModelConfig, ResponseCache, load_model_configs
from polysql.llm.extract import extract_sql
from polysql.llm.prompting import PromptBuilder, PromptSettings

DEFAULT_CONFIG = Path("polysql.toml")
GENERATION_FAILURE = "generation_failure"
# After this many requests in a row got no answer (each after all its retries), the endpoint is
# taken to be down: the predictor stops asking and leaves the rest of its work pending, instead of
# spending retries and backoff on every remaining question.
DOWN_AFTER = 3


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


@dataclass
class LLMOptions:
    """What model predictors of one sweep share: the config file, prompt settings and the
    response cache (opened once, on first need, unless ``use_cache`` is off)."""

    config_path: Path | None = None
    prompts: PromptSettings = field(default_factory=PromptSettings)
    use_cache: bool = True
    _configs: dict[str, ModelConfig] | None = field(default=None, init=False, repr=False)
    _cache: ResponseCache | None = field(default=None, init=False, repr=False)
    _builder: PromptBuilder | None = field(default=None, init=False, repr=False)

    @property
    def path(self) -> Path:
        return Path(self.config_path) if self.config_path else Path.cwd() / DEFAULT_CONFIG

    def configs(self) -> dict[str, ModelConfig]:
        if self._configs is None:
            self._configs = load_model_configs(self.path)
        return self._configs

    def config(self, name: str) -> ModelConfig:
        configs = self.configs()
        if name not in configs:
            declared = ", ".join(sorted(configs)) or "no models"
            raise ConfigError(
                f"unknown model {name!r}: {self.path.resolve()} declares {declared}; add a "
                f"[models.{name}] table there or pick one of those (--config selects another file)"
            )
        config = configs[name]
        # Checked before any work starts: without the key every request would fail the same way
        # and the sweep would record nothing but generation failures.
        if config.api_key_env and not os.environ.get(config.api_key_env):
            raise ConfigError(
                f"model {name!r} ({self.path}) reads its API key from the environment variable "
                f"${config.api_key_env}, which is not set; export it before the sweep"
            )
        return config

    def builder(self) -> PromptBuilder:
        if self._builder is None:
            self._builder = PromptBuilder(self.prompts)
        return self._builder

    def cache(self) -> ResponseCache | None:
        if self.use_cache and self._cache is None:
            self._cache = ResponseCache()
        return self._cache

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()
            self._cache = None


def llm_predictor(name: str, options: LLMOptions | None = None) -> LLMPredictor:
    """The predictor for model ``name`` of the config file (``make_predictor("llm:NAME")``)."""
    if not name:
        raise ConfigError("'llm:' needs a model name from polysql.toml, e.g. 'llm:gpt4o'")
    options = options or LLMOptions()
    return LLMPredictor(options.config(name), prompts=options.builder(), cache=options.cache())


class LLMPredictor(Predictor):
    """SQL from a model behind an OpenAI-compatible endpoint, one request per (question, engine)."""

    needs_schema = True
    concurrent = True

    def __init__(self, config: ModelConfig, *, prompts: PromptBuilder | PromptSettings | None = None,
                 cache: ResponseCache | None = None, client: LLMClient | None = None,
                 name: str | None = None) -> None:
        self.config = config
        self.name = name or f"llm:{config.name}"
        self.prompts = prompts if isinstance(prompts, PromptBuilder) else PromptBuilder(prompts)
        self.sample_rows = self.prompts.settings.sample_rows
        self.client = client or LLMClient(config, cache=cache)
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()
        self._health_lock = threading.Lock()
        self._failures_in_a_row = 0
        self.down: str | None = None  # why the endpoint is taken to be down, once it is

    # -- reporting ------------------------------------------------------------------------------
    def settings(self) -> dict[str, Any]:
        """Everything that changes what this predictor answers (a resumed run must match it)."""
        return {"model": self.config.model, "base_url": self.config.base_url,
                "params": dict(self.config.params), **self.prompts.describe()}

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "model": self.config.name, "settings": self.settings(),
                "max_concurrency": self.config.max_concurrency,
                "requests_per_minute": self.config.requests_per_minute}

    def input_digest(self, question: Question, engine: EngineInfo) -> str:
        """What the prompt and the request are made of, without asking: model and parameters,
        prompt settings and the template's text, the question and its evidence, and the engine
        it is asked for (the schema shown comes from the database, digested with the record)."""
        return content_digest("llm", self.settings(), self.prompts.template_digest(),
                              question.question, question.evidence, question.db_id,
                              engine.name, engine.dialect)

    def usage(self) -> dict[str, Any]:
        """Calls, cache hits, tokens, errors and wall time (seconds with a request in flight)
        of this predictor so far, plus HTTP requests and retries."""
        return {"model": self.config.model, **self.client.stats.to_dict()}

    # -- predicting -----------------------------------------------------------------------------
    def predict(self, question: Question, engine: EngineInfo) -> Prediction:
        if engine.schema is None:
            raise ConfigError(f"{self.name} needs the schema of {question.db_id!r} on {engine.name}: "
                              "pass EngineInfo(schema=...) (a sweep fills it in)")
        prompt = self.prompts.render(question=question.question, evidence=question.evidence,
                                     schema=engine.schema, dialect=engine.dialect,
                                     engine_version=engine.version)
        meta: dict[str, Any] = {"model": self.config.name, "model_id": self.config.model,
                                "prompt_level": self.prompts.settings.level,
                                "cot": self.prompts.settings.cot, **prompt.meta()}
        if self.down is not None and not self._cached(prompt.messages):
            return Prediction(sql=None, meta=meta, unavailable=self.down)
        try:
            completion = self.client.complete(prompt.messages)
        except LLMUnavailableError as exc:
            reason = _one_line(exc)
            self._failed(reason)
            return Prediction(sql=None, meta=meta, unavailable=reason)
        except LLMError as exc:  # the endpoint rejected this request: its answer is a failure
            self._answered()
            reason = _one_line(exc)
            meta["error"] = reason
            return Prediction(sql=None, failure=f"{GENERATION_FAILURE}: llm_error: {reason}", meta=meta)
        self._answered()
        meta["response"] = completion.text
        meta["cached"] = completion.cached
        meta["usage"] = {"prompt_tokens": completion.prompt_tokens,
                         "completion_tokens": completion.completion_tokens,
                         "elapsed": round(completion.elapsed, 4),
                         "finish_reason": completion.finish_reason,
                         "served_by": completion.model}
        # An answer stopped at the token limit may have lost the end of its query.
        extraction = extract_sql(completion.text, dialect=engine.dialect,
                                 truncated=completion.finish_reason == "length")
        meta["extraction"] = {"method": extraction.method, "candidates": extraction.candidates,
                              "choice_made": extraction.choice_made, "failure": extraction.failure}
        if extraction.sql is None:
            return Prediction(sql=None, failure=f"{GENERATION_FAILURE}: {extraction.failure}", meta=meta)
        return Prediction(sql=extraction.sql, meta=meta)

    # -- endpoint health ------------------------------------------------------------------------
    def _cached(self, messages: list[dict[str, str]]) -> bool:
        cache = self.client.cache
        return cache is not None and cache.get(self.client.cache_key(messages)) is not None

    def _failed(self, reason: str) -> None:
        with self._health_lock:
            self._failures_in_a_row += 1
            if self._failures_in_a_row >= DOWN_AFTER and self.down is None:
                self.down = (f"{reason} ({self._failures_in_a_row} requests in a row got no "
                             "answer; the rest were not sent)")

    def _answered(self) -> None:
        with self._health_lock:
            self._failures_in_a_row = 0

    def submit(self, question: Question, engine: EngineInfo) -> Future[Prediction]:
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=max(1, self.config.max_concurrency),
                                                thread_name_prefix=f"llm-{self.config.name}")
            pool = self._pool
        return pool.submit(self.predict, question, engine)

    def close(self) -> None:
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            # Requests already sent finish on their own (bounded by the client's timeout);
            # queued ones are dropped, their work stays pending for a resumed run.
            pool.shutdown(wait=False, cancel_futures=True)
