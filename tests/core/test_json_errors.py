"""JSON parse errors worded for messages: what went wrong, then where, without 'at at'."""

from __future__ import annotations

import json

import pytest

from polysql.core.json_errors import json_problem


def _error(text: str) -> json.JSONDecodeError:
    with pytest.raises(json.JSONDecodeError) as caught:
        json.loads(text)
    return caught.value


def test_a_message_that_ends_in_at_reads_once() -> None:
    error = _error('{"sql": "SELECT ')
    assert json_problem(error) == "Unterminated string starting at line 1, column 9"
    assert json_problem(error, line=False) == "Unterminated string starting at column 9"


def test_other_messages_get_their_place() -> None:
    assert json_problem(_error('{"a": 1,\n}')) == (
        "Expecting property name enclosed in double quotes at line 2, column 1")
    assert json_problem(_error("\n\n  ]"), line=False) == "Expecting value at column 3"
