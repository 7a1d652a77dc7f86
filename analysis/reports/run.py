"""``polysql report``: merge run folders, classify failures (optionally, with a model), compute
the findings and write them out. The one place the report's stages are put together."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from polysql.analysis.classify import ErrorClassifier, case_from_record
from polysql.analysis.findings import Findings, Settings, analyze
from polysql.analysis.outcomes import Outcomes, load_runs
from polysql.analysis.reports.analysis import write_analysis
from polysql.analysis.signals import detail, signal
from polysql.core.errors import ConfigError, LLMUnavailableError
from polysql.core.store import RecordKey, record_key
from polysql.llm.client import LLMClient, ResponseCache, load_model_configs

CLASSIFICATIONS_FILE = "classifications.jsonl"

Progress = Callable[[int, int], None]


@dataclass(frozen=True, slots=True)
class ClassifierSpec:
    model: str  # a [models.NAME] of polysql.toml
    config: Path | None = None  # default ./polysql.toml
    max_attempts: int = 3
    use_cache: bool = True
    # JSON-schema constrained decoding (llama.cpp, vLLM); hosted APIs that reject it need False
    constrain: bool = True


@dataclass(slots=True)
class ReportOutcome:
    findings: Findings
    out_dir: Path
    paths: list[Path]
    classified: int  # failures the classifier was asked about
    usage: dict[str, Any] | None  # what the classifier's model cost
    # why the error taxonomy is missing although --classify asked for it (the endpoint's outage)
    classifier_unavailable: str | None = None


def default_out_dir(run_dirs: Sequence[str | Path]) -> Path:
    """Next to the run for one run folder; a folder of its own in the working directory for
    several (no run folder owns a merged report)."""
    return Path(run_dirs[0]) / "analysis" if len(run_dirs) == 1 else Path("polysql-report")


def classify_failures(outcomes: Outcomes, spec: ClassifierSpec, out_dir: Path,
                      progress: Progress | None = None) -> tuple[dict[RecordKey, str], dict[str, Any]]:
    """Ask the model about every failed record; write each answer to classifications.jsonl."""

    configs = load_model_configs(spec.config)
    if spec.model not in configs:
        raise ConfigError(f"no model {spec.model!r} in {spec.config or 'polysql.toml'}; "
                          f"defined: {', '.join(sorted(configs)) or 'none'}")
    failures = outcomes.failures()
    cases = [case_from_record(r, signal(r) or "wrong_values") for r in failures]
    cache = ResponseCache() if spec.use_cache else None
    client = LLMClient(configs[spec.model], cache=cache)
    try:
        answers = ErrorClassifier(client, max_attempts=spec.max_attempts,
                                  constrain=spec.constrain).classify_many(
            cases, on_done=progress)
        usage = client.stats.to_dict()
    finally:
        client.close()
        if cache is not None:
            cache.close()
    out_dir.mkdir(parents=True, exist_ok=True)
    with (out_dir / CLASSIFICATIONS_FILE).open("w", encoding="utf-8") as fh:
        for record, case, answer in zip(failures, cases, answers, strict=True):
            fh.write(json.dumps({"key": list(record_key(record)), "signal": case.signal,
                                 "detail": detail(record)[:500], **asdict(answer)}) + "\n")
    return {record_key(r): a.category for r, a in zip(failures, answers, strict=True)}, usage


def build_report(run_dirs: Sequence[str | Path], out_dir: Path | None = None,
                 settings: Settings | None = None, classifier: ClassifierSpec | None = None,
                 progress: Progress | None = None, warnings: Sequence[str] = ()) -> ReportOutcome:
    """Analyse the runs and write the report. ``warnings``: said first among the report's notes
    (the caller's checks on the runs, e.g. that their records are stale)."""

    outcomes = load_runs(run_dirs)
    out = out_dir or default_out_dir(run_dirs)
    categories, usage, unavailable = None, None, None
    if classifier is not None:
        try:
            categories, usage = classify_failures(outcomes, classifier, out, progress)
        except LLMUnavailableError as exc:
            unavailable = str(exc)
            # an earlier report's answers would sit beside a report that has no taxonomy
            (out / CLASSIFICATIONS_FILE).unlink(missing_ok=True)
    findings = analyze(outcomes, settings, categories)
    if unavailable is not None:
        findings.notes.insert(0, f"No error taxonomy: the classifier endpoint gave no answer "
                                 f"({unavailable}). Every other table is complete; run the report "
                                 f"again once the endpoint answers.")
    findings.notes[:0] = list(warnings)
    paths = write_analysis(findings, out)
    if categories is not None:
        paths.append(out / CLASSIFICATIONS_FILE)
    return ReportOutcome(findings, out, paths, len(categories or {}), usage, unavailable)
