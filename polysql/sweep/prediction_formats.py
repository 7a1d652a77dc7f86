"""Predictions files in the formats the benchmarks' own evaluation scripts read.

People arrive with the file their system already wrote for BIRD's or Spider's evaluation script;
this module turns such a file into polysql's entries, each with where it sits in the file (a line
or a JSON key) and, when it cannot be used, why. Three formats:

- ``jsonl``: polysql's own, one ``{"question_id", "dialect", "sql"}`` object per line. Read line by
  line by :class:`polysql.sweep.prediction_files.FilePredictor`; here it is only recognised.
- ``bird``: BIRD's ``predict_*.json``, one JSON object mapping the question's 0-based position in
  the dataset's question file (``"0"``, ``"1"``, ...) to ``"SQL\\t----- bird -----\\tdb_id"``.
- ``spider``: Spider's text file, one SQL per line, line i answering question i.

BIRD and Spider answer questions by *position*, not by id, so their entries carry an index that
only the dataset's question order turns into a question (``FilePredictor.align``). A whole file
that cannot be read raises :class:`PredictionFileError`; one bad entry is an entry with a problem,
so it costs only its own question.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from polysql.core.errors import ConfigError, PredictionFileError
from polysql.core.json_errors import json_problem

#: What BIRD's evaluation script splits each value of a predictions file on: SQL before, db_id after.
BIRD_SEPARATOR = "\t----- bird -----\t"


@dataclass(frozen=True, slots=True)
class PredictionFormat:
    """What the messages about a file of one format call its parts and how they say to fix it."""

    name: str
    units: str  # what the positions of the file are called: "lines" or "entries"
    counted: str  # the same after a number: "line(s)" or "entries"
    layout: str  # how to write the file, for a file nothing can be read from
    unknown: str  # what a prediction that matches no question is for
    unknown_hint: str  # how to fix such predictions
    dialect_fix: str  # how to point the file at other engines


_ANOTHER_SPLIT = "are these predictions for another split of the dataset?"
_DIALECT_OPTION = "or name the file's dialect with ?dialect=NAME on the --predictor spec"

FORMATS: dict[str, PredictionFormat] = {
    "jsonl": PredictionFormat(
        name="jsonl", units="lines", counted="line(s)",
        layout='write one JSON object per line: {"question_id": ..., "dialect": ..., "sql": ...}',
        unknown="question ids", unknown_hint="check their 'question_id'",
        dialect_fix="or correct the lines' 'dialect'"),
    "bird": PredictionFormat(
        name="bird", units="entries", counted="entries",
        layout=('write one JSON object mapping each question\'s index to its SQL and database: '
                '{"0": "SQL\\t----- bird -----\\tdb_id", "1": ...}'),
        unknown="question positions",
        unknown_hint=f"key \"i\" answers question i of the dataset's question file, from 0; {_ANOTHER_SPLIT}",
        dialect_fix=_DIALECT_OPTION),
    "spider": PredictionFormat(
        name="spider", units="lines", counted="line(s)",
        layout="write one SQL query per line, in the dataset's question order",
        unknown="question positions",
        unknown_hint=f"line i answers question i of the dataset's question file, from 1; {_ANOTHER_SPLIT}",
        dialect_fix=_DIALECT_OPTION),
}

#: Options a predictions-file spec may end with (``preds.json?format=bird&dialect=mysql``).
OPTIONS: dict[str, str] = {
    "format": f"the file's format ({'|'.join(FORMATS)}), detected from its content when not given",
    "dialect": ("the engine or dialect every prediction of a BIRD or Spider file is for; 'any' for "
                "every engine (default: a dialect named in the file name, else every engine)"),
}
#: ``?dialect=`` value meaning "the same SQL on every engine", as a JSONL line without dialect.
EVERY_ENGINE = "any"


@dataclass(frozen=True, slots=True)
class FileOptions:
    """The options given after ``?`` on a predictions-file spec (None: not given)."""

    format: str | None = None
    dialect: str | None = None


# A trailing "?key=value[&key=value...]": only that shape is taken for options, so a path that
# merely holds a '?' stays a path. Values hold no '/', '?' or '&'.
_OPTIONS_TAIL = re.compile(r"\?([A-Za-z_][\w-]*=[^&?/\\]*(?:&[A-Za-z_][\w-]*=[^&?/\\]*)*)$")


def split_spec_options(text: str, *, spec: str) -> tuple[str, FileOptions]:
    """``"preds.json?format=bird&dialect=mysql"`` -> ``("preds.json", FileOptions("bird", "mysql"))``.

    A file whose name really ends in such a text (it exists, the path without it does not) is
    taken as it is. An unknown key, a repeated key, an empty value or an unknown format is a
    ConfigError saying which options exist.
    """
    match = _OPTIONS_TAIL.search(text)
    if match is None:
        return text, FileOptions()
    path = text[:match.start()]
    if Path(text).exists() and not Path(path).exists():
        return text, FileOptions()
    options: dict[str, str] = {}
    for pair in match.group(1).split("&"):
        key, _, value = pair.partition("=")
        if key not in OPTIONS:
            known = "; ".join(f"{name}: {meaning}" for name, meaning in OPTIONS.items())
            raise ConfigError(f"predictor {spec!r}: unknown option {key!r} after '?'; known options: {known}")
        if key in options:
            raise ConfigError(f"predictor {spec!r}: option {key!r} is given twice")
        if not value.strip():
            raise ConfigError(f"predictor {spec!r}: option {key!r} is empty; {OPTIONS[key]}")
        options[key] = value.strip()
    fmt = options.get("format")
    if fmt is not None and fmt.lower() not in FORMATS:
        raise ConfigError(f"predictor {spec!r}: unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
    return path, FileOptions(format=fmt.lower() if fmt else None, dialect=options.get("dialect"))


# -- which format a file is in ------------------------------------------------------------------

def detect_format(data: bytes, path: Path) -> str:
    """The format of a predictions file, from its content (its suffix only breaks a tie).

    A JSON object keyed by question indexes, or whose values hold BIRD's separator (also when
    the JSON is broken: its error then says where), is ``bird``;
    lines of JSON objects (or any ``.jsonl`` file) are ``jsonl``; other text is ``spider``. A JSON
    array is none of them and raises.
    """
    text = data.removeprefix(codecs.BOM_UTF8).decode("utf-8", errors="replace")
    start = text.lstrip()[:1]
    if start == "{":
        whole = _json_or_none(text)
        if whole is not None:
            return "bird" if isinstance(whole, dict) and _looks_like_bird(whole) else "jsonl"
        # not one JSON document: lines of JSON objects, or a BIRD object broken somewhere (read as
        # BIRD, its error says where the JSON breaks instead of calling every line bad)
        first_line = text.lstrip().split("\n", 1)[0]
        broken_bird = "----- bird -----" in text and not isinstance(_json_or_none(first_line), dict)
        return "bird" if broken_bird else "jsonl"
    if start == "[" and isinstance(_json_or_none(text), list):
        raise PredictionFileError(
            f"predictions file {path} is a JSON array, which is no predictions format polysql reads; "
            f"{FORMATS['jsonl'].layout}, or {FORMATS['bird'].layout}")
    if path.suffix.lower() == ".jsonl":
        return "jsonl"
    # a SQL query never starts with '{': any such line makes this a JSONL file with bad lines
    if any(line.lstrip().startswith("{") for line in text.split("\n")):
        return "jsonl"
    return "spider"


def _json_or_none(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _looks_like_bird(obj: dict[str, Any]) -> bool:
    if any(isinstance(value, str) and BIRD_SEPARATOR in value for value in obj.values()):
        return True
    # keyed by question indexes, values broken: still BIRD, so each entry is reported as such
    return bool(obj) and all(_index(key) is not None for key in obj)


def dialect_in_file_name(path: Path, known: Collection[str]) -> str | None:
    """The dialect a BIRD-style file name names (``predict_dev_mysql.json`` -> ``mysql``), as the
    one word of its stem, split on ``_``, ``-`` and ``.``, that is in ``known``; None when none is.
    Two different such words are ambiguous and raise ConfigError saying how to choose."""
    words = [word.lower() for word in re.split(r"[_.\-\s]+", path.stem) if word]
    found = list(dict.fromkeys(word for word in words if word in known))
    if len(found) > 1:
        raise ConfigError(
            f"predictions file {path}: its name names the dialects {' and '.join(map(repr, found))}; "
            f"say which its SQL is written for with ?dialect=NAME on the --predictor spec (or "
            f"?dialect={EVERY_ENGINE} to use it on every engine)")
    return found[0] if found else None


# -- position-based files -----------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class PositionalEntry:
    """One entry of a BIRD or Spider file: which question position it answers, where it is in the
    file, and its SQL -- or why it cannot be used (``problem``; then ``sql`` is None)."""

    index: int | None  # 0-based position in the dataset's question order; None when unreadable
    sql: str | None
    line: int | None = None  # 1-based line (Spider)
    key: str | None = None  # the JSON key (BIRD)
    db_id: str | None = None  # the database the file says the question is on, to check
    problem: str | None = None


@dataclass(frozen=True, slots=True)
class PositionalFile:
    """A BIRD or Spider file read into entries, before the dataset's order gives them questions."""

    format: str
    entries: tuple[PositionalEntry, ...]
    #: Spider: how many lines the file has, and how many up to its last non-blank one (blank lines
    #: at the very end beyond the dataset's questions are layout, not predictions); BIRD: None.
    lines: int | None = None
    text_lines: int | None = None

    def count_problem(self, questions: int, dataset: str, path: Path) -> str | None:
        """Why a Spider file cannot be aligned with a dataset of ``questions`` questions, or None."""
        if self.lines is None or self.text_lines is None:
            return None
        if self.text_lines <= questions <= self.lines:
            return None
        lines = self.text_lines if self.text_lines > questions else self.lines
        return (f"predictions file {path} has {lines} line(s) but dataset {dataset} has {questions} "
                f"question(s); a {self.format} file answers by position (line i is question i in the "
                "dataset's order), so it needs exactly one line per question of the whole dataset "
                "(an empty line for a question without prediction), whatever --limit selects")


def read_positional(fmt: str, data: bytes, path: Path) -> PositionalFile:
    """Read a BIRD or Spider file (``fmt``) from its bytes."""
    if fmt == "bird":
        return read_bird(data, path)
    if fmt == "spider":
        return read_spider(data, path)
    raise ValueError(f"{fmt!r} is not a position-based format")


class _Pairs(list[tuple[str, Any]]):
    """A JSON object's (key, value) pairs in file order, repeated keys included."""


def read_bird(data: bytes, path: Path) -> PositionalFile:
    """A BIRD ``predict_*.json`` file: the whole file must be one JSON object (else it raises);
    each bad entry is kept with its problem."""
    try:
        text = data.removeprefix(codecs.BOM_UTF8).decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise PredictionFileError(
            f"predictions file {path} is not valid UTF-8 (byte 0x{data[exc.start]:02x} on line {line}); "
            "save it as UTF-8") from exc
    try:
        pairs = json.loads(text, object_pairs_hook=_Pairs)
    except json.JSONDecodeError as exc:
        raise PredictionFileError(
            f"predictions file {path} is not valid JSON ({json_problem(exc)}); "
            f"{FORMATS['bird'].layout}") from exc
    if not isinstance(pairs, _Pairs):
        raise PredictionFileError(f"predictions file {path}: expected a JSON object, got "
                                  f"{type(pairs).__name__}; {FORMATS['bird'].layout}")
    if not pairs:
        raise PredictionFileError(f"predictions file {path} is empty (an empty JSON object)")
    entries: list[PositionalEntry] = []
    first_key: dict[int, str] = {}
    for key, value in pairs:
        index = _index(key)
        if index is None:
            entries.append(PositionalEntry(
                index=None, sql=None, key=key,
                problem=f"key {key!r} is not a question index; BIRD keys are each question's 0-based "
                        "position in the dataset's question file (\"0\", \"1\", ...)"))
            continue
        if index in first_key:
            entries.append(PositionalEntry(
                index=index, sql=None, key=key,
                problem=f"duplicate entry for question index {index} (the one at entry "
                        f"{json.dumps(first_key[index])} is kept)"))
            continue
        first_key[index] = key
        entries.append(_bird_entry(index, key, value))
    return PositionalFile(format="bird", entries=tuple(entries))


def _index(key: str) -> int | None:
    stripped = key.strip()
    return int(stripped) if stripped.isascii() and stripped.isdigit() else None


def _bird_entry(index: int, key: str, value: Any) -> PositionalEntry:
    if not isinstance(value, str):
        return PositionalEntry(index=index, sql=None, key=key,
                               problem=f"expected a string \"SQL\\t----- bird -----\\tdb_id\", got "
                                       f"a JSON {_json_type(value)}")
    if BIRD_SEPARATOR not in value:
        return PositionalEntry(index=index, sql=None, key=key,
                               problem="no \"\\t----- bird -----\\t\" separator between the SQL and "
                                       "the db_id; write \"SQL\\t----- bird -----\\tdb_id\"")
    sql, _, db_id = value.rpartition(BIRD_SEPARATOR)
    if not sql.strip():
        return PositionalEntry(index=index, sql=None, key=key, db_id=db_id.strip() or None,
                               problem="empty SQL before the \"\\t----- bird -----\\t\" separator")
    return PositionalEntry(index=index, sql=sql.strip(), key=key, db_id=db_id.strip() or None)


def _json_type(value: Any) -> str:
    if isinstance(value, _Pairs):
        return "object"
    if isinstance(value, list):
        return "array"
    if value is None:
        return "null"
    return "boolean" if isinstance(value, bool) else "number"


def read_spider(data: bytes, path: Path) -> PositionalFile:
    """A Spider text file: line i (from 1) answers the question at position i - 1. A line may end
    with ``\\tdb_id`` as in Spider's gold files (the SQL is what comes before the first tab). An
    empty line or a line that is not UTF-8 is kept as an entry with its problem, so the lines after
    it still answer their own questions."""
    raw_lines = data.split(b"\n")
    if raw_lines and raw_lines[-1] == b"":
        raw_lines.pop()  # the newline ending the last line starts no line of its own
    if not raw_lines:
        raise PredictionFileError(f"predictions file {path} is empty")
    entries: list[PositionalEntry] = []
    last_text = 0
    for number, raw in enumerate(raw_lines, start=1):
        if number == 1:
            raw = raw.removeprefix(codecs.BOM_UTF8)
        raw = raw.removesuffix(b"\r")
        if raw.strip():
            last_text = number
        entries.append(_spider_entry(number, raw))
    return PositionalFile(format="spider", entries=tuple(entries), lines=len(raw_lines),
                          text_lines=last_text)


def _spider_entry(number: int, raw: bytes) -> PositionalEntry:
    index = number - 1
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return PositionalEntry(index=index, sql=None, line=number,
                               problem=f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at column "
                                       f"{exc.start + 1}); save the file as UTF-8")
    sql, tab, rest = text.partition("\t")
    db_id = rest.rsplit("\t", 1)[-1].strip() if tab else ""
    if not sql.strip():
        return PositionalEntry(index=index, sql=None, line=number, db_id=db_id or None,
                               problem="empty line: no SQL for the question at this position")
    return PositionalEntry(index=index, sql=sql.strip(), line=number, db_id=db_id or None)
