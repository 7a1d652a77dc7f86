"""A small BIRD-layout dataset folder for tests that sweep a folder dataset."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

GOLD = "SELECT count(*) FROM item"


def make_bird(root: Path, *, empty_db: str | None = None) -> Path:
    """``root/dev.json`` and two databases: ``shop`` answers questions 0 and 1, ``zoo`` 2 and 3
    (table ``item``: two rows; every gold is :data:`GOLD`). ``empty_db`` is written as a 0-byte
    file instead."""
    questions = []
    for db_id in ("shop", "zoo"):
        folder = root / "dev_databases" / db_id
        folder.mkdir(parents=True)
        path = folder / f"{db_id}.sqlite"
        if db_id == empty_db:
            path.write_bytes(b"")
        else:
            con = sqlite3.connect(path)
            con.execute("CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT)")
            con.executemany("INSERT INTO item VALUES (?, ?)", [(1, "a"), (2, "b")])
            con.commit()
            con.close()
        for n in range(2):
            questions.append({"question_id": len(questions), "db_id": db_id, "question": f"q{n}",
                              "evidence": "", "SQL": GOLD, "difficulty": "simple"})
    (root / "dev.json").write_text(json.dumps(questions))
    return root
