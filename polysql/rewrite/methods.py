"""Rewrite methods: what the harness asks to rewrite a case's query, behind one calling convention.

A method is ``Callable[[RewriteCase, str], MethodAnswer]``: it gets a case and the schema text (the
CREATE TABLE statements of the case's database) and answers with exactly one
:class:`~polysql.analysis.rewrite.model.MethodAnswer` kind -- ``rewrite`` (with SQL),
``no_rewrite``, ``source_acceptance_failure`` or ``method_error``. Adapters never raise: whatever
goes wrong inside a method becomes a ``method_error`` with the reason, so one broken method or case
never stops a run.

Methods see the input query, the case's id, dialect and engine, and the schema -- never the
case's reference rewrites. Adapters pass user code a :class:`MethodRequest` holding just those, so
a method cannot peek even by accident.

Adapters
--------
``CommandMethod(argv, timeout)``
    Runs an external command per case. It reads one JSON object on stdin,
    ``{"id", "dialect", "engine", "sql", "schema"}``, and writes one JSON object on stdout,
    ``{"status": "rewrite" | "no_rewrite" | "source_acceptance_failure" | "error",
    "sql": "..." (for rewrite, else null or absent), "message": "..." (optional),
    "meta": {...} (optional)}``. Output that is not such an object, a non-zero exit or running past
    the timeout is a ``method_error`` saying which, with the tail of stderr.
``CallableMethod(fn)``
    Wraps ``fn(request: MethodRequest)`` returning a str (the rewrite), None (no rewrite) or a
    ``MethodAnswer``; an exception is a ``method_error``.
``LLMRewriteMethod(client, template)``
    Prompts a model (``polysql/llm/prompts/rewrite_v1.j2``) for an equivalent faster or simpler query
    in the case's dialect, or the word ``NO_REWRITE``.
Baselines
    ``identity`` (the input unchanged; the harness judges it a no-op), ``no-rewrite`` (always
    declines) and ``sqlglot-optimize`` (sqlglot's optimizer, with the schema when it covers the
    query's tables).

:func:`make_method` builds any of these from a spec string (the CLI's ``--method``).
"""

from __future__ import annotations

import importlib
import json
import math
import os
import re
import shlex
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from polysql.analysis.rewrite.model import MethodAnswer
from polysql.backends import catalog
from polysql.core.errors import ConfigError, LLMError, LLMUnavailableError
from polysql.core.sqlglot_quiet import quietly
from polysql.datasets.rewrite.cases import RewriteCase, split_statements
from polysql.llm.client import LLMClient, ModelConfig, ResponseCache, load_model_configs
from polysql.llm.extract import extract_sql
from polysql.llm.prompting import Prompt, TemplateSource, engine_label, find_template

__all__ = [
    "BASELINES",
    "DEFAULT_COMMAND_TIMEOUT",
    "NO_REWRITE",
    "CallableMethod",
    "CommandMethod",
    "LLMRewriteMethod",
    "Method",
    "MethodRequest",
    "identity_method",
    "make_method",
    "no_rewrite_method",
    "schema_mapping",
    "sqlglot_optimize_method",
]

Method = Callable[[RewriteCase, str], MethodAnswer]

NO_REWRITE = "NO_REWRITE"  # the word with which a model declines to rewrite
DEFAULT_COMMAND_TIMEOUT = 300.0  # seconds per case for an external command
BASELINES = ("identity", "no-rewrite", "sqlglot-optimize")
_STDERR_TAIL = 800  # characters of a failing command's stderr kept in the answer


@dataclass(frozen=True, slots=True)
class MethodRequest:
    """Everything a method may see of one case."""

    id: str
    dialect: str
    engine: str
    sql: str
    schema: str

    @classmethod
    def of(cls, case: RewriteCase, schema: str) -> MethodRequest:
        return cls(id=case.id, dialect=case.dialect, engine=case.engine, sql=case.input_sql,
                   schema=schema)

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


def _error(message: str, **meta: Any) -> MethodAnswer:
    return MethodAnswer("method_error", message=message, meta=meta)


def _describe(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


# -- external command ---------------------------------------------------------------------------

_COMMAND_STATUSES = {"rewrite": "rewrite", "no_rewrite": "no_rewrite",
                     "source_acceptance_failure": "source_acceptance_failure",
                     "error": "method_error"}
_COMMAND_KEYS = ("status", "sql", "message", "meta")


class CommandMethod:
    """An external program answering one case per run, JSON in on stdin and out on stdout."""

    def __init__(self, argv: Sequence[str], timeout: float = DEFAULT_COMMAND_TIMEOUT,
                 *, cwd: str | Path | None = None) -> None:
        if isinstance(argv, str) or not argv or not all(isinstance(a, str) for a in argv):
            raise ConfigError(f"a command method needs a non-empty list of arguments, got {argv!r}")
        if not (math.isfinite(timeout) and timeout > 0):
            raise ConfigError(f"a command method's timeout must be positive seconds, got {timeout}")
        self.argv = tuple(argv)
        self.timeout = float(timeout)
        self.cwd = cwd

    def __repr__(self) -> str:
        return f"CommandMethod({shlex.join(self.argv)!r}, timeout={self.timeout:g})"

    def __call__(self, case: RewriteCase, schema: str) -> MethodAnswer:
        try:
            payload = json.dumps(MethodRequest.of(case, schema).to_dict())
            return self._run(payload)
        except Exception as exc:  # the adapter's promise: an answer, never an exception
            return _error(f"command {self.argv[0]!r} could not be run: {_describe(exc)}")

    def _run(self, payload: str) -> MethodAnswer:
        started = time.monotonic()
        try:
            # A session of its own, so a timeout ends the whole process group (a shell wrapper's
            # children included), not just the process we started.
            process = subprocess.Popen(
                self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                text=True, encoding="utf-8", errors="replace", cwd=self.cwd,
                start_new_session=True)
        except OSError as exc:
            return _error(f"command {self.argv[0]!r} could not be started: {_describe(exc)}")
        try:
            stdout, stderr = process.communicate(payload, timeout=self.timeout)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            try:
                _, stderr = process.communicate(timeout=5)
            except subprocess.TimeoutExpired:  # something outside the group holds the pipes
                stderr = ""
                process.wait()
            return _error(f"command timed out after {self.timeout:g}s{_stderr_note(stderr)}",
                          elapsed=time.monotonic() - started, stderr=_tail(stderr))
        meta: dict[str, Any] = {"elapsed": time.monotonic() - started,
                                "returncode": process.returncode}
        if stderr.strip():
            meta["stderr"] = _tail(stderr)
        if process.returncode != 0:
            return _error(f"command exited with code {process.returncode}{_stderr_note(stderr)}",
                          **meta)
        return _parse_command_output(stdout, stderr, meta)


def _kill_group(process: subprocess.Popen[str]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()


def _tail(text: str | None) -> str:
    text = (text or "").strip()
    return text if len(text) <= _STDERR_TAIL else "..." + text[-_STDERR_TAIL:]


def _stderr_note(stderr: str | None) -> str:
    tail = _tail(stderr)
    return f"; stderr ends with: {tail}" if tail else "; stderr is empty"


def _parse_command_output(stdout: str, stderr: str, meta: dict[str, Any]) -> MethodAnswer:
    text = stdout.strip()
    if not text:
        return _error(f"command printed nothing on stdout{_stderr_note(stderr)}", **meta)
    try:
        reply = json.loads(text)
    except json.JSONDecodeError as exc:
        shown = text if len(text) <= 200 else text[:200] + "..."
        return _error(f"command output is not JSON ({exc.msg} at line {exc.lineno} column "
                      f"{exc.colno}): {shown!r}{_stderr_note(stderr)}", **meta)
    problem = _reply_problem(reply)
    if problem:
        return _error(f"command output does not follow the method protocol: {problem}", **meta)
    kind = _COMMAND_STATUSES[reply["status"]]
    extra = reply.get("meta") or {}
    message = reply.get("message")
    if kind == "rewrite":
        return MethodAnswer("rewrite", sql=reply["sql"], message=message, meta={**extra, **meta})
    if kind == "method_error":
        message = f"the method reported an error: {message or '(no message)'}"
    return MethodAnswer(kind, message=message, meta={**extra, **meta})


def _reply_problem(reply: Any) -> str | None:
    """What is wrong with a command's reply, None when it is a valid answer."""
    if not isinstance(reply, dict):
        return f"expected a JSON object, got {type(reply).__name__}"
    unknown = sorted(set(reply) - set(_COMMAND_KEYS))
    if unknown:
        return f"unknown key(s) {', '.join(map(repr, unknown))}; allowed keys: " \
               f"{', '.join(_COMMAND_KEYS)}"
    status = reply.get("status")
    if status not in _COMMAND_STATUSES:
        return f"'status' must be one of {', '.join(_COMMAND_STATUSES)}, got {status!r}"
    sql, message, extra = reply.get("sql"), reply.get("message"), reply.get("meta")
    if status == "rewrite":
        if not isinstance(sql, str) or not sql.strip():
            return f"status 'rewrite' needs a non-empty string 'sql', got {sql!r}"
    elif sql is not None:
        return f"status {status!r} must not carry 'sql' (got {_short(repr(sql))})"
    if message is not None and not isinstance(message, str):
        return f"'message' must be a string or null, got {type(message).__name__}"
    if extra is not None and not isinstance(extra, dict):
        return f"'meta' must be an object or null, got {type(extra).__name__}"
    return None


def _short(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


# -- Python callable ----------------------------------------------------------------------------

MethodFunction = Callable[[MethodRequest], "str | MethodAnswer | None"]


class CallableMethod:
    """A Python function ``fn(request) -> str | None | MethodAnswer`` as a method."""

    def __init__(self, fn: MethodFunction, *, name: str | None = None) -> None:
        if not callable(fn):
            raise ConfigError(f"a callable method needs a function, got {fn!r}")
        self.fn = fn
        self.name = name or getattr(fn, "__qualname__", repr(fn))

    def __repr__(self) -> str:
        return f"CallableMethod({self.name})"

    def __call__(self, case: RewriteCase, schema: str) -> MethodAnswer:
        started = time.monotonic()
        try:
            value = self.fn(MethodRequest.of(case, schema))
        except Exception as exc:
            return _error(f"{self.name} raised {_describe(exc)}",
                          elapsed=time.monotonic() - started)
        elapsed = time.monotonic() - started
        if value is None:
            return MethodAnswer("no_rewrite", meta={"elapsed": elapsed})
        if isinstance(value, MethodAnswer):
            return value
        if isinstance(value, str):
            if not value.strip():
                return _error(f"{self.name} returned an empty query", elapsed=elapsed)
            return MethodAnswer("rewrite", sql=value, meta={"elapsed": elapsed})
        return _error(f"{self.name} returned {type(value).__name__}; a method returns a str "
                      "(the rewrite), None (no rewrite) or a MethodAnswer", elapsed=elapsed)


# -- LLM ----------------------------------------------------------------------------------------

# "NO_REWRITE" as the answer's first word (after any markdown), or anywhere as a word
_LEADING_DECLINE = re.compile(rf"^[\s`*_\"'>#-]*{NO_REWRITE}\b")
_ANY_DECLINE = re.compile(rf"\b{NO_REWRITE}\b")
_THINKING = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.IGNORECASE | re.DOTALL)


def engine_display_name(engine: str, dialect: str) -> str:
    """How a prompt names a case's engine (its name, short name or URL scheme, as the engine's
    ``EngineInfo`` writes it): ``mariadb`` is MariaDB even though it speaks mysql."""
    key = engine.split("://", 1)[0].split("+", 1)[0].lower() if "://" in engine else engine.lower()
    info = catalog.find(key)
    return info.display(key) if info is not None else engine_label(dialect, None)


class LLMRewriteMethod:
    """Asks a model for a faster or simpler equivalent of the case's query, or ``NO_REWRITE``.

    The answer is read in this order: an answer that starts with ``NO_REWRITE`` declines (even if
    it goes on to quote the query); otherwise the query :func:`polysql.llm.extract.extract_sql` finds
    is the rewrite; otherwise ``NO_REWRITE`` anywhere in the text declines; otherwise the answer is
    unusable and becomes a ``method_error`` naming the extraction failure. A request the endpoint
    rejects (:class:`LLMError`, HTTP 400) is a ``method_error`` too; an endpoint that gives no
    answer at all (:class:`LLMUnavailableError`) is an outage, not the method's answer, and is
    raised for the run to stop scoring this method.
    """

    def __init__(self, client: LLMClient, template: str = "rewrite_v1") -> None:
        try:
            import jinja2
        except ImportError as exc:
            raise ConfigError("the LLM rewriter needs Jinja2: pip install 'polysql[llm]'") from exc
        self.client = client
        self.source: TemplateSource = find_template(template)
        env = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False)
        try:
            self._template = env.from_string(self.source.text)
        except jinja2.TemplateSyntaxError as exc:
            raise ConfigError(f"prompt template {self.source.origin} line {exc.lineno}: "
                              f"{exc.message}") from exc
        if "user" not in self._template.blocks:
            raise ConfigError(f"prompt template {self.source.origin} needs a {{% block user %}}")
        self._jinja_error = jinja2.TemplateError

    def __repr__(self) -> str:
        return f"LLMRewriteMethod({self.client.config.name!r}, template={self.source.ref!r})"

    def prompt(self, request: MethodRequest) -> Prompt:
        values = {"engine_label": engine_display_name(request.engine, request.dialect),
                  "dialect": request.dialect, "schema": request.schema, "sql": request.sql,
                  "no_rewrite": NO_REWRITE}
        try:
            system, user = self._block("system", values), self._block("user", values)
        except self._jinja_error as exc:
            raise ConfigError(f"prompt template {self.source.origin} failed to render: "
                              f"{exc}") from exc
        return Prompt(system=system, user=user, template=self.source.name,
                      version=self.source.version)

    def _block(self, name: str, values: dict[str, Any]) -> str:
        render = self._template.blocks.get(name)
        if render is None:
            return ""
        text = "".join(render(self._template.new_context(values)))
        return re.sub(r"\n{3,}", "\n\n", text).strip()

    def __call__(self, case: RewriteCase, schema: str) -> MethodAnswer:
        config = self.client.config
        meta: dict[str, Any] = {"model": config.name, "model_id": config.model}
        try:
            prompt = self.prompt(MethodRequest.of(case, schema))
            meta.update(prompt_template=prompt.template, prompt_version=prompt.version,
                        prompt_hash=prompt.hash)
            completion = self.client.complete(prompt.messages)
        except LLMUnavailableError:
            raise
        except LLMError as exc:
            return MethodAnswer("method_error", message=f"model call failed: {exc}", meta=meta)
        except Exception as exc:
            return MethodAnswer("method_error", message=f"could not ask the model: "
                                f"{_describe(exc)}", meta=meta)
        meta.update(tokens={"prompt": completion.prompt_tokens,
                            "completion": completion.completion_tokens},
                    cached=completion.cached, elapsed=completion.elapsed,
                    finish_reason=completion.finish_reason, response=completion.text)
        try:
            return _read_model_answer(completion.text, case.dialect,
                                      truncated=completion.finish_reason == "length", meta=meta)
        except Exception as exc:
            return MethodAnswer("method_error", message=f"could not read the model's answer: "
                                f"{_describe(exc)}", meta=meta)


def _read_model_answer(text: str, dialect: str, *, truncated: bool,
                       meta: dict[str, Any]) -> MethodAnswer:
    visible = _THINKING.sub("", text or "")
    if _LEADING_DECLINE.match(visible):
        return MethodAnswer("no_rewrite", message="the model answered NO_REWRITE", meta=meta)
    extraction = extract_sql(text, dialect, truncated=truncated)
    meta["extraction"] = extraction.to_dict()
    if extraction.sql is not None:
        return MethodAnswer("rewrite", sql=extraction.sql, meta=meta)
    if _ANY_DECLINE.search(visible):
        return MethodAnswer("no_rewrite", message="the model answered NO_REWRITE", meta=meta)
    return MethodAnswer("method_error",
                        message=f"no usable query in the model's answer ({extraction.failure})",
                        meta=meta)


# -- baselines ----------------------------------------------------------------------------------

def identity_method(case: RewriteCase, schema: str) -> MethodAnswer:
    """The input, unchanged: the floor every method should beat (the harness calls it a no-op)."""
    return MethodAnswer("rewrite", sql=case.input_sql)


def no_rewrite_method(case: RewriteCase, schema: str) -> MethodAnswer:
    """Always declines."""
    return MethodAnswer("no_rewrite", message="the no-rewrite baseline never rewrites")


def schema_mapping(schema: str, dialect: str) -> tuple[dict[str, dict[str, str]], list[str]]:
    """``{table: {column: type}}`` from the CREATE TABLE statements of ``schema``, and the
    statements that were skipped because sqlglot could not read them.

    Tables are keyed by their bare name (a sqlglot schema needs one nesting depth for all tables,
    and a case's database is one schema). A column without a declared type (SQLite allows it)
    is ``UNKNOWN``. Anything other than CREATE TABLE (indexes, inserts, comments) is ignored.
    """
    tables: dict[str, dict[str, str]] = {}
    skipped: list[str] = []
    try:
        statements = split_statements(schema, dialect)
    except Exception:  # the script as a whole does not tokenize: nothing can be read from it
        return {}, [schema]
    for statement in statements:
        try:
            with quietly():
                parsed = sqlglot.parse_one(statement, read=dialect)
        except (SqlglotError, ValueError):
            skipped.append(statement)
            continue
        if not (isinstance(parsed, exp.Create) and (parsed.kind or "").upper() == "TABLE"
                and isinstance(parsed.this, exp.Schema)):
            continue
        table = parsed.this.this
        if not isinstance(table, exp.Table):
            continue
        columns: dict[str, str] = {}
        for column in parsed.this.expressions:
            if isinstance(column, exp.ColumnDef):
                kind = column.args.get("kind")
                columns[column.name] = kind.sql(dialect=dialect) if kind is not None else "UNKNOWN"
            elif isinstance(column, exp.Identifier):  # SQLite's bare "CREATE TABLE t (a, b)"
                columns[column.name] = "UNKNOWN"
        if columns:
            tables[table.name] = columns
    return tables, skipped


def _one_query(sql: str, dialect: str) -> exp.Expression | str:
    """The single query ``sql`` holds, or why there is none."""
    try:
        with quietly():
            statements = [s for s in sqlglot.parse(sql, read=dialect) if s is not None]
    except (SqlglotError, ValueError) as exc:
        return f"sqlglot cannot parse the input as {dialect}: {' '.join(str(exc).split())}"
    if len(statements) != 1:
        return f"the input holds {len(statements)} statements; sqlglot-optimize takes one query"
    statement = statements[0]
    if not isinstance(statement, exp.Query):
        return f"sqlglot reads the input as a {statement.key.upper()}, not a query"
    return statement


def sqlglot_optimize_method(case: RewriteCase, schema: str) -> MethodAnswer:
    """sqlglot's optimizer over the input, written back in the case's dialect.

    The schema is given to the optimizer when it declares every table the query reads; otherwise
    the optimizer runs without one (a partial schema makes it reject the query), which it can only
    do when every column is qualified.
    """
    try:
        from sqlglot.optimizer import optimize
        from sqlglot.schema import MappingSchema

        dialect = case.dialect
        parsed = _one_query(case.input_sql, dialect)
        if isinstance(parsed, str):
            return MethodAnswer("source_acceptance_failure", message=parsed)
        tables, skipped = schema_mapping(schema, dialect)
        ctes = {cte.alias_or_name for cte in parsed.find_all(exp.CTE)}
        read = {t.name.lower() for t in parsed.find_all(exp.Table)
                if t.name and t.name not in ctes}
        use_schema = bool(tables) and read <= {name.lower() for name in tables}
        meta: dict[str, Any] = {"schema_used": use_schema, "schema_tables": len(tables)}
        if skipped:
            meta["schema_statements_skipped"] = len(skipped)
        started = time.monotonic()
        try:
            optimized = optimize(
                parsed, schema=MappingSchema(tables, dialect=dialect) if use_schema else None,
                dialect=dialect)
            sql = optimized.sql(dialect=dialect, pretty=True)
        except Exception as exc:
            return MethodAnswer("method_error", message=f"sqlglot's optimizer failed: "
                                f"{_describe(exc)}", meta=meta)
        meta["elapsed"] = time.monotonic() - started
        return MethodAnswer("rewrite", sql=sql, meta=meta)
    except Exception as exc:
        return _error(f"sqlglot-optimize failed: {_describe(exc)}")


# -- specs --------------------------------------------------------------------------------------

_SPEC_FORMS = ("identity", "no-rewrite", "sqlglot-optimize", "cmd:<command and arguments>",
               "llm:<model name in polysql.toml>", "python:<module>:<function>")

ModelConfigSource = ModelConfig | Mapping[str, ModelConfig] | str | Path | None


def make_method(spec: str, *, model_config: ModelConfigSource = None,
                cache: ResponseCache | None = None,
                command_timeout: float = DEFAULT_COMMAND_TIMEOUT) -> tuple[str, Method]:
    """The method a spec names, and the name it is recorded under (the spec, tidied).

    ``model_config`` says where ``llm:NAME`` finds its model: a ``ModelConfig`` (used as is), a
    mapping of configs by name, or the path of a config file (default ``./polysql.toml``).
    ``cache`` is the model's response cache (None: every case asks the model).
    """
    spec = spec.strip()
    if spec == "identity":
        return spec, identity_method
    if spec == "no-rewrite":
        return spec, no_rewrite_method
    if spec == "sqlglot-optimize":
        return spec, sqlglot_optimize_method
    if spec.startswith("cmd:"):
        try:
            argv = shlex.split(spec[len("cmd:"):])
        except ValueError as exc:
            raise ConfigError(f"cannot split the command of method {spec!r}: {exc}") from exc
        if not argv:
            raise ConfigError("'cmd:' needs a command, e.g. 'cmd:python my_rewriter.py'")
        return f"cmd:{shlex.join(argv)}", CommandMethod(argv, command_timeout)
    if spec.startswith("llm:"):
        name = spec[len("llm:"):].strip()
        config = _model_config(name, model_config)
        return f"llm:{name}", LLMRewriteMethod(LLMClient(config, cache=cache))
    if spec.startswith("python:"):
        target = spec[len("python:"):].strip()
        fn = _import_function(target)
        return f"python:{target}", CallableMethod(fn, name=target)
    raise ConfigError(f"unknown rewrite method {spec!r}: use one of {', '.join(_SPEC_FORMS)}")


def _model_config(name: str, source: ModelConfigSource) -> ModelConfig:
    if not name:
        raise ConfigError("'llm:' needs a model name from polysql.toml, e.g. 'llm:gpt4o'")
    if isinstance(source, ModelConfig):
        if source.name != name:
            raise ConfigError(f"method 'llm:{name}' was given the config of model "
                              f"{source.name!r}")
        config = source
    else:
        configs = source if isinstance(source, Mapping) else load_model_configs(source)
        if name not in configs:
            declared = ", ".join(sorted(configs)) or "no models"
            raise ConfigError(f"unknown model {name!r}: the model config declares {declared}")
        config = configs[name]
    if config.api_key_env and not os.environ.get(config.api_key_env):
        # Checked up front: without the key every case would end as the same method error.
        raise ConfigError(f"model {name!r} reads its API key from ${config.api_key_env}, which "
                          "is not set")
    return config


def _import_function(target: str) -> MethodFunction:
    module_name, sep, attribute = target.rpartition(":")
    if not sep or not module_name or not attribute:
        raise ConfigError(f"'python:' needs <module>:<function>, e.g. "
                          f"'python:my_rewriter:rewrite', got {target!r}")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise ConfigError(f"cannot import module {module_name!r} for method 'python:{target}': "
                          f"{_describe(exc)}") from exc
    fn = module
    for part in attribute.split("."):
        fn = getattr(fn, part, None)
        if fn is None:
            raise ConfigError(f"module {module_name!r} has no {attribute!r} (method "
                              f"'python:{target}')")
    if not callable(fn):
        raise ConfigError(f"'python:{target}' is not callable ({type(fn).__name__})")
    return fn  # type: ignore[return-value]
