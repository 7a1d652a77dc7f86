"""Hand-made leaderboard bundles for site tests: three submissions over two datasets and three
engines, with a model name full of markup. Their records are generated, so their dataset
fingerprint is a placeholder: they are for drawing sites, not for validation."""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path
from typing import Any

from polysql.leaderboard.bundle import Bundle, read_bundle

ENGINES = {"sqlite": "sqlite", "duckdb": "duckdb", "pg16": "postgres"}
# a name with markup in it: it must come out escaped everywhere
ODD_MODEL = "beta <b>&\"x\"/v2"
# (model, dataset, questions, chance of a right answer per engine)
SUBMISSIONS = [
    ("alpha", "demo", 40, {"sqlite": 0.55, "duckdb": 0.45, "pg16": 0.35}),
    (ODD_MODEL, "demo", 40, {"sqlite": 0.9, "duckdb": 0.85, "pg16": 0.75}),
    ("alpha", "extra", 25, {"sqlite": 0.6, "duckdb": 0.5, "pg16": 0.4}),
]


def generated_records(model: str, dataset: str, questions: int, chances: dict[str, float],
             seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out = []
    for number in range(1, questions + 1):
        qid = f"{dataset}-{number:03d}"
        gold_fails = number == questions  # the last question's gold fails everywhere
        for engine, dialect in ENGINES.items():
            right = rng.random() < chances[engine]
            if gold_fails:
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
    for engine in ENGINES:
        scored = [r for r in records if r["engine"] == engine and r["status"] != "invalid_gold"]
        correct = sum(r["status"] == "match" for r in scored)
        aggregates.append({"predictor": model, "engine": engine, "correct": correct,
                           "total": len(scored), "accuracy": correct / len(scored)})
    ids = sorted({r["question_id"] for r in records})
    manifest = {
        "format": "polysql-bundle", "format_version": 1, "polysql": "0.1.0",
        "created_at": "2026-12-03T07:00:00+00:00",
        "dataset": {"spec": dataset, "name": dataset, "fingerprint": "0" * 64,
                    "questions": len(ids), "question_ids": ids},
        "settings": {"timeout": 30.0, "max_rows": 100000, "policy": {}},
        "predictors": [{"name": model, "settings": {"prompt": "<default> & v1"}}],
        "engines": {e: {"dialect": d, "version": f"{e}-1.0"} for e, d in ENGINES.items()},
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
