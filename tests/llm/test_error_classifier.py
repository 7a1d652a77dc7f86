"""The LLM error classifier: prompt, answer validation, retries, caching, and a real model.

The scripted endpoint (``openai_emulator`` in conftest.py) plays a remote service whose answers and
failures are set per test; every request crosses a socket through the real client, and the tests
read what the endpoint received. The last tests run the classifier against llama.cpp's server with
SmolLM2-135M: its categories are not judged (the model is tiny), only that real answers come back
valid or end unclassified, constrained decoding yields valid objects, and order is kept.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from polysql.analysis.classify import (
    CATEGORIES,
    EVIDENCE_MAX,
    EXPLANATION_MAX,
    LOGICAL,
    OUTPUT_SCHEMA,
    SYNTACTIC,
    UNCLASSIFIED,
    Classification,
    ClassifierPrompt,
    ErrorClassifier,
    FailureCase,
    case_from_record,
    extract_json_object,
    validate_answer,
)
from polysql.core.errors import ConfigError, LLMUnavailableError, ResultsStoreError
from polysql.llm.cache import response_key
from polysql.llm.client import LLMClient, ModelConfig, ResponseCache

pytest.importorskip("jsonschema", reason="the classifier validates answers with jsonschema")
pytest.importorskip("jinja2", reason="the classifier's prompt is a Jinja2 template")


def make_case(**overrides: Any) -> FailureCase:
    fields: dict[str, Any] = {
        "dataset": "demo", "question_id": "demo-007", "predictor": "llm:smol",
        "engine": "postgres", "dialect": "postgres",
        "question": "How many singers are older than 30?",
        "evidence": "older than 30 means age > 30",
        "gold_sql": "SELECT COUNT(*) FROM singer WHERE age > 30",
        "sql": "SELECT COUNT(*) FROM singer WHERE age >= 30",
        "status": "mismatch", "signal": "wrong_values",
        "detail": "values differ in row 1: gold 4, prediction 5",
    }
    fields.update(overrides)
    return FailureCase(**fields)


def answer(category: str = "filtering_error", **overrides: Any) -> str:
    body = {"category": category,
            "explanation": "The prediction keeps singers aged exactly 30.",
            "evidence": "WHERE age >= 30"}
    body.update(overrides)
    return json.dumps(body)


def config_for(base_url: str, **overrides: Any) -> ModelConfig:
    settings: dict[str, Any] = {"max_retries": 1, "timeout": 5.0, "backoff_base": 0.01,
                                "params": {"temperature": 0}, "max_concurrency": 1}
    settings.update(overrides)
    return ModelConfig(name="emulated", base_url=base_url, model="emulated-model-1", **settings)


def sent_messages(endpoint: Any, index: int) -> list[dict[str, str]]:
    return list(endpoint.requests[index].body["messages"])


# --- the categories ---------------------------------------------------------------------------------


def test_categories_split_into_logical_syntactic_and_evaluation() -> None:
    assert set(CATEGORIES) == LOGICAL | SYNTACTIC | {"invalid_evaluation"}
    assert not LOGICAL & SYNTACTIC
    assert UNCLASSIFIED not in CATEGORIES
    assert OUTPUT_SCHEMA["properties"]["category"]["enum"] == list(CATEGORIES)


# --- the prompt -------------------------------------------------------------------------------------


def test_prompt_shows_the_case_and_the_procedure_in_order() -> None:
    case = make_case()
    prompt = ClassifierPrompt().render(case)

    assert (prompt.template, prompt.version) == ("classify_errors", "1")
    # The decision procedure: is the answer right after all, then logic, then the dialect.
    steps = [prompt.system.index(f"{n}. {name}:") for n, name in enumerate(
        ("invalid_evaluation", "schema_linking_error", "filtering_error", "aggregation_error",
         "dialect_error"), start=1)]
    assert steps == sorted(steps)
    assert "logic comes before syntax" in " ".join(prompt.system.split())
    assert "The gold query is written for SQLite" in prompt.system
    for text in ("Target engine: PostgreSQL (dialect postgres)",
                 "Question: How many singers are older than 30?",
                 "Hint: older than 30 means age > 30",
                 "Gold query (written for SQLite):\n```sql\nSELECT COUNT(*) FROM singer WHERE age > 30\n```",
                 "Predicted query (run on PostgreSQL):\n```sql\n"
                 "SELECT COUNT(*) FROM singer WHERE age >= 30\n```",
                 "Outcome: the predicted query ran, but its result differs from the gold result.",
                 "Signal: wrong_values",
                 "Detail: values differ in row 1: gold 4, prediction 5"):
        assert text in prompt.user, text
    assert [m["role"] for m in prompt.messages] == ["system", "user"]


def test_prompt_is_the_same_text_on_every_render() -> None:
    first = ClassifierPrompt().render(make_case())
    second = ClassifierPrompt().render(make_case())
    other = ClassifierPrompt().render(make_case(sql="SELECT COUNT(*) FROM singer"))

    assert first.messages == second.messages and first.hash == second.hash
    assert other.hash != first.hash


def test_prompt_for_an_old_record_marks_what_was_not_recorded() -> None:
    prompt = ClassifierPrompt().render(make_case(question="", evidence="", gold_sql="",
                                                 status="exec_error", detail=""))

    assert "Question: (not recorded)" in prompt.user
    assert "Hint:" not in prompt.user
    assert "Gold query (written for SQLite):\n(not recorded)" in prompt.user
    assert "Outcome: the predicted query failed with an error on the target engine." in prompt.user
    assert "Detail: (none)" in prompt.user


def test_prompt_cuts_a_huge_field() -> None:
    huge = "SELECT " + ", ".join(f"c{i}" for i in range(3000)) + " FROM t"
    prompt = ClassifierPrompt().render(make_case(sql=huge))

    assert f"({len(huge) - 4000} more characters cut)" in prompt.user
    assert len(prompt.user) < len(huge)


def test_retry_message_names_the_problem_and_the_categories() -> None:
    text = ClassifierPrompt().complaint(make_case(), "the answer contains no JSON object")

    assert text.startswith("Your previous answer was rejected: the answer contains no JSON object.")
    for name in CATEGORIES:
        assert name in text


# --- records ----------------------------------------------------------------------------------------


def record(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "dataset": "demo", "question_id": "demo-003", "db_id": "retail", "predictor": "llm:smol",
        "engine": "duckdb", "engine_version": "1.1.3", "dialect": "duckdb", "tags": [],
        "question": "Average price per category?", "evidence": "",
        "gold_sql": "SELECT category, AVG(price) FROM product GROUP BY category",
        "gold_dialect": "sqlite", "status": "mismatch", "match": False,
        "reason": "row count differs", "details": {"mismatch": "row_count"},
        "sql": "SELECT category, price FROM product", "prediction_failure": None,
        "prediction_meta": {},
        "pred": {"columns": ["category", "price"], "types": ["VARCHAR", "DOUBLE"],
                 "row_count": 12, "truncated": False, "elapsed": 0.01, "error": None},
        "gold": {"columns": ["category", "AVG(price)"], "types": ["TEXT", "REAL"],
                 "row_count": 3, "truncated": False, "elapsed": 0.01, "error": None},
        "recorded_at": "2025-01-01T00:00:00+00:00",
    }
    base.update(overrides)
    return base


def test_case_from_a_mismatch_record() -> None:
    case = case_from_record(record(), "wrong_row_count")

    assert case == FailureCase(
        dataset="demo", question_id="demo-003", predictor="llm:smol", engine="duckdb",
        dialect="duckdb", question="Average price per category?", evidence="",
        gold_sql="SELECT category, AVG(price) FROM product GROUP BY category",
        sql="SELECT category, price FROM product", status="mismatch", signal="wrong_row_count",
        detail='row count differs (gold: 3 row(s), columns ["category", "AVG(price)"]; '
               'prediction: 12 row(s), columns ["category", "price"])',
        gold_dialect="sqlite")


def test_case_from_an_old_record_without_question_gold_or_evidence() -> None:
    old = record(status="exec_error", reason="prediction failed with a syntax error: near \"TOP\"",
                 sql="SELECT TOP 3 name FROM product",
                 pred={"columns": [], "types": [], "row_count": 0, "truncated": False,
                       "elapsed": 0.0, "error": {"kind": "syntax", "message": "near \"TOP\"",
                                                 "sqlstate": None}})
    for key in ("question", "evidence", "gold_sql", "gold_dialect"):
        del old[key]

    case = case_from_record(old, "syntax_error")

    assert (case.question, case.evidence, case.gold_sql, case.gold_dialect) == ("", "", "",
                                                                                "sqlite")
    assert case.detail == "prediction failed with a syntax error: near \"TOP\""
    assert case.sql == "SELECT TOP 3 name FROM product"


def test_case_detail_falls_back_to_the_engine_error() -> None:
    case = case_from_record(record(status="exec_error", reason="", pred={
        "columns": [], "types": [], "row_count": 0, "truncated": False, "elapsed": 0.0,
        "error": {"kind": "runtime", "message": "no such function: strftime",
                  "sqlstate": "42883"}}), "unknown_function")

    assert case.detail == "runtime error: no such function: strftime"


def test_case_from_a_generation_failure_has_no_sql() -> None:
    case = case_from_record(record(status="generation_failure", sql=None, pred=None,
                                   reason="no SQL to run: generation_failure: refusal",
                                   prediction_failure="generation_failure: refusal"), "no_sql")

    assert case.sql is None
    assert case.detail == "no SQL to run: generation_failure: refusal"


@pytest.mark.parametrize("status", ["match", "invalid_gold"])
def test_a_record_that_is_not_a_failure_is_refused(status: str) -> None:
    with pytest.raises(ConfigError, match=f"has status '{status}'"):
        case_from_record(record(status=status), "none")


def test_a_record_without_its_identity_is_refused() -> None:
    broken = record()
    del broken["engine"]
    with pytest.raises(ResultsStoreError, match="lacks 'engine'"):
        case_from_record(broken, "none")


# --- answers ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", [
    answer(),
    f"```json\n{answer()}\n```",
    f"Sure! Here is the classification:\n\n```json\n{answer()}\n```\nLet me know if ...",
    f"Thinking about {{the join}} first... {answer()} and that is all {{\"x\": 1}}",
])
def test_the_first_json_object_is_taken_from_around_wrappers(text: str) -> None:
    assert extract_json_object(text) == json.loads(answer())


def test_no_object_in_text() -> None:
    assert extract_json_object("filtering_error, because of the WHERE clause") is None
    assert extract_json_object('["filtering_error"]') is None


def test_a_valid_answer_passes_at_its_length_limits() -> None:
    text = answer(explanation="e" * EXPLANATION_MAX, evidence="v" * EVIDENCE_MAX)
    parsed, problem = validate_answer(text)
    assert problem == ""
    assert parsed == json.loads(text)


@pytest.mark.parametrize(("text", "complaint"), [
    (answer("syntax_error"), "category: 'syntax_error' is not one of"),
    (answer("Filtering_Error"), "category: 'Filtering_Error' is not one of"),
    (answer(confidence="high"), "Additional properties are not allowed ('confidence'"),
    (json.dumps({"category": "filtering_error", "explanation": "x"}),
     "'evidence' is a required property"),
    (answer(explanation=""), "explanation: '' should be non-empty"),
    (answer(explanation="e" * (EXPLANATION_MAX + 1)), "explanation: "),
    (answer(evidence=["WHERE age >= 30"]), "evidence: ['WHERE age >= 30'] is not of type 'string'"),
    ("filtering_error", "the answer contains no JSON object"),
])
def test_invalid_answers_are_rejected_with_the_reason(text: str, complaint: str) -> None:
    parsed, problem = validate_answer(text)
    assert parsed is None
    assert complaint in problem


def test_a_cut_off_answer_is_called_cut_off() -> None:
    _, problem = validate_answer('{"category": "filtering_error", "explanation": "The pred',
                                 cut_off=True)
    assert "cut off at the token limit" in problem


# --- retries, failures and caching against the scripted endpoint ----------------------------------


def test_invalid_then_valid_answer_is_retried_with_the_complaint(openai_emulator: Any) -> None:
    bad = "I think this is a filtering problem."
    openai_emulator.script(openai_emulator.reply(text=bad),
                           then=openai_emulator.reply(text=answer("filtering_error")))
    classifier = ErrorClassifier(LLMClient(config_for(openai_emulator.base_url), cache=None))

    result = classifier.classify(make_case())

    assert result == Classification("filtering_error",
                                    "The prediction keeps singers aged exactly 30.",
                                    "WHERE age >= 30", attempts=2, error=None)
    assert len(openai_emulator.requests) == 2
    first, second = sent_messages(openai_emulator, 0), sent_messages(openai_emulator, 1)
    assert second[: len(first)] == first
    assert second[len(first)] == {"role": "assistant", "content": bad}
    complaint = second[len(first) + 1]
    assert complaint["role"] == "user"
    assert "rejected: the answer contains no JSON object" in complaint["content"]
    assert len(second) == len(first) + 2


def test_wrong_category_name_is_rejected_and_named_in_the_retry(openai_emulator: Any) -> None:
    openai_emulator.script(openai_emulator.reply(text=answer("syntax_error")),
                           then=openai_emulator.reply(text=answer("dialect_error")))
    classifier = ErrorClassifier(LLMClient(config_for(openai_emulator.base_url), cache=None))

    result = classifier.classify(make_case())

    assert (result.category, result.attempts) == ("dialect_error", 2)
    retry = sent_messages(openai_emulator, 1)[-1]["content"]
    assert "category: 'syntax_error' is not one of" in retry


def test_always_invalid_ends_unclassified_after_max_attempts(openai_emulator: Any) -> None:
    openai_emulator.script(then=openai_emulator.reply(text=answer(confidence=0.9)))
    classifier = ErrorClassifier(LLMClient(config_for(openai_emulator.base_url), cache=None),
                                 max_attempts=4)

    result = classifier.classify(make_case())

    assert result.category == UNCLASSIFIED
    assert result.attempts == 4
    assert result.error is not None and "('confidence' was unexpected)" in result.error
    assert len(openai_emulator.requests) == 4
    # Every retry carries the whole conversation so far, so no two requests are the same.
    sizes = [len(sent_messages(openai_emulator, i)) for i in range(4)]
    assert sizes == [2, 4, 6, 8]


def test_fenced_answer_with_chatter_counts_at_the_first_attempt(openai_emulator: Any) -> None:
    openai_emulator.script(then=openai_emulator.reply(
        text=f"Here is my analysis.\n```json\n{answer('aggregation_error')}\n```\nThanks!"))
    classifier = ErrorClassifier(LLMClient(config_for(openai_emulator.base_url), cache=None))

    result = classifier.classify(make_case())

    assert (result.category, result.attempts, result.error) == ("aggregation_error", 1, None)


def test_cut_off_answer_is_retried_with_a_request_to_be_short(openai_emulator: Any) -> None:
    openai_emulator.script(openai_emulator.reply(text=answer()[:40], finish_reason="length"),
                           then=openai_emulator.reply(text=answer()))
    classifier = ErrorClassifier(LLMClient(config_for(openai_emulator.base_url), cache=None))

    result = classifier.classify(make_case())

    assert result.attempts == 2
    assert "cut off at the token limit" in sent_messages(openai_emulator, 1)[-1]["content"]


def test_endpoint_failing_past_its_retries_stops_the_classification(openai_emulator: Any) -> None:
    """An outage is nobody's failure: no case is filed as unclassified because of it, and the
    cases not yet asked are not asked."""
    openai_emulator.script(then=openai_emulator.reply(status=500))
    client = LLMClient(config_for(openai_emulator.base_url, max_retries=2, max_concurrency=2),
                       cache=None)
    classifier = ErrorClassifier(client)
    cases = [make_case(question_id=f"demo-{i}") for i in range(5)]

    with pytest.raises(LLMUnavailableError, match=r"failed after 3 attempt\(s\): HTTP 500"):
        classifier.classify_many(cases)

    assert len(openai_emulator.requests) == 6  # the two cases in flight x (1 try + 2 retries)
    assert client.stats.errors == 2


def test_endpoint_failing_during_a_retry_stops_the_classification(openai_emulator: Any) -> None:
    openai_emulator.script(openai_emulator.reply(text="no idea"),
                           then=openai_emulator.reply(status=503))
    classifier = ErrorClassifier(LLMClient(config_for(openai_emulator.base_url), cache=None))

    with pytest.raises(LLMUnavailableError, match="HTTP 503"):
        classifier.classify(make_case())


def test_a_rejected_request_is_that_cases_unclassified(openai_emulator: Any) -> None:
    """The endpoint answered, refusing this request (too long, say): the case is unclassified,
    and the others are still asked."""
    openai_emulator.script(openai_emulator.reply(status=400, error="maximum context length"),
                           then=openai_emulator.reply(text=answer()))
    classifier = ErrorClassifier(LLMClient(config_for(openai_emulator.base_url,
                                                      max_concurrency=1), cache=None))

    results = classifier.classify_many([make_case(question_id=f"demo-{i}") for i in range(2)])

    assert results[0].category == UNCLASSIFIED and "HTTP 400" in (results[0].error or "")
    assert results[1].classified


def test_a_case_without_sql_is_not_sent(openai_emulator: Any) -> None:
    classifier = ErrorClassifier(LLMClient(config_for(openai_emulator.base_url), cache=None))

    result = classifier.classify(make_case(sql=None, status="generation_failure",
                                           detail="no SQL to run: refusal"))

    assert (result.category, result.attempts) == (UNCLASSIFIED, 0)
    assert result.error == "no predicted SQL: no SQL to run: refusal"
    assert openai_emulator.requests == []


def test_second_run_over_the_same_cases_makes_no_calls(openai_emulator: Any,
                                                        tmp_path: Path) -> None:
    # One worker, so the scripted answers meet the cases in input order.
    openai_emulator.script(openai_emulator.reply(text="```json\n{\"category\": \"oops\"}\n```"),
                           openai_emulator.reply(text=answer("schema_linking_error")),
                           openai_emulator.reply(text=answer("aggregation_error")),
                           then=openai_emulator.reply(text=answer("dialect_error")))
    cases = [make_case(question_id=f"demo-{i}", sql=f"SELECT {i}") for i in range(3)]
    cache_file = tmp_path / "responses.sqlite"

    first_client = LLMClient(config_for(openai_emulator.base_url), cache=ResponseCache(cache_file))
    first = ErrorClassifier(first_client).classify_many(cases)
    assert [(r.category, r.attempts) for r in first] == [
        ("schema_linking_error", 2), ("aggregation_error", 1), ("dialect_error", 1)]
    assert first_client.stats.calls == 4
    sent = len(openai_emulator.requests)

    second_client = LLMClient(config_for(openai_emulator.base_url, max_concurrency=3),
                              cache=ResponseCache(cache_file))
    second = ErrorClassifier(second_client).classify_many(cases)

    assert second == first
    stats = second_client.stats
    assert (stats.calls, stats.requests, stats.cache_hits) == (0, 0, 4)
    assert len(openai_emulator.requests) == sent


def test_constraint_is_sent_and_keeps_its_own_cache_entries(openai_emulator: Any,
                                                             tmp_path: Path) -> None:
    openai_emulator.script(then=openai_emulator.reply(text=answer()))
    client = LLMClient(config_for(openai_emulator.base_url), cache=ResponseCache(tmp_path / "c"))

    ErrorClassifier(client, constrain=True).classify(make_case())
    ErrorClassifier(client, constrain=False).classify(make_case())
    ErrorClassifier(client, constrain=True).classify(make_case())

    constrained, plain = (seen.body for seen in openai_emulator.requests)
    assert constrained["response_format"] == {"type": "json_object", "schema": OUTPUT_SCHEMA}
    assert "response_format" not in plain
    assert constrained["messages"] == plain["messages"]
    assert constrained["temperature"] == plain["temperature"] == 0
    assert (client.stats.calls, client.stats.cache_hits) == (2, 1)


def test_requests_without_extra_keep_their_old_cache_key(openai_emulator: Any) -> None:
    config = config_for(openai_emulator.base_url)
    client = LLMClient(config, cache=None)
    messages = [{"role": "user", "content": "hi"}]

    assert client.cache_key(messages) == response_key(
        model=config.model, base_url=config.base_url, params=config.params, messages=messages)
    assert client.cache_key(messages, {}) == client.cache_key(messages)
    assert client.cache_key(messages, {"response_format": {"type": "json_object"}}) == \
        response_key(model=config.model, base_url=config.base_url, messages=messages,
                     params={"temperature": 0, "response_format": {"type": "json_object"}})


def test_extra_may_not_replace_what_polysql_sets(openai_emulator: Any) -> None:
    client = LLMClient(config_for(openai_emulator.base_url), cache=None)
    with pytest.raises(ConfigError, match="may not set 'messages'"):
        client.complete([{"role": "user", "content": "hi"}], extra={"messages": []})
    assert openai_emulator.requests == []


def test_classify_many_reports_progress(openai_emulator: Any) -> None:
    openai_emulator.script(then=openai_emulator.reply(text=answer()))
    classifier = ErrorClassifier(LLMClient(config_for(openai_emulator.base_url,
                                                      max_concurrency=3), cache=None))
    seen: list[tuple[int, int]] = []

    results = classifier.classify_many([make_case(sql=f"SELECT {i}") for i in range(5)],
                                       on_done=lambda done, total: seen.append((done, total)))

    assert len(results) == 5 and all(r.category == "filtering_error" for r in results)
    assert seen == [(1, 5), (2, 5), (3, 5), (4, 5), (5, 5)]
    assert classifier.classify_many([]) == []


def test_max_attempts_must_be_positive(openai_emulator: Any) -> None:
    with pytest.raises(ConfigError, match="max_attempts must be at least 1"):
        ErrorClassifier(LLMClient(config_for(openai_emulator.base_url), cache=None),
                        max_attempts=0)


# --- a real model -----------------------------------------------------------------------------------

REAL_CASES = [
    make_case(question_id="real-1"),
    make_case(question_id="real-2", engine="postgres", dialect="postgres",
              question="What share of orders were shipped late, as a percentage?",
              evidence="late means shipped_date > due_date",
              gold_sql="SELECT CAST(SUM(shipped_date > due_date) AS REAL) * 100 / COUNT(*) "
                       "FROM orders",
              sql="SELECT SUM(CASE WHEN shipped_date > due_date THEN 1 ELSE 0 END) * 100 / "
                  "COUNT(*) FROM orders",
              signal="numeric_drift", detail="values differ in row 1: gold 37.5, prediction 37"),
    make_case(question_id="real-3", engine="duckdb", dialect="duckdb",
              question="List the names of customers from Berlin.", evidence="",
              gold_sql="SELECT name FROM customer WHERE city = 'Berlin'",
              sql="SELECT name FROM client WHERE city = 'Berlin'", status="exec_error",
              signal="unknown_table",
              detail="prediction failed with a runtime error: Catalog Error: Table with name "
                     "client does not exist!"),
    make_case(question_id="real-4", engine="mysql", dialect="mysql",
              question="Which three products sold the most units?", evidence="",
              gold_sql="SELECT product_id FROM sales GROUP BY product_id "
                       "ORDER BY SUM(units) DESC LIMIT 3",
              sql="SELECT product_id FROM sales ORDER BY units DESC LIMIT 3",
              signal="wrong_values", detail="values differ in rows 1-3"),
    make_case(question_id="real-5", engine="postgres", dialect="postgres",
              question="How many orders were placed in 2023?", evidence="",
              gold_sql="SELECT COUNT(*) FROM orders WHERE strftime('%Y', order_date) = '2023'",
              sql="SELECT COUNT(*) FROM orders WHERE strftime('%Y', order_date) = '2023'",
              status="exec_error", signal="unknown_function",
              detail="prediction failed with a runtime error: function strftime(unknown, date) "
                     "does not exist"),
]


def real_client(config: ModelConfig, cache: ResponseCache | None) -> LLMClient:
    # Room for a whole object within the schema's length limits.
    return LLMClient(replace(config, params={**config.params, "max_tokens": 256}), cache=cache)


def assert_well_formed(result: Classification, max_attempts: int) -> None:
    assert result.category in (*CATEGORIES, UNCLASSIFIED)
    assert 1 <= result.attempts <= max_attempts
    if result.category == UNCLASSIFIED:
        assert result.error
    else:
        assert result.error is None
        assert 0 < len(result.explanation) <= EXPLANATION_MAX
        assert 0 < len(result.evidence) <= EVIDENCE_MAX


def test_real_model_classifies_with_constrained_output(llama_model_config: ModelConfig,
                                                       tmp_path: Path) -> None:
    client = real_client(llama_model_config, ResponseCache(tmp_path / "responses.sqlite"))
    classifier = ErrorClassifier(client, max_attempts=2, constrain=True)

    results = classifier.classify_many(REAL_CASES)

    assert len(results) == len(REAL_CASES)
    for result in results:
        assert_well_formed(result, 2)
    assert any(result.category in CATEGORIES for result in results)
    made = client.stats
    assert made.calls == sum(r.attempts for r in results) and made.errors == 0

    # classify_many kept the input order: each case, asked alone, gets the answer at its index
    # (from the cache now, so this is the same model answer, looked up by the case's messages).
    alone = [classifier.classify(case) for case in REAL_CASES]
    assert alone == results
    assert client.stats.calls == made.calls
    assert len({r.explanation for r in results}) > 1  # distinct answers, so order was tested
    client.close()


def test_real_model_without_constraint_still_ends_well_formed(
        llama_model_config: ModelConfig) -> None:
    client = real_client(llama_model_config, None)
    classifier = ErrorClassifier(client, max_attempts=2, constrain=False)

    result = classifier.classify(REAL_CASES[2])

    assert_well_formed(result, 2)
    sent = client.stats
    assert sent.calls == result.attempts and sent.errors == 0
    client.close()
