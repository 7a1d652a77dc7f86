"""Predictions a system wrote to a file: read, checked line by line, and matched to questions.

The file is the system's output, so one bad line affects only itself (reported as file:line and
skipped); :meth:`FilePredictor.audit` says how the file covers a sweep, and a file answering
nothing of it is an error. Formats: polysql's JSONL, BIRD's ``predict_*.json`` and Spider's text
files (:mod:`polysql.sweep.prediction_formats`).
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from polysql.core.errors import ConfigError, PredictionFileError
from polysql.core.json_errors import json_problem
from polysql.core.predictor import Prediction, Predictor, TargetEngine
from polysql.datasets.base import Question
from polysql.engines.registry import alias_names
from polysql.sweep.dialect_names import (
    engine_keys,
    is_known_dialect,
    known_dialect_names,
    unknown_dialect,
)
from polysql.sweep.prediction_formats import (
    EVERY_ENGINE,
    FORMATS,
    PositionalEntry,
    PositionalFile,
    detect_format,
    dialect_in_file_name,
    read_positional,
)
from polysql.sweep.text_checks import first_text_problem, text_problem


@dataclass(slots=True)
class FileProblem:
    """A line (or, in a BIRD JSON file, an entry) of a predictions file that was skipped, with
    where and why."""

    path: str
    line: int | None
    message: str
    key: str | None = None  # the entry's key in a BIRD file, which has no line per entry

    def __str__(self) -> str:
        if self.key is not None:
            return f"{self.path}: entry {json.dumps(self.key)}: {self.message}"
        return f"{self.path}:{self.line}: {self.message}"


@dataclass(frozen=True, slots=True)
class _Entry:
    """One question's prediction from one line (or BIRD entry): its SQL, or why it is unusable."""

    line: int | None
    sql: str | None
    failure: str | None = None
    key: str | None = None  # BIRD: the entry's key

    @property
    def where(self) -> str:
        return _where(self.line, self.key)

    def meta(self) -> dict[str, Any]:
        """Where the prediction came from, kept in its record."""
        return {"entry": self.key} if self.key is not None else {"line": self.line}


def _where(line: int | None, key: str | None) -> str:
    """Where a prediction is in its file, for messages: ``line 3``, or ``entry "3"`` in BIRD's."""
    return f"entry {json.dumps(key)}" if key is not None else f"line {line}"


_Key = tuple[str, str | None]  # (question id, lower-case dialect or None for every engine)
_EXAMPLES = 5  # file:line examples kept per kind of coverage problem


@dataclass(frozen=True, slots=True)
class FileAudit:
    """How a predictions file covers a sweep: what it answers and what it would silently drop.

    Every line holding a prediction lands in at most one of: ``unknown_questions`` (its question
    id is not in the dataset), ``unknown_dialects`` (its dialect names nothing polysql knows),
    ``unswept_lines`` (a known engine or dialect that this sweep does not run) -- or it applies.
    """

    path: str
    dataset: str
    predictions: int  # lines holding a prediction, usable or invalid_prediction
    skipped_lines: int  # lines reported as problems (bad JSON, bad bytes, duplicates...)
    first_problem: FileProblem | None
    first_prediction: tuple[str, str] | None  # (what it answers: "id 'q1'", where: "line 1")
    unknown_questions: int
    unknown_question_lines: tuple[FileProblem, ...]  # the first few
    unknown_dialects: int
    unknown_dialect_lines: tuple[FileProblem, ...]  # the first few
    unswept_lines: int
    unswept_dialects: tuple[str, ...]
    selected_questions: int  # questions this sweep runs
    selected_predictions: int  # prediction lines for one of those questions (any dialect)
    engines: tuple[str, ...]
    answered: int  # swept (question, engine) pairs the file gives a line for
    pairs: int  # swept (question, engine) pairs
    format: str = "jsonl"  # the file's format, for the wording of messages

    def warnings(self) -> list[str]:
        """One line per coverage problem, for the sweep to print; empty when all is well."""
        lines: list[str] = []
        fmt = FORMATS[self.format]
        if self.unknown_questions:
            lines.append(
                f"{self.path}: {self.unknown_questions} prediction(s) for {fmt.unknown} not in dataset "
                f"{self.dataset} are ignored: "
                f"{_listing(self.unknown_question_lines, self.unknown_questions)}; {fmt.unknown_hint}"
            )
        if self.unknown_dialects:
            lines.append(
                f"{self.path}: {self.unknown_dialects} prediction(s) name a dialect polysql does not know "
                f"and are ignored: {_listing(self.unknown_dialect_lines, self.unknown_dialects)}; use an "
                f"engine name ({', '.join(alias_names())}) or a sqlglot dialect name"
            )
        if self.unswept_lines:
            lines.append(
                f"{self.path}: {self.unswept_lines} {fmt.counted} for engines not swept: "
                f"{', '.join(self.unswept_dialects)} (add them to --engines to evaluate them)"
            )
        if 0 < self.answered < self.pairs:
            lines.append(
                f"{self.path}: answers {self.answered} of the {self.pairs} (question, engine) pairs of this "
                f"sweep; the other {self.pairs - self.answered} are recorded as missing_prediction"
            )
        return lines

    def require_match(self) -> None:
        """Raise PredictionFileError when the file answers none of the swept (question, engine)
        pairs: a sweep of it would only record missing_prediction, which is never what was meant."""
        if self.answered or not self.pairs:
            return
        fmt = FORMATS[self.format]
        if not self.predictions or self.first_prediction is None:
            first = f" (first: {self.first_problem})" if self.first_problem else ""
            raise PredictionFileError(
                f"{self.path}: none of its {self.skipped_lines} {fmt.counted} holds a usable "
                f"prediction{first}; {fmt.layout}"
            )
        answers, where = self.first_prediction
        # Lines that could not be read are told too: fixing the ids alone would not be enough.
        unread = (f"; {self.skipped_lines} more line(s) could not be read (first: "
                  f"{self.first_problem})" if self.skipped_lines and self.first_problem else "")
        if self.unknown_questions == self.predictions:
            raise PredictionFileError(
                f"{self.path}: none of its {self.predictions} predictions matches a question of dataset "
                f"{self.dataset} (first {answers} at {where}); are these predictions for another "
                f"dataset?{unread}"
            )
        if not self.selected_predictions:
            raise PredictionFileError(
                f"{self.path}: none of its {self.predictions} predictions is for the "
                f"{self.selected_questions} question(s) selected from dataset {self.dataset} (first "
                f"{answers} at {where}); check --question and --limit{unread}"
            )
        named = [", ".join(self.unswept_dialects)] if self.unswept_dialects else []
        if self.unknown_dialect_lines:
            named.append(f"unknown dialects (e.g. {self.unknown_dialect_lines[0]})")
        raise PredictionFileError(
            f"{self.path}: none of its predictions for the selected questions is for the swept "
            f"engine(s) {', '.join(self.engines)}; its {fmt.units} are for {' and '.join(named)}: sweep "
            f"those with --engines, {fmt.dialect_fix}"
        )


def _listing(examples: Sequence[FileProblem], total: int) -> str:
    more = f" and {total - len(examples)} more" if total > len(examples) else ""
    return "; ".join(str(p) for p in examples) + more


class FilePredictor(Predictor[Question]):
    """Predictions read from a file: polysql's JSONL, or BIRD's or Spider's (``format``; detected
    from the content when None, see :mod:`polysql.sweep.prediction_formats`).

    JSONL: each line ``{"question_id": ..., "dialect": ..., "sql": ...}``. ``dialect`` names the
    engine (``duckdb``), its sqlglot dialect (``postgres``) or another name of its backend
    (``postgresql``); ``engine`` is accepted as a synonym. A line without ``dialect`` applies to
    every engine.

    BIRD and Spider files answer questions by position, so they need the dataset's question
    order (:meth:`align`) before predicting. Their ``dialect`` is one for the whole file: the one
    given, else one named in the file name, else every engine (``dialect="any"`` says so).

    The file is the system's output, so one bad line affects only itself: it is collected in
    ``problems`` (file:line, what is wrong, how to fix it) and skipped. When its question id and
    dialect can still be read, that (question, engine) is recorded as ``invalid_prediction`` with
    the reason instead of ``missing_prediction``. A (question, engine) with no line at all is
    ``missing_prediction``, so the denominator stays whole; :meth:`audit` says which lines a
    sweep would not use at all.
    """

    def __init__(self, path: str | Path, name: str | None = None, *, format: str | None = None,
                 dialect: str | None = None) -> None:
        self.path = Path(path)
        self.name = name or f"file:{self.path.stem}"
        self.problems: list[FileProblem] = []
        self._by_key: dict[_Key, _Entry] = {}
        self.format = "jsonl"
        self.dialect: str | None = None  # BIRD and Spider: the one dialect of the whole file
        self._positional: PositionalFile | None = None  # BIRD and Spider, until aligned
        self._aligned = False
        self._outside: list[PositionalEntry] = []  # positional entries past the dataset's questions
        self._read(format, dialect)

    def describe(self) -> dict[str, Any]:
        usable = sum(1 for entry in self._by_key.values() if entry.sql is not None)
        described = {"name": self.name, "path": str(self.path), "predictions": usable,
                     "skipped_lines": len(self.problems)}
        if self._positional is not None:
            described |= {"format": self.format, "dialect": self.dialect or EVERY_ENGINE}
        return described

    # -- reading ---------------------------------------------------------------------------------
    def _read(self, format: str | None, dialect: str | None) -> None:
        if not self.path.exists():
            raise PredictionFileError(f"predictions file {self.path} does not exist")
        try:
            data = self.path.read_bytes()
        except OSError as exc:
            raise PredictionFileError(f"cannot read predictions file {self.path}: {exc}") from exc
        if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
            raise PredictionFileError(f"predictions file {self.path} is UTF-16 or UTF-32 text (it starts "
                                      "with such a byte order mark); save it as UTF-8")
        if not data.removeprefix(codecs.BOM_UTF8).strip():
            raise PredictionFileError(f"predictions file {self.path} is empty")
        if format is not None and format not in FORMATS:
            raise ConfigError(f"predictions file {self.path}: unknown format {format!r}; use one of "
                              f"{', '.join(FORMATS)}")
        self.format = format or detect_format(data, self.path)
        if self.format == "jsonl":
            if dialect is not None:
                raise ConfigError(
                    f"predictions file {self.path} is JSONL, whose lines each give their 'dialect'; "
                    "?dialect= is for BIRD and Spider files (add ?format=bird or ?format=spider if "
                    "that is what it is)")
            self._read_jsonl(data)
        else:
            self.dialect = self._file_dialect(dialect)
            self._positional = read_positional(self.format, data, self.path)

    def _file_dialect(self, given: str | None) -> str | None:
        """The one dialect of a BIRD or Spider file, or None for every engine."""
        if given is None:
            return dialect_in_file_name(self.path, known_dialect_names())
        name = given.strip().lower()
        if name == EVERY_ENGINE:
            return None
        if not is_known_dialect(name):
            raise ConfigError(f"predictions file {self.path}: {unknown_dialect(name)} is not one polysql "
                              f"knows; use an engine name ({', '.join(alias_names())}), a sqlglot "
                              f"dialect name, or {EVERY_ENGINE!r} for every engine")
        return name

    def _read_jsonl(self, data: bytes) -> None:
        # Bytes, split on b"\n" only: one bad byte spoils its own line, never the file, and the
        # line numbers are the ones an editor shows (str.splitlines would also split on U+2028).
        for number, raw in enumerate(data.split(b"\n"), start=1):
            if number == 1:
                raw = raw.removeprefix(codecs.BOM_UTF8)
            raw = raw.removesuffix(b"\r")
            if raw.strip():
                self._read_line(number, raw)
        if not self._by_key and not self.problems:
            raise PredictionFileError(f"predictions file {self.path} is empty")

    def _read_line(self, number: int, raw: bytes) -> None:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            why = (f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1}); "
                   "save the file as UTF-8")
            # the bad bytes become lone surrogates here, so an id or dialect holding one is not
            # taken for a real one
            obj = _json_object(raw.decode("utf-8", errors="surrogateescape"))
            self._reject(number, why, _identify(obj) if obj is not None else None)
            return
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            self._reject(number, f"not valid JSON ({json_problem(exc, line=False)})", None)
            return
        if not isinstance(obj, dict):
            self._reject(number, f"expected a JSON object, got {type(obj).__name__}", None)
            return
        key = _identify(obj)
        why = _line_problem(obj)
        if why is not None:
            self._reject(number, why, key)
            return
        assert key is not None  # _line_problem checked the id and dialect
        earlier = self._by_key.get(key)
        if earlier is not None:
            where = f"dialect {key[1]!r}" if key[1] is not None else "every engine"
            self._add_problem(number, f"duplicate prediction for question {key[0]!r} {where} (the one at "
                                      f"line {earlier.line} is kept)")
            return
        self._by_key[key] = _Entry(line=number, sql=obj["sql"])

    def _add_problem(self, number: int, message: str) -> FileProblem:
        problem = FileProblem(str(self.path), number, message)
        self.problems.append(problem)
        return problem

    def _reject(self, number: int, why: str, key: _Key | None) -> None:
        problem = self._add_problem(number, why)
        # The line was meant for this question: say so in its record rather than "missing".
        if key is not None and key not in self._by_key:
            self._by_key[key] = _Entry(line=number, sql=None, failure=f"invalid_prediction: {problem}")

    # -- position-based files: the dataset's order gives each entry its question -----------------
    def align(self, questions: Sequence[Question], *, dataset: str = "") -> None:
        """Give a BIRD or Spider file the dataset's question order: its entry at position i
        answers ``questions[i]`` (the whole dataset, in ``Dataset.questions`` order, whatever a
        sweep selects). Nothing to do for JSONL, whose lines name their question.

        A Spider file must have one line per question (else PredictionFileError, giving both
        counts). An entry whose db_id is not its question's database, whose SQL is empty or not
        valid text is reported and recorded as ``invalid_prediction``; entries past the last
        question are kept for :meth:`audit` to report like unknown question ids. Calling it again
        starts over.
        """
        positional = self._positional
        if positional is None:
            return
        name = dataset or "the dataset"
        count_problem = positional.count_problem(len(questions), name, self.path)
        if count_problem is not None:
            raise PredictionFileError(count_problem)
        self._by_key, self.problems, self._outside = {}, [], []
        for entry in positional.entries:
            if entry.index is not None and entry.index >= len(questions):
                if entry.key is not None:  # BIRD; a Spider file's lines past the last question are blank
                    self._outside.append(entry)
                continue
            question = questions[entry.index] if entry.index is not None else None
            why = entry.problem or _positional_problem(entry, question, name)
            if why is None:
                assert question is not None and entry.sql is not None
                self._by_key[(question.id, self.dialect)] = _Entry(line=entry.line, sql=entry.sql,
                                                                   key=entry.key)
                continue
            problem = FileProblem(str(self.path), entry.line, why, key=entry.key)
            self.problems.append(problem)
            if question is not None and (question.id, self.dialect) not in self._by_key:
                self._by_key[(question.id, self.dialect)] = _Entry(
                    line=entry.line, sql=None, failure=f"invalid_prediction: {problem}", key=entry.key)
        self._aligned = True

    def _require_aligned(self) -> None:
        if self._positional is not None and not self._aligned:
            raise PredictionFileError(
                f"predictions file {self.path} is a {self.format} file, which answers questions by "
                "position: align() it with the dataset's questions before predicting")

    # -- predicting ------------------------------------------------------------------------------
    def _entry(self, question_id: str, engine: str, dialect: str) -> _Entry | None:
        for key in (*engine_keys(engine, dialect), None):
            entry = self._by_key.get((question_id, key))
            if entry is not None:
                return entry
        return None

    def predict(self, question: Question, engine: TargetEngine) -> Prediction:
        self._require_aligned()
        entry = self._entry(question.id, engine.name, engine.dialect)
        if entry is None:
            return Prediction(sql=None, failure="missing_prediction")
        if entry.sql is None:
            return Prediction(sql=None, failure=entry.failure, meta=entry.meta())
        return Prediction(sql=entry.sql, meta=entry.meta())

    def audit(self, question_ids: Collection[str], engines: Sequence[tuple[str, str]], *,
              selected: Collection[str] | None = None, dataset: str = "") -> FileAudit:
        """How this file covers a sweep. ``question_ids``: every question id of the dataset;
        ``engines``: the swept (engine name, sqlglot dialect) pairs; ``selected``: the question ids
        the sweep runs (default: all); ``dataset``: its name, for messages."""
        self._require_aligned()
        known_ids = set(question_ids)
        chosen = known_ids if selected is None else set(selected)
        swept_keys = {key for name, dialect in engines for key in engine_keys(name, dialect)}
        unknown_ids: list[FileProblem] = []
        unknown_dialects: list[FileProblem] = []
        unswept: dict[str, int] = {}
        selected_lines = 0
        for (qid, dialect), entry in self._by_key.items():
            if qid not in known_ids:
                unknown_ids.append(FileProblem(str(self.path), entry.line, f"question id {qid!r}",
                                               key=entry.key))
                continue
            selected_lines += qid in chosen
            if dialect is None or dialect in swept_keys:
                continue
            if is_known_dialect(dialect):
                unswept[dialect] = unswept.get(dialect, 0) + 1
            else:
                unknown_dialects.append(FileProblem(str(self.path), entry.line, unknown_dialect(dialect),
                                                    key=entry.key))
        answered = sum(
            1 for qid in chosen for name, dialect in engines if self._entry(qid, name, dialect) is not None
        )
        # positional entries past the dataset's last question: unknown questions too
        unknown_ids += [FileProblem(str(self.path), entry.line, f"question index {entry.index}", key=entry.key)
                        for entry in self._outside]
        first = next(iter(self._by_key.items()), None)
        first_prediction = (f"id {first[0][0]!r}", first[1].where) if first else None
        if first_prediction is None and self._outside:
            outside = self._outside[0]
            first_prediction = (f"index {outside.index}", _where(outside.line, outside.key))
        return FileAudit(
            path=str(self.path), dataset=dataset or "the dataset",
            predictions=len(self._by_key) + len(self._outside),
            skipped_lines=len(self.problems), first_problem=self.problems[0] if self.problems else None,
            first_prediction=first_prediction, format=self.format,
            unknown_questions=len(unknown_ids), unknown_question_lines=tuple(unknown_ids[:_EXAMPLES]),
            unknown_dialects=len(unknown_dialects),
            unknown_dialect_lines=tuple(unknown_dialects[:_EXAMPLES]),
            unswept_lines=sum(unswept.values()), unswept_dialects=tuple(sorted(unswept)),
            selected_questions=len(chosen), selected_predictions=selected_lines,
            engines=tuple(name for name, _ in engines), answered=answered,
            pairs=len(chosen) * len(engines),
        )


def _positional_problem(entry: PositionalEntry, question: Question | None, dataset: str) -> str | None:
    """What makes a readable BIRD or Spider entry unusable for the question at its position."""
    if question is not None and entry.db_id is not None and entry.db_id != question.db_id:
        return (f"db_id {entry.db_id!r}, but question {entry.index} of {dataset} (id {question.id!r}) is on "
                f"database {question.db_id!r}; entries must follow the dataset's question order")
    surrogate = text_problem(entry.sql) if entry.sql is not None else None
    if surrogate:
        return (f"'sql' holds a {surrogate}, which is not valid Unicode (a \\ud800-\\udfff escape "
                "without its pair); write the character itself or a complete surrogate pair")
    return None


def _json_object(text: str) -> dict[str, Any] | None:
    try:
        obj = json.loads(text)
    except json.JSONDecodeError:
        return None
    return obj if isinstance(obj, dict) else None


def _identify(obj: dict[str, Any]) -> _Key | None:
    """The (question id, dialect) a line is for, or None when they cannot be read for sure."""
    qid = obj.get("question_id")
    dialect = obj.get("dialect", obj.get("engine"))
    if qid is None or isinstance(qid, (dict, list, bool)) or not str(qid).strip():
        return None
    if dialect is not None and not isinstance(dialect, str):
        return None
    if text_problem(str(qid)) or (dialect and text_problem(dialect)):
        return None
    return str(qid), (dialect.strip().lower() or None) if dialect else None


def _line_problem(obj: dict[str, Any]) -> str | None:
    """What is wrong with a parsed line and how to fix it, or None when it is a usable prediction."""
    surrogate = first_text_problem(obj)
    if surrogate:
        return (f"{surrogate}, which is not valid Unicode (a \\ud800-\\udfff escape without its "
                "pair); write the character itself or a complete surrogate pair")
    qid = obj.get("question_id")
    if qid is None or isinstance(qid, (dict, list, bool)) or not str(qid).strip():
        return "missing or invalid 'question_id' (must be a string or a number)"
    dialect = obj.get("dialect", obj.get("engine"))
    if dialect is not None and not isinstance(dialect, str):
        return "'dialect' must be a string (an engine name such as duckdb) or left out"
    if not isinstance(obj.get("sql"), str):
        return "missing 'sql' (must be a string)"
    return None
