"""What a sweep is asked to do: :class:`SweepConfig`, and the defaults that come from the engines.

The default engines are not written here: every engine whose ``EngineInfo`` says
``default_sweep`` (embedded, nothing to set up) is swept, the one gold SQL is written for first.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from polysql.backends import catalog
from polysql.backends.base import DEFAULT_MAX_ROWS, DEFAULT_TIMEOUT
from polysql.datasets.base import Question

# Settings that change verdicts: resuming a run under different ones would mix incomparable records.
VERDICT_SETTINGS = ("dataset", "timeout", "max_rows", "policy")


def source_dialect() -> str:
    """The dialect datasets write gold SQL in unless a question says otherwise (the reference
    every other engine is compared against)."""
    return next(str(f.default) for f in fields(Question) if f.name == "source_dialect")


def default_engines() -> str:
    """The engines a plain ``polysql sweep`` uses, comma-separated: every engine declared
    ``default_sweep``, the one speaking the source dialect first (its copy is where gold SQL is
    at home), the others by name."""
    chosen = [info for info in catalog.infos() if info.default_sweep]
    source = source_dialect()
    chosen.sort(key=lambda info: (info.dialect != source, info.name))
    return ",".join(info.name for info in chosen)


@dataclass(slots=True)
class SweepConfig:
    dataset: str = "demo"
    engines: str | list[str] = field(default_factory=default_engines)
    predictors: str | list[str] = "gold,transpile"
    out: Path | None = None  # default: runs/<dataset name>
    timeout: float = DEFAULT_TIMEOUT
    max_rows: int = DEFAULT_MAX_ROWS
    # statements run at once per engine that serves several (None: one per core, up to four)
    workers: int | None = None
    question_ids: list[str] | None = None
    limit: int | None = None
    policy: dict[str, Any] = field(default_factory=dict)
    use_cache: bool = True  # also governs the model response cache
    fresh: bool = False
    # Model predictors: names of [models.NAME] tables in the config file; each becomes llm:NAME.
    models: str | list[str] = field(default_factory=list)
    model_config: Path | None = None  # default ./polysql.toml
    prompt_level: str = "dialect"  # generic | dialect | pitfalls
    cot: bool = False
    sample_rows: int = 0
    prompt_template: str = "text2sql"


def split_items(value: str | list[str] | None) -> list[str]:
    """Comma-separated text or a list of such items, as a flat list without blanks."""
    parts = [value] if isinstance(value, str) else list(value or [])
    return [item.strip() for part in parts for item in part.split(",") if item.strip()]
