from __future__ import annotations

import json
from pathlib import Path

from polysql.core.store import ResultsStore


def record(qid: str, status: str = "match") -> dict[str, object]:
    return {"dataset": "d", "question_id": qid, "predictor": "gold", "engine": "sqlite", "status": status}


def test_append_then_resume_keys(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / "run")
    with store.open_for_append() as out:
        out.write(record("1"))
        out.write(record("2"))
    assert store.done_keys() == {("d", "1", "gold", "sqlite"), ("d", "2", "gold", "sqlite")}


def test_a_line_torn_by_a_crash_is_skipped_and_the_next_append_starts_clean(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path)
    with store.open_for_append() as out:
        out.write(record("1"))
    with store.path.open("a", encoding="utf-8") as fh:  # simulate a write cut short
        fh.write(json.dumps(record("2"))[:25])
    assert [r["question_id"] for r in store.records()] == ["1"]
    assert store.damaged_lines == [2]
    with store.open_for_append() as out:
        out.write(record("3"))
    assert [r["question_id"] for r in store.records()] == ["1", "3"]


def test_latest_record_per_key_wins(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path)
    with store.open_for_append() as out:
        out.write(record("1", "mismatch"))
        out.write(record("1", "match"))
    assert [r["status"] for r in store.latest_records()] == ["match"]


def test_non_json_values_in_details_are_written_readably(tmp_path: Path) -> None:
    from datetime import date
    from decimal import Decimal

    store = ResultsStore(tmp_path)
    with store.open_for_append() as out:
        out.write({**record("1"), "details": {"gold": (Decimal("1.50"), date(2024, 1, 2), b"\x00\xff")}})
    (only,) = list(store.records())
    assert only["details"]["gold"] == ["1.50", "2024-01-02", "00ff"]
