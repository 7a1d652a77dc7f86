"""Why did a prediction fail? A model reads each failure and names one category of the taxonomy.

The categories and the decision procedure the model follows are written down in
``docs/error-taxonomy.md`` and, for the model, in ``polysql/llm/prompts/classify_errors_v1.j2``. Logic
comes before syntax: a query is a ``dialect_error`` only when its logic would be right on an
engine that accepts its syntax.

Every answer must be one JSON object that validates against :data:`OUTPUT_SCHEMA`. Wrappers a
model adds around it (code fences, a sentence before or after) are tolerated; the object itself
is not repaired. An invalid answer is asked again with the bad answer and what was wrong with it
appended, so the retry is a different request (never the same cached bad answer). After
``max_attempts`` invalid answers, or when the endpoint fails past the client's own retries, the
case is :data:`UNCLASSIFIED` with the reason; :meth:`ErrorClassifier.classify` never raises for a
model's or an endpoint's failure.

The messages for a case are a pure function of the case, so the client's response cache answers a
second run over the same cases without a single request.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from typing import Any

from polysql.analysis.categories import CATEGORIES, LOGICAL, SYNTACTIC, UNCLASSIFIED
from polysql.core.errors import ConfigError, LLMError, LLMUnavailableError, ResultsStoreError
from polysql.datasets.base import GOLD_DIALECT
from polysql.llm.client import LLMClient
from polysql.llm.prompting import Prompt, engine_label, find_template

__all__ = ["CATEGORIES", "DEFAULT_TEMPLATE", "FAILURE_STATUSES", "LOGICAL", "OUTPUT_SCHEMA",
           "SYNTACTIC", "UNCLASSIFIED", "Classification", "ClassifierPrompt", "ErrorClassifier",
           "FailureCase", "case_from_record", "extract_json_object", "validate_answer"]

FAILURE_STATUSES = ("mismatch", "exec_error", "generation_failure")
DEFAULT_TEMPLATE = "classify_errors_v1"

EXPLANATION_MAX = 400
EVIDENCE_MAX = 300
# Long SQL and error texts are cut so one pathological record cannot blow the context window.
FIELD_CLIP = 4000
ANSWER_CLIP = 2000  # a rambling bad answer is echoed back only this far on a retry

# Property order matters for grammar-constrained decoding: the category is decided first.
OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "category": {"type": "string", "enum": list(CATEGORIES)},
        "explanation": {"type": "string", "minLength": 1, "maxLength": EXPLANATION_MAX},
        "evidence": {"type": "string", "minLength": 1, "maxLength": EVIDENCE_MAX},
    },
    "required": ["category", "explanation", "evidence"],
    "additionalProperties": False,
}


# --- the case ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FailureCase:
    """One failed prediction: everything the classifier may look at."""

    dataset: str
    question_id: str
    predictor: str
    engine: str
    dialect: str
    question: str
    evidence: str
    gold_sql: str
    sql: str | None
    status: str  # mismatch | exec_error | generation_failure
    signal: str  # deterministic first-pass label, e.g. "syntax_error", "wrong_row_count"
    detail: str  # the verdict reason or the engine's error message
    gold_dialect: str = GOLD_DIALECT  # the dialect the gold SQL is written in


def case_from_record(record: dict[str, Any], signal: str) -> FailureCase:
    """The :class:`FailureCase` of one ``results.jsonl`` record.

    Records written before ``question``, ``evidence`` and ``gold_sql`` were stored give ``""``
    for them, so old runs can still be classified (on less information).
    """
    missing = [key for key in ("dataset", "question_id", "predictor", "engine", "dialect",
                               "status") if not isinstance(record.get(key), str)]
    if missing:
        raise ResultsStoreError(f"results record lacks {', '.join(repr(k) for k in missing)}: "
                                f"{_short(json.dumps(record, default=str), 200)}")
    status = record["status"]
    if status not in FAILURE_STATUSES:
        raise ConfigError(f"record {record['question_id']} on {record['engine']} has status "
                          f"{status!r}; only {', '.join(FAILURE_STATUSES)} are failures to "
                          "classify")
    sql = record.get("sql")
    return FailureCase(
        dataset=record["dataset"], question_id=record["question_id"],
        predictor=record["predictor"], engine=record["engine"], dialect=record["dialect"],
        question=record.get("question") or "", evidence=record.get("evidence") or "",
        gold_sql=record.get("gold_sql") or "",
        sql=sql if isinstance(sql, str) and sql.strip() else None,
        status=status, signal=signal, detail=_record_detail(record),
        gold_dialect=record.get("gold_dialect") or GOLD_DIALECT,  # older records lack it
    )


def _record_detail(record: dict[str, Any]) -> str:
    reason = str(record.get("reason") or "")
    pred, gold = record.get("pred"), record.get("gold")
    if not reason and isinstance(pred, dict) and isinstance(pred.get("error"), dict):
        error = pred["error"]
        reason = f"{error.get('kind', 'runtime')} error: {error.get('message', '')}"
    if not reason:
        reason = str(record.get("prediction_failure") or "")
    if record["status"] == "mismatch" and isinstance(pred, dict) and isinstance(gold, dict):
        # Row counts and column names often settle the category (a COUNT(*) against a list).
        reason += (f" (gold: {_shape(gold)}; prediction: {_shape(pred)})" if reason
                   else f"gold: {_shape(gold)}; prediction: {_shape(pred)}")
    return reason


def _shape(summary: dict[str, Any]) -> str:
    rows = summary.get("row_count")
    columns = summary.get("columns") or []
    more = "+" if summary.get("truncated") else ""
    return f"{rows}{more} row(s), columns {json.dumps(columns, ensure_ascii=False)}"


# --- the answer -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Classification:
    category: str  # one of CATEGORIES or UNCLASSIFIED
    explanation: str  # one or two sentences
    evidence: str  # the SQL fragment / error text / result fact it rests on
    attempts: int  # requests made for it (1 = first answer valid; cached answers count)
    error: str | None  # why it is unclassified (last validation error or LLMError text)

    @property
    def classified(self) -> bool:
        return self.category != UNCLASSIFIED

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def extract_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in ``text``, ignoring fences and prose around it; None if none."""
    decoder = json.JSONDecoder()
    for match in re.finditer(r"\{", text):
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
    return None


class _Validator:
    """Checks answers against :data:`OUTPUT_SCHEMA` (jsonschema is imported on first use)."""

    def __init__(self) -> None:
        try:
            import jsonschema
        except ImportError as exc:
            raise ConfigError("the error classifier needs jsonschema: pip install "
                              "'polysql[llm]'") from exc
        validator_class = jsonschema.validators.validator_for(OUTPUT_SCHEMA)
        validator_class.check_schema(OUTPUT_SCHEMA)
        self._validator = validator_class(OUTPUT_SCHEMA)

    def problems(self, answer: dict[str, Any]) -> list[str]:
        found = sorted(self._validator.iter_errors(answer),
                       key=lambda error: [str(part) for part in error.absolute_path])
        return [f"{'/'.join(str(p) for p in error.absolute_path) or 'the object'}: "
                f"{_short(error.message, 200)}" for error in found]


_validator: _Validator | None = None


def _shared_validator() -> _Validator:
    global _validator
    if _validator is None:
        _validator = _Validator()
    return _validator


def validate_answer(text: str, *, cut_off: bool = False) -> tuple[dict[str, Any] | None, str]:
    """``(answer, "")`` for a valid answer, else ``(None, what was wrong)`` in words a model can
    act on. ``cut_off`` says the answer hit the token limit, which explains a missing object."""
    validator = _shared_validator()
    answer = extract_json_object(text)
    if answer is None:
        if cut_off:
            return None, ("the answer was cut off at the token limit before the JSON object was "
                          "complete; keep explanation and evidence short")
        return None, "the answer contains no JSON object"
    problems = validator.problems(answer)
    if problems:
        return None, "the JSON object does not match the required format: " + "; ".join(problems)
    return answer, ""


# --- the prompt -------------------------------------------------------------------------------------

_STATUS_TEXT = {
    "mismatch": "the predicted query ran, but its result differs from the gold result",
    "exec_error": "the predicted query failed with an error on the target engine",
    "generation_failure": "no runnable SQL query was obtained from the prediction",
}


class ClassifierPrompt:
    """Renders the classification messages for a case from a versioned Jinja2 template."""

    def __init__(self, template: str = DEFAULT_TEMPLATE) -> None:
        try:
            import jinja2
        except ImportError as exc:
            raise ConfigError("the error classifier needs Jinja2: pip install "
                              "'polysql[llm]'") from exc
        self.source = find_template(template)
        env = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False)
        try:
            self._template = env.from_string(self.source.text)
        except jinja2.TemplateSyntaxError as exc:
            raise ConfigError(f"prompt template {self.source.origin} line {exc.lineno}: "
                              f"{exc.message}") from exc
        for block in ("system", "user", "retry"):
            if block not in self._template.blocks:
                raise ConfigError(f"classifier template {self.source.origin} needs a "
                                  f"{{% block {block} %}}")

    def values(self, case: FailureCase) -> dict[str, Any]:
        return {
            "categories": list(CATEGORIES),
            "engine_label": engine_label(case.dialect, None),
            "dialect": case.dialect,
            "gold_label": engine_label(case.gold_dialect, None),
            "question": _clip(case.question),
            "evidence": _clip(case.evidence),
            "gold_sql": _clip(case.gold_sql),
            "sql": _clip(case.sql) if case.sql is not None else "",
            "status": case.status,
            "status_text": _STATUS_TEXT.get(case.status, case.status),
            "signal": case.signal,
            "detail": _clip(case.detail),
            "explanation_max": EXPLANATION_MAX,
            "evidence_max": EVIDENCE_MAX,
        }

    def render(self, case: FailureCase) -> Prompt:
        values = self.values(case)
        return Prompt(system=self._block("system", values), user=self._block("user", values),
                      template=self.source.name, version=self.source.version)

    def complaint(self, case: FailureCase, problem: str) -> str:
        """The user message that answers an invalid answer."""
        return self._block("retry", {**self.values(case), "problem": problem})

    def _block(self, name: str, values: dict[str, Any]) -> str:
        text = "".join(self._template.blocks[name](self._template.new_context(values)))
        return re.sub(r"\n{3,}", "\n\n", text).strip()


# --- the classifier ---------------------------------------------------------------------------------


class ErrorClassifier:
    """Classifies failure cases with one model; thread-safe, so cases run concurrently."""

    def __init__(self, client: LLMClient, *, max_attempts: int = 3, constrain: bool = True,
                 template: str = DEFAULT_TEMPLATE) -> None:
        if max_attempts < 1:
            raise ConfigError(f"max_attempts must be at least 1, got {max_attempts}")
        self.client = client
        self.max_attempts = max_attempts
        self.constrain = constrain
        self.prompt = ClassifierPrompt(template)
        _shared_validator()  # fail here, not in a worker thread, when jsonschema is missing
        # llama.cpp's server turns a JSON Schema in response_format into a grammar, so the model
        # cannot write anything else. Hosted APIs spell this differently, hence the flag.
        self._extra: dict[str, Any] | None = (
            {"response_format": {"type": "json_object", "schema": OUTPUT_SCHEMA}}
            if constrain else None)

    def describe(self) -> dict[str, Any]:
        """What a stored classification should record about how it was made."""
        return {"template": self.prompt.source.name, "template_version": self.prompt.source.version,
                "model": self.client.config.name, "max_attempts": self.max_attempts,
                "constrain": self.constrain}

    def messages(self, case: FailureCase) -> list[dict[str, str]]:
        """The first request's messages for ``case`` (the same on every run)."""
        return self.prompt.render(case).messages

    def classify(self, case: FailureCase) -> Classification:
        if case.sql is None:
            # Nothing was predicted, so there is no query whose logic or syntax could be judged.
            return Classification(UNCLASSIFIED, "No SQL was produced, so there is nothing to "
                                  "classify.", "", 0, f"no predicted SQL: {case.detail}")
        messages = self.messages(case)
        problem = ""
        for attempt in range(1, self.max_attempts + 1):
            try:
                completion = self.client.complete(messages, extra=self._extra)
            except LLMUnavailableError:
                # an outage says nothing about this failure: the caller stops and says the
                # taxonomy is missing, rather than filing every failure as unclassified
                raise
            except LLMError as exc:
                return Classification(UNCLASSIFIED, "The model endpoint refused the request.", "",
                                      attempt, str(exc))
            answer, problem = validate_answer(completion.text,
                                              cut_off=completion.finish_reason == "length")
            if answer is not None:
                return Classification(answer["category"], answer["explanation"].strip(),
                                      answer["evidence"].strip(), attempt, None)
            messages = [*messages,
                        {"role": "assistant", "content": _short_keep_lines(completion.text)},
                        {"role": "user", "content": self.prompt.complaint(case, problem)}]
        return Classification(UNCLASSIFIED, f"No valid answer in {self.max_attempts} "
                              "attempt(s).", "", self.max_attempts, problem)

    def classify_many(self, cases: Sequence[FailureCase], *,
                      on_done: Callable[[int, int], None] | None = None) -> list[Classification]:
        """Classifications of ``cases`` in their order, up to ``max_concurrency`` at a time.

        ``on_done(done, total)`` is called from the calling thread after each case finishes.
        Raises :class:`LLMUnavailableError` as soon as the endpoint gives no answer at all; the
        cases not yet asked are not asked.
        """
        total = len(cases)
        results: list[Classification | None] = [None] * total
        if not total:
            return []
        workers = max(1, min(self.client.config.max_concurrency, total))
        outage = threading.Event()  # set by the first worker the endpoint gave no answer

        def classify_unless_down(case: FailureCase) -> Classification | None:
            if outage.is_set():
                return None
            try:
                return self.classify(case)
            except LLMUnavailableError:
                outage.set()
                raise

        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="classify")
        try:
            futures = {pool.submit(classify_unless_down, case): index
                       for index, case in enumerate(cases)}
            for done, future in enumerate(as_completed(futures), start=1):
                results[futures[future]] = future.result()
                if on_done is not None:
                    on_done(done, total)
        except BaseException:
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        pool.shutdown(wait=True)
        return [result for result in results if result is not None]


def _clip(text: str, limit: int = FIELD_CLIP) -> str:
    text = text.strip()
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n... ({len(text) - limit} more characters cut)"


def _short_keep_lines(text: str, limit: int = ANSWER_CLIP) -> str:
    return text if len(text) <= limit else text[:limit] + " ..."


def _short(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
