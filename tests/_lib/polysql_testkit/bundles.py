"""Leaderboard bundles for tests.

Hand-made ones for site tests: three submissions over two datasets and three engines, with a model
name full of markup (:func:`make_bundles`), and the awkward cases a site must still draw cleanly
(:func:`make_edge_bundles`: an engine where nothing could be scored, a model missing an engine, a
very long model name). Their records are generated, so their dataset fingerprint is a
placeholder: they are for drawing sites, not for validation.

Real ones from real sweeps of the demo dataset (:func:`sweep_bundle`), for what must also pass
validation: the CLI runs `polysql sweep` then `polysql leaderboard pack`.
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from polysql.cli import main
from polysql.datasets.registry import get_dataset
from polysql.leaderboard.bundle import Bundle, read_bundle

ENGINES = {"sqlite": "sqlite", "duckdb": "duckdb", "pg16": "postgres"}
# a name with markup in it: it must come out escaped everywhere
ODD_MODEL = "beta <b>&\"x\"/v2"
# a name with no place to break a line: pages must wrap it rather than grow wider than the window
LONG_MODEL = "llm:" + "_".join(["finetuned_sql_dialect_model"] * 7)
# (model, dataset, questions, chance of a right answer per engine)
SUBMISSIONS = [
    ("alpha", "demo", 40, {"sqlite": 0.55, "duckdb": 0.45, "pg16": 0.35}),
    (ODD_MODEL, "demo", 40, {"sqlite": 0.9, "duckdb": 0.85, "pg16": 0.75}),
    ("alpha", "extra", 25, {"sqlite": 0.6, "duckdb": 0.5, "pg16": 0.4}),
]


def generated_records(model: str, dataset: str, questions: int, chances: dict[str, float],
                      seed: int, *, gold_fails_on: frozenset[str] = frozenset(),
                      ) -> list[dict[str, Any]]:
    """Records of ``model`` on the engines of ``chances`` (a subset of ENGINES). The last
    question's gold fails everywhere; on ``gold_fails_on`` engines every gold fails (n=0)."""
    rng = random.Random(seed)
    out = []
    for number in range(1, questions + 1):
        qid = f"{dataset}-{number:03d}"
        gold_fails = number == questions  # the last question's gold fails everywhere
        for engine, dialect in ENGINES.items():
            if engine not in chances:
                continue
            right = rng.random() < chances[engine]
            if gold_fails or engine in gold_fails_on:
                status = "invalid_gold"
            elif right:
                status = "match"
            else:
                status = rng.choice(["mismatch", "exec_error", "exec_error", "generation_failure"])
            error = ({"kind": "syntax", "message": 'syntax error at or near "QUALIFY"',
                      "sqlstate": "42601" if dialect == "postgres" else None}
                     if status == "exec_error" else None)
            out.append({
                "dataset": dataset, "question_id": qid, "db_id": "retail", "predictor": model,
                "engine": engine, "engine_version": f"{engine}-1.0", "dialect": dialect,
                "tags": [], "status": status, "match": status == "match", "reason": "",
                "details": {"mismatch": "row_count"} if status == "mismatch" else {},
                "sql": None if status == "generation_failure" else "SELECT 1",
                "prediction_failure": "empty answer" if status == "generation_failure" else None,
                "prediction_meta": {},
                "pred": {"columns": ["x"], "types": ["INTEGER"], "row_count": 1,
                         "truncated": False, "elapsed": 0.01, "error": error},
                "gold": {"columns": ["x"], "types": ["INTEGER"], "row_count": 2,
                         "truncated": False, "elapsed": 0.01, "error": None},
                "question": "How many?", "evidence": "", "gold_sql": "SELECT 1",
                "recorded_at": "2026-12-03T07:00:00+00:00",
            })
    return out


def write_bundle(folder: Path, model: str, dataset: str, records: list[dict[str, Any]]) -> Path:
    folder.mkdir(parents=True)
    body = "".join(json.dumps(r, sort_keys=True) + "\n" for r in records).encode()
    (folder / "records.jsonl").write_bytes(body)
    aggregates = []
    engines = {r["engine"] for r in records}
    for engine in (e for e in ENGINES if e in engines):
        scored = [r for r in records if r["engine"] == engine and r["status"] != "invalid_gold"]
        correct = sum(r["status"] == "match" for r in scored)
        aggregates.append({"predictor": model, "engine": engine, "correct": correct,
                           "total": len(scored),
                           "accuracy": correct / len(scored) if scored else None})
    ids = sorted({r["question_id"] for r in records})
    manifest = {
        "format": "polysql-bundle", "format_version": 1, "polysql": "0.1.0",
        "created_at": "2026-12-03T07:00:00+00:00",
        "dataset": {"spec": dataset, "name": dataset, "fingerprint": "0" * 64,
                    "questions": len(ids), "question_ids": ids},
        "settings": {"timeout": 30.0, "max_rows": 100000, "policy": {}},
        "predictors": [{"name": model, "settings": {"prompt": "<default> & v1"}}],
        "engines": {e: {"dialect": d, "version": f"{e}-1.0"} for e, d in ENGINES.items()
                    if e in engines},
        "aggregates": aggregates,
        "records_sha256": hashlib.sha256(body).hexdigest(),
    }
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return folder


def make_bundles(root: Path) -> list[Bundle]:
    bundles = []
    for index, (model, dataset, questions, chances) in enumerate(SUBMISSIONS):
        records = generated_records(model, dataset, questions, chances, seed=index)
        folder = write_bundle(root / f"bundle-{index + 1}", model, dataset, records)
        bundles.append(read_bundle(folder))
    return bundles


# (model, dataset, questions, chances, engines where every gold fails)
EDGE_SUBMISSIONS = [
    # gold fails on every pg16 question: that cell has records but n=0, so no accuracy
    ("gamma", "demo", 30, {"sqlite": 0.5, "duckdb": 0.4, "pg16": 0.3}, frozenset({"pg16"})),
    # never run on pg16 (no records there) and a name longer than any column
    (LONG_MODEL, "demo", 30, {"sqlite": 0.7, "duckdb": 0.6}, frozenset()),
]


def make_edge_bundles(root: Path) -> list[Bundle]:
    """Bundles a site must draw without a raw null or a page wider than the window."""
    bundles = []
    for index, (model, dataset, questions, chances, dead) in enumerate(EDGE_SUBMISSIONS):
        records = generated_records(model, dataset, questions, chances, seed=100 + index,
                                    gold_fails_on=dead)
        folder = write_bundle(root / f"edge-{index + 1}", model, dataset, records)
        bundles.append(read_bundle(folder))
    return bundles


# -- real bundles ---------------------------------------------------------------------------------
DEMO_ENGINES = "sqlite,duckdb"


def _cli(*args: str) -> str:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def wrong_predictions(path: Path, dataset: str = "demo") -> Path:
    """A predictions file answering every question of ``dataset`` with SQL that runs but is
    wrong: a submitted system that scores 0%."""
    lines = [json.dumps({"question_id": q.id, "sql": "SELECT 0 AS wrong"})
             for q in get_dataset(dataset).questions]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def sweep_bundle(root: Path, bundle: str, predictors: str, *,
                 engines: str = DEMO_ENGINES) -> Path:
    """A real submission: `polysql sweep` of the whole demo dataset with ``predictors`` (as
    ``--predictor`` takes them) into ``root/<bundle stem>-run``, packed as ``root/bundle`` (a
    folder, .zip or .tar.gz). Set POLYSQL_CACHE around it to keep the cache out of $HOME."""
    run = root / f"{bundle.split('.')[0]}-run"
    _cli("sweep", "--out", str(run), "--engines", engines, "--predictor", predictors)
    _cli("leaderboard", "pack", str(run), "--out", str(root / bundle))
    return root / bundle
