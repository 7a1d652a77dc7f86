"""Validation of demo-format question files (what a hand-edited questions.json can get wrong)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from polysql.core.errors import DatasetError
from polysql.datasets.demo import load_demo_questions
from polysql.datasets.tags import check_tags


def entry(**overrides: Any) -> dict[str, Any]:
    base = {"id": "x-1", "db_id": "retail", "question": "q?", "gold_sql": "SELECT 1",
            "tags": ["portable"], "difficulty": "simple"}
    base.update(overrides)
    return base


def test_valid_file_loads(tmp_path: Path, json_file: Callable[..., Path]) -> None:
    path = json_file(tmp_path / "q.json", [entry(evidence="hint", tags=["cast", "join"])])
    (question,) = load_demo_questions(path)
    assert question.tags == ("cast", "join")
    assert question.evidence == "hint"


@pytest.mark.parametrize(("entries", "message"), [
    ([entry(), entry()], r"entry 1: field 'id' repeats id 'x-1' of entry 0"),
    ([entry(tags=["portable", "made_up"])], r"unknown tag\(s\) 'made_up'"),
    ([entry(tags=["portable", "cast"])], r"tagged 'portable' and also with hazard\(s\) cast"),
    ([entry(tags=[])], r"field 'tags' is empty"),
    ([entry(tags="portable")], r"field 'tags' must be a list of strings"),
    ([entry(difficulty="hard")], r"field 'difficulty' must be one of simple, moderate, challenging"),
    ([entry(gold_sql=None)], r"entry 0: field 'gold_sql' is missing"),
])
def test_invalid_entries(tmp_path: Path, json_file: Callable[..., Path],
                         entries: list[Any], message: str) -> None:
    path = json_file(tmp_path / "q.json", entries)
    with pytest.raises(DatasetError, match=message):
        load_demo_questions(path)


def test_check_tags_accepts_the_vocabulary() -> None:
    check_tags(("integer_division", "join"), where="here")
    with pytest.raises(DatasetError, match="here: unknown tag"):
        check_tags(("Integer_Division",), where="here")
