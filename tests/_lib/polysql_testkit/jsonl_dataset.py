"""A generic-layout dataset on disk: ``questions.jsonl`` beside the databases a test built."""

from __future__ import annotations

import json
from pathlib import Path


def write_questions(root: Path, db_id: str, gold: dict[str, str]) -> str:
    """One question per ``gold`` entry (id -> gold SQL) on database ``db_id``, written to
    ``root/questions.jsonl``; the dataset spec that names it."""
    lines = [{"question_id": key, "db_id": db_id, "question": f"question {key}", "gold_sql": sql}
             for key, sql in gold.items()]
    (root / "questions.jsonl").write_text("\n".join(map(json.dumps, lines)) + "\n",
                                          encoding="utf-8")
    return f"jsonl:{root}"
