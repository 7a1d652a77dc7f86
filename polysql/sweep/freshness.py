"""Whether a run folder's records still describe today's inputs.

A resumed sweep re-evaluates every record whose inputs changed (see :mod:`.inputs`). A report
reads the records as they are, so a predictions file fixed after the sweep, an edited question
or a replaced database would leave it printing numbers about inputs that no longer exist. This
module recomputes, without executing anything, the digests a sweep would compare -- of each
prediction, gold query and source database, and the comparison contract -- and counts the
records that no longer match them.

Checked for every record: the dataset's questions and gold queries, its source databases, and the
contract version; and the predictions themselves for predictions files and the built-in
predictors (gold, transpile, native-gold). Not checked: what a model was asked (its prompt
ingredients depend on a model config a report does not have) and databases on engines polysql
did not build (that needs a connection).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from polysql.core.errors import PolysqlError
from polysql.core.paths import path_in
from polysql.core.predictor import Predictor, TargetEngine
from polysql.core.store import ResultsStore, read_run_info, sweep_folder
from polysql.datasets.base import Dataset, Question
from polysql.datasets.registry import get_dataset, spec_in
from polysql.engines.fingerprints import source_fingerprint
from polysql.sweep.inputs import CONTRACT, gold_digest
from polysql.sweep.prediction_files import FilePredictor
from polysql.sweep.predictors import BUILTIN_PREDICTORS, make_predictor

#: What a changed input is called in the message, by the key records keep it under.
_WHAT = {"prediction": "predictions", "gold": "gold queries", "database": "source databases",
         "contract": "comparison contract", "question": "questions (no longer in the dataset)"}


@dataclass(slots=True)
class Freshness:
    """How many of a run folder's records were made from inputs that have changed since."""

    run_dir: Path
    checked: int = 0
    stale: int = 0
    #: stale records per changed input ("prediction", "gold", "database", "contract", "question")
    changed: Counter[str] = field(default_factory=Counter)
    #: predictors whose stale records these are
    predictors: set[str] = field(default_factory=set)
    #: why nothing could be checked (the dataset or a predictions file cannot be read now)
    problem: str | None = None

    def message(self) -> str | None:
        """What a report prints about this run's freshness; None when every checked record is
        current and nothing stopped the check."""
        if self.problem is not None:
            return (f"{self.run_dir}: cannot tell whether its records are current: {self.problem}")
        if not self.stale:
            return None
        what = ", ".join(_WHAT[key] for key, _ in self.changed.most_common())
        return (f"{self.run_dir}: {self.stale} of {self.checked} records were judged on inputs "
                f"that have changed since ({what}; predictors {', '.join(sorted(self.predictors))})"
                f"; their numbers are stale -- re-run the same `polysql sweep` with "
                f"--out {self.run_dir} to re-evaluate them")


def check_freshness(run_dir: Path) -> Freshness:
    """Compare every latest record of ``run_dir`` with today's inputs (nothing is executed)."""
    freshness = Freshness(run_dir)
    info = read_run_info(run_dir)
    records = ResultsStore(run_dir).latest_records()
    if info is None or not records:
        return freshness
    folder = sweep_folder(info)  # run.json's paths are as the sweep was given them there
    try:
        dataset = get_dataset(spec_in(folder, str(info.get("dataset_spec", ""))))
        predictors = _predictors(info.get("predictors", []), dataset, folder)
        _compare(freshness, records, dataset, predictors)
    except (PolysqlError, OSError) as exc:  # a dataset, file or database gone since
        return Freshness(run_dir, problem=str(exc))
    return freshness


def _predictors(described: list[Any], dataset: Dataset,
                folder: Path | None) -> dict[str, Predictor[Question]]:
    """The run's predictors that can be rebuilt without a model: files (their paths read from
    ``folder``) and built-ins."""
    predictors: dict[str, Predictor[Question]] = {}
    for entry in described:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            continue
        name = entry["name"]
        if "path" in entry:
            options = "&".join(f"{key}={entry[key]}" for key in ("format", "dialect") if key in entry)
            path = path_in(folder, str(entry["path"]))
            predictor = make_predictor(f"{name}={path}" + (f"?{options}" if options else ""))
            if isinstance(predictor, FilePredictor):
                predictor.align(dataset.questions, dataset=dataset.name)
            predictors[name] = predictor
        elif name in BUILTIN_PREDICTORS:
            predictors[name] = make_predictor(name)
    return predictors


def _compare(freshness: Freshness, records: list[dict[str, Any]], dataset: Dataset,
             predictors: dict[str, Predictor[Question]]) -> None:
    questions = {q.id: q for q in dataset.questions}
    fingerprints: dict[str, str] = {}

    def database(db_id: str) -> str:
        if db_id not in fingerprints:
            fingerprints[db_id] = source_fingerprint(dataset, db_id)
        return fingerprints[db_id]

    for record in records:
        if record.get("dataset") != dataset.name:
            continue
        recorded = record.get("inputs")
        if not isinstance(recorded, dict):
            continue  # a record from before inputs were kept: nothing to compare with
        predictor = predictors.get(str(record.get("predictor")))
        freshness.checked += 1
        question = questions.get(str(record.get("question_id")))
        if question is None:
            changed = ["question"]
        else:
            today = {"gold": gold_digest(question), "database": database(question.db_id),
                     "contract": CONTRACT}
            if predictor is not None:  # a model's prompt is not rebuilt (see the docstring)
                engine = TargetEngine(name=str(record.get("engine")),
                                      dialect=str(record.get("dialect")))
                today["prediction"] = predictor.input_digest(question, engine)
            changed = [key for key, digest in today.items() if recorded.get(key) != digest]
        if changed:
            freshness.stale += 1
            freshness.changed.update(changed)
            freshness.predictors.add(str(record.get("predictor")))
