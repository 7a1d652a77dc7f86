"""The LLM rewriter end to end: a scripted OpenAI-compatible endpoint for each kind of answer, and
the real llama.cpp server (SmolLM2-135M) for whatever a tiny model really says."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import sqlglot
from click.testing import CliRunner

from polysql.analysis.rewrite.model import ANSWER_KINDS
from polysql.cli.main import EXIT_INCOMPLETE, main
from polysql.core.errors import ConfigError, LLMUnavailableError
from polysql.datasets.rewrite.cases import Contract, DatabaseRef, RewriteCase
from polysql.llm.client import LLMClient, ModelConfig, ResponseCache
from polysql.rewrite.methods import NO_REWRITE, LLMRewriteMethod, MethodRequest

pytest.importorskip("openai", reason="the LLM rewriter tests need the openai package")
pytest.importorskip("jinja2", reason="the LLM rewriter tests need Jinja2")

SCHEMA = ("CREATE TABLE orders (\n  id INTEGER NOT NULL,\n  customer_id INTEGER,\n"
          "  total NUMERIC(10, 2),\n  PRIMARY KEY (id)\n);")
INPUT = ("SELECT DISTINCT customer_id FROM orders WHERE customer_id IN "
         "(SELECT customer_id FROM orders WHERE total > 10)")
REFERENCE = "SELECT DISTINCT customer_id FROM orders WHERE total > 10 -- the secret reference"
REWRITE = "SELECT DISTINCT customer_id FROM orders WHERE total > 10"


def make_case(*, dialect: str = "postgres", engine: str = "postgres") -> RewriteCase:
    return RewriteCase(
        id="pg-semi-001", pool="unit", dialect=dialect, engine=engine, path=Path("/nonexistent"),
        input_sql=INPUT, references=(REFERENCE,), database=DatabaseRef(kind="setup_sql"),
        contract=Contract(row_order="bag"), provenance={}, tags=(), description="",
        timeout=10.0, opportunity="")


def emulated(base_url: str, **overrides: Any) -> ModelConfig:
    settings: dict[str, Any] = {"max_retries": 2, "timeout": 5.0, "backoff_base": 0.01,
                                "backoff_max": 0.05, "params": {"temperature": 0}}
    settings.update(overrides)
    return ModelConfig(name="emulated", base_url=base_url, model="emulated-rewriter", **settings)


def method_for(base_url: str, cache: ResponseCache | None = None) -> LLMRewriteMethod:
    return LLMRewriteMethod(LLMClient(emulated(base_url), cache=cache))


# -- the scripted endpoint ----------------------------------------------------------------------


def test_scripted_no_rewrite(openai_emulator: Any) -> None:
    openai_emulator.script(openai_emulator.reply(text="NO_REWRITE"))
    answer = method_for(openai_emulator.base_url)(make_case(), SCHEMA)
    assert answer.kind == "no_rewrite" and answer.sql is None
    assert answer.meta["model"] == "emulated" and answer.meta["cached"] is False
    assert answer.meta["tokens"]["completion"] == 1


def test_scripted_sql_block_is_the_rewrite(openai_emulator: Any) -> None:
    text = f"The IN subquery reads the same table; filter directly:\n\n```sql\n{REWRITE};\n```\n"
    openai_emulator.script(openai_emulator.reply(text=text))
    answer = method_for(openai_emulator.base_url)(make_case(), SCHEMA)
    assert answer.kind == "rewrite"
    assert answer.sql is not None
    assert sqlglot.parse_one(answer.sql, read="postgres") == sqlglot.parse_one(REWRITE,
                                                                               read="postgres")
    assert answer.meta["extraction"]["method"] == "fenced_sql"
    assert answer.meta["response"] == text
    # what the model was shown: the input, the schema, the engine and the way to decline -- and
    # never the case's reference rewrite
    request = openai_emulator.requests[-1].body
    assert request["model"] == "emulated-rewriter"
    shown = "\n".join(message["content"] for message in request["messages"])
    assert INPUT in shown and SCHEMA in shown and NO_REWRITE in shown and "PostgreSQL" in shown
    assert "secret reference" not in shown
    assert answer.meta["prompt_template"] == "rewrite" and answer.meta["prompt_version"] == "1"


def test_scripted_answers_are_cached(openai_emulator: Any, tmp_path: Path) -> None:
    openai_emulator.script(openai_emulator.reply(text=f"```sql\n{REWRITE}\n```"))
    cache = ResponseCache(tmp_path / "responses.sqlite")
    try:
        method = method_for(openai_emulator.base_url, cache)
        first = method(make_case(), SCHEMA)
        second = method(make_case(), SCHEMA)
    finally:
        cache.close()
    assert len(openai_emulator.requests) == 1
    assert (first.meta["cached"], second.meta["cached"]) == (False, True)
    assert first.sql == second.sql and first.meta["tokens"] == second.meta["tokens"]


def test_scripted_server_error_past_retries_is_an_outage_not_an_answer(
        openai_emulator: Any) -> None:
    openai_emulator.script(then=openai_emulator.reply(status=500))
    with pytest.raises(LLMUnavailableError, match=r"failed after 3 attempt\(s\).*HTTP 500"):
        method_for(openai_emulator.base_url)(make_case(), SCHEMA)
    assert len(openai_emulator.requests) == 3  # the first attempt and max_retries = 2


def test_scripted_rejected_request_is_the_methods_error(openai_emulator: Any) -> None:
    """The endpoint answered, refusing this request (too long, say): that is the method's."""
    openai_emulator.script(then=openai_emulator.reply(status=400,
                                                      error="maximum context length exceeded"))
    answer = method_for(openai_emulator.base_url)(make_case(), SCHEMA)
    assert answer.kind == "method_error"
    assert answer.message is not None and answer.message.startswith("model call failed:")
    assert "HTTP 400" in answer.message


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def test_a_rewrite_run_with_the_model_down_scores_nothing_of_that_method(
        openai_emulator: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An outage must not count as the method's generation failures: the LLM method gets no
    row, the other methods are scored, and the screen and the report say the run is incomplete."""
    monkeypatch.setenv("POLYSQL_CACHE", str(tmp_path / "cache"))
    root, out = tmp_path / "cases", tmp_path / "out"
    for engine in ("duckdb", "sqlite"):
        code, output = _cli("rewrite", "new-case", f"demo-{engine}", "--engine", engine,
                            "--pool", "scratch", "--root", str(root))
        assert code == 0, output
    config = tmp_path / "polysql.toml"
    config.write_text(f'[models.emu]\nbase_url = "{openai_emulator.base_url}"\nmodel = "m"\n'
                      "max_retries = 1\nbackoff_base = 0.01\nbackoff_max = 0.02\n",
                      encoding="utf-8")
    openai_emulator.script(then=openai_emulator.reply(status=503, error="overloaded"))
    code, output = _cli("rewrite", "run", "--cases", str(root), "--runs", "1", "--out", str(out),
                        "--config", str(config), "-m", "identity", "-m", "llm:emu")
    assert code == EXIT_INCOMPLETE, output
    assert "INCOMPLETE" in output and "llm:emu was not scored" in output
    ledger = json.loads((out / "ledger.json").read_text())
    assert {row["method"] for row in ledger["rows"]} == {"identity"}
    assert len(ledger["rows"]) == 2
    assert "HTTP 503" in ledger["unscored"]["llm:emu"]
    report = (out / "rewrite_report.md").read_text()
    assert "Not scored" in report and "`llm:emu`" in report
    assert len(openai_emulator.requests) == 2  # one case asked (with its retry), then it stopped

    # Nothing scored at all: no report is written, and the exit still says incomplete.
    code, output = _cli("rewrite", "run", "--cases", str(root), "--runs", "1",
                        "--out", str(tmp_path / "none"), "--config", str(config), "-m", "llm:emu")
    assert code == EXIT_INCOMPLETE and "llm:emu was not scored" in output
    assert "no report was written" in output
    assert not (tmp_path / "none").exists()


@pytest.mark.parametrize(("text", "kind", "detail"), [
    # declining first, then quoting the query: the decision is what counts
    (f"NO_REWRITE\n\nThe query is already simple:\n```sql\n{INPUT}\n```", "no_rewrite", None),
    ("**NO_REWRITE**", "no_rewrite", None),
    ("```sql\nNO_REWRITE\n```", "no_rewrite", None),
    ("I looked at it and the answer is NO_REWRITE because it is fine.", "no_rewrite", None),
    ("This query is fine and I would not change a thing.", "method_error", "no_sql_found"),
    ("", "method_error", "empty_response"),
    ("```sql\nSELECT DISTINCT customer_id FROM orders WHERE", "method_error",
     "truncated_response"),
])
def test_scripted_answer_reading(openai_emulator: Any, text: str, kind: str,
                                 detail: str | None) -> None:
    openai_emulator.script(openai_emulator.reply(text=text))
    answer = method_for(openai_emulator.base_url)(make_case(), SCHEMA)
    assert answer.kind == kind
    if detail is not None:
        assert answer.message == f"no usable query in the model's answer ({detail})"


def test_prompt_names_the_engine_not_just_the_dialect(openai_emulator: Any) -> None:
    method = method_for(openai_emulator.base_url)
    prompt = method.prompt(MethodRequest.of(
        make_case(dialect="mysql", engine="mariadb"), SCHEMA))
    assert "MariaDB" in prompt.system and "MariaDB" in prompt.user
    spark = method.prompt(MethodRequest.of(
        make_case(dialect="spark", engine="spark"), SCHEMA))
    assert "Spark SQL" in spark.user
    assert prompt.hash != spark.hash


def test_unknown_template_is_a_config_error(openai_emulator: Any) -> None:
    client = LLMClient(emulated(openai_emulator.base_url), cache=None)
    with pytest.raises(ConfigError, match="unknown prompt template 'rewrite_v9'"):
        LLMRewriteMethod(client, template="rewrite_v9")


# -- the real llama.cpp server ------------------------------------------------------------------


def test_real_model_answers_one_known_kind(llama_model_config: ModelConfig) -> None:
    client = LLMClient(llama_model_config, cache=None)
    try:
        method = LLMRewriteMethod(client)
        answer = method(make_case(), SCHEMA)
    finally:
        client.close()
    # a 135M model says anything: the adapter must still give exactly one well-formed answer
    assert answer.kind in ANSWER_KINDS
    assert answer.kind != "source_acceptance_failure"  # the LLM rewriter never refuses input
    if answer.kind == "rewrite":
        assert answer.sql is not None and answer.sql.strip()
        assert answer.meta["extraction"]["failure"] is None
    else:
        assert answer.sql is None and answer.message
    assert answer.meta["tokens"]["prompt"] > 0
    assert answer.meta["model"] == "smollm2" and answer.meta["cached"] is False
    assert client.stats.calls == 1 and client.stats.errors == 0
