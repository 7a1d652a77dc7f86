"""Metrics for SQL-debugging tasks: does a proposed fix repair a buggy script?

Three execution-free metrics (Exact Match after normalization, Graph Match on optimizer-canonical
ASTs, Modify-Better on token edit distance) and one execution metric (dual execution of the fix
and each reference). Every metric takes several references and succeeds if any one does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import suppress
from typing import TYPE_CHECKING

import sqlglot
from sqlglot import exp
from sqlglot.errors import OptimizeError, SqlglotError
from sqlglot.optimizer import optimize
from sqlglot.tokens import Token, TokenType

from polysql.core.errors import EngineUnavailableError
from polysql.core.outage import require_available
from polysql.core.sqlglot_quiet import quietly
from polysql.engines.judging import judge_prediction

if TYPE_CHECKING:
    from polysql.backends.base import Backend

# table -> column -> type text, the shape sqlglot's optimizer takes as its schema
SchemaMapping = Mapping[str, Mapping[str, str]]

# Tokens whose text must keep its case: names and literals. Everything else is a keyword,
# operator or punctuation and compares case-insensitively.
_CASE_SENSITIVE = {TokenType.VAR, TokenType.STRING, TokenType.NUMBER, TokenType.IDENTIFIER,
                   TokenType.NATIONAL_STRING, TokenType.BIT_STRING, TokenType.HEX_STRING,
                   TokenType.BYTE_STRING, TokenType.RAW_STRING, TokenType.HEREDOC_STRING}


def _tokens(sql: str, dialect: str) -> list[Token] | None:
    try:
        return sqlglot.tokenize(sql, read=dialect)
    except SqlglotError:
        return None


def _token_text(token: Token) -> str:
    # The tokenizer strips quotes; put them back so 'x' (string) and "x" (name) stay different.
    if token.token_type == TokenType.STRING:
        return "'" + token.text.replace("'", "''") + "'"
    if token.token_type == TokenType.IDENTIFIER:
        return '"' + token.text + '"'
    if token.token_type in _CASE_SENSITIVE:
        return token.text
    return token.text.upper()


def sql_tokens(sql: str, dialect: str) -> list[str]:
    """The statement as normalized token texts: comments dropped (the tokenizer does not emit
    them), keywords and function names uppercased, other names and literals verbatim, a trailing semicolon dropped.
    Falls back to whitespace-split words when the text does not tokenize."""
    tokens = _tokens(sql, dialect)
    if tokens is None:
        return sql.split()
    texts = [_token_text(token) for token in tokens]
    for index, token in enumerate(tokens[:-1]):
        # Function names tokenize as names, but are case-insensitive like keywords.
        if token.token_type == TokenType.VAR and tokens[index + 1].token_type == TokenType.L_PAREN:
            texts[index] = token.text.upper()
    while texts and texts[-1] == ";":
        texts.pop()
    return texts


def normalize_sql(sql: str, dialect: str) -> str:
    """One canonical spelling for Exact Match (tokens joined by single spaces)."""
    return " ".join(sql_tokens(sql, dialect))


def exact_match(prediction: str | None, references: Sequence[str], dialect: str) -> bool:
    if prediction is None:
        return False
    normalized = normalize_sql(prediction, dialect)
    return any(normalized == normalize_sql(ref, dialect) for ref in references)


def canonical_sql(sql: str, dialect: str, schema: SchemaMapping | None) -> str | None:
    """The statement qualified and simplified by sqlglot's optimizer (which also orders
    commutative operands), rendered back as SQL; None when it does not parse or optimize."""
    try:
        with quietly():
            statements = [s for s in sqlglot.parse(sql, read=dialect) if s is not None]
        if len(statements) != 1:
            return None
        tree: exp.Expression = statements[0]
        # Without validation, a column the schema cannot place stays unqualified instead of
        # failing: the comparison then still works when no database (schema) is at hand.
        # When the optimizer cannot resolve a name (e.g. a GROUP BY alias with no schema at
        # hand), compare the parsed AST as it is.
        with suppress(OptimizeError):
            tree = optimize(tree, schema=dict(schema) if schema else None, dialect=dialect,
                            validate_qualify_columns=False)
        return tree.sql(dialect=dialect)
    except (SqlglotError, ValueError, KeyError, RecursionError):
        # The optimizer raises plain ValueError/KeyError on some unresolvable names;
        # RecursionError is nesting deeper than sqlglot can follow.
        return None


def graph_match(prediction: str | None, references: Sequence[str], dialect: str,
                schema: SchemaMapping | None = None) -> bool:
    if prediction is None:
        return False
    predicted = canonical_sql(prediction, dialect, schema)
    if predicted is None:
        return False
    return any(predicted == canonical_sql(ref, dialect, schema) for ref in references)


def levenshtein(a: Sequence[str], b: Sequence[str]) -> int:
    """Edit distance between two token sequences (insert, delete, substitute cost 1)."""
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, item_a in enumerate(a, start=1):
        current = [i]
        for j, item_b in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1,
                               previous[j - 1] + (item_a != item_b)))
        previous = current
    return previous[-1]


def nearest_distance(sql: str, references: Sequence[str], dialect: str) -> int:
    tokens = sql_tokens(sql, dialect)
    return min(levenshtein(tokens, sql_tokens(ref, dialect)) for ref in references)


def modify_better(prediction: str | None, buggy_sql: str, references: Sequence[str],
                  dialect: str) -> bool:
    """True when the prediction is strictly closer (token edit distance) to its nearest reference
    than the buggy script is to its nearest reference."""
    if prediction is None or not references:
        return False
    return (nearest_distance(prediction, references, dialect)
            < nearest_distance(buggy_sql, references, dialect))


def execution_match(prediction: str | None, references: Sequence[str], backend: Backend) -> bool:
    """Run the prediction and each reference on ``backend``; a match when the prediction answers
    as any reference does, judged as a sweep judges (order inferred from the reference, and the
    reference re-run where a verdict needs it: a tie group its LIMIT cut, ties on ORDER BY keys
    it does not return). A reference that fails matches nothing. An engine that could not run a
    statement at all raises EngineUnavailableError: an outage is nobody's wrong answer (see
    :mod:`polysql.core.outage`)."""

    if prediction is None:
        return False
    predicted = require_available(backend.execute(prediction), "the prediction")
    if not predicted.ok:
        return False
    for number, reference in enumerate(references, 1):
        try:
            verdict = judge_prediction(reference, prediction, predicted, backend)
        except EngineUnavailableError as exc:
            raise EngineUnavailableError(f"reference {number}: {exc}") from exc
        if verdict.match:
            return True
    return False
