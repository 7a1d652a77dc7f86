"""Optimization tasks for the execution-grounded reward: loading and validation.

A task is a slow query over a dataset database, an authored reference optimization returning the
same rows, the issue types it declares (from :data:`ISSUE_TYPES`), a reference summary and the
keywords a good summary mentions. The bundled set lives in ``datasets/reward/data/tasks.yaml``.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from polysql.core.errors import ConfigError

__all__ = ["ISSUE_TYPES", "RewardTask", "bundled_tasks_path", "load_tasks", "parse_tasks"]

#: the fixed vocabulary of issue types an action may suggest and a task may declare
ISSUE_TYPES: tuple[str, ...] = (
    "correlated_subquery",
    "missing_filter_pushdown",
    "redundant_distinct",
    "select_star",
    "non_sargable_predicate",
    "cartesian_join",
    "repeated_scan",
    "unnecessary_sort",
    "unnecessary_join",
)

_REQUIRED = ("id", "database", "original", "reference", "issues", "summary")
_OPTIONAL = ("keywords",)


@dataclass(frozen=True, slots=True)
class RewardTask:
    id: str
    dataset: str
    db_id: str
    original_sql: str
    reference_sql: str
    issues: tuple[str, ...]
    reference_summary: str
    keywords: tuple[str, ...] = ()


def bundled_tasks_path() -> Path:
    """The task set shipped with polysql."""
    return Path(str(resources.files("polysql.datasets.reward") / "data" / "tasks.yaml"))


def load_tasks(path: Path | None = None) -> list[RewardTask]:
    """Read and validate a task file (the bundled one by default)."""
    path = path or bundled_tasks_path()
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read reward tasks from {path}: {exc}") from exc
    return parse_tasks(document, source=str(path))


def parse_tasks(document: Any, *, source: str = "<tasks>") -> list[RewardTask]:
    """Validate a parsed task document; every problem found is reported in one ConfigError."""
    if not isinstance(document, dict) or not isinstance(document.get("tasks"), list):
        raise ConfigError(f"{source}: expected a mapping with a 'tasks' list")
    problems: list[str] = []
    tasks: list[RewardTask] = []
    seen: set[str] = set()
    for index, entry in enumerate(document["tasks"]):
        where = f"task #{index}"
        if not isinstance(entry, dict):
            problems.append(f"{where}: expected a mapping")
            continue
        where = f"task {entry.get('id', f'#{index}')!r}"
        missing = [key for key in _REQUIRED if key not in entry]
        unknown = sorted(set(entry) - set(_REQUIRED) - set(_OPTIONAL))
        if missing:
            problems.append(f"{where}: missing {', '.join(missing)}")
        if unknown:
            problems.append(f"{where}: unknown field(s) {', '.join(unknown)}")
        if missing:
            continue
        task_problems = _check_entry(entry)
        problems.extend(f"{where}: {p}" for p in task_problems)
        if entry["id"] in seen:
            problems.append(f"{where}: duplicate id")
        seen.add(entry["id"])
        if not task_problems:
            tasks.append(RewardTask(
                id=entry["id"], dataset=entry["database"]["dataset"],
                db_id=entry["database"]["db_id"], original_sql=entry["original"].strip(),
                reference_sql=entry["reference"].strip(), issues=tuple(entry["issues"]),
                reference_summary=entry["summary"].strip(),
                keywords=tuple(entry.get("keywords") or ())))
    if problems:
        raise ConfigError(f"{source}: invalid reward tasks:\n  " + "\n  ".join(problems))
    if not tasks:
        raise ConfigError(f"{source}: no tasks")
    return tasks


def _check_entry(entry: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    if not isinstance(entry["id"], str) or not entry["id"].strip():
        problems.append("id must be a non-empty string")
    database = entry["database"]
    if not (isinstance(database, dict) and isinstance(database.get("dataset"), str)
            and isinstance(database.get("db_id"), str)):
        problems.append("database must be {dataset: NAME, db_id: NAME}")
    for key in ("original", "reference", "summary"):
        if not isinstance(entry[key], str) or not entry[key].strip():
            problems.append(f"{key} must be non-empty text")
    issues = entry["issues"]
    if not isinstance(issues, list) or not issues:
        problems.append("issues must be a non-empty list")
    else:
        unknown = [i for i in issues if i not in ISSUE_TYPES]
        if unknown:
            problems.append(f"issue type(s) not in the vocabulary: {', '.join(map(str, unknown))}")
    keywords = entry.get("keywords") or []
    if not isinstance(keywords, list) or not all(isinstance(k, str) for k in keywords):
        problems.append("keywords must be a list of strings")
    return problems
