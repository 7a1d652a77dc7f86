"""Where and why a JSON text failed to parse, worded for an error message."""

from __future__ import annotations

import json


def json_problem(exc: json.JSONDecodeError, *, line: bool = True) -> str:
    """``exc`` as 'what at line L, column C', or 'what at column C' (``line=False``: one line of
    a JSON-lines file, whose number the caller gives). Some of json's messages end in 'at'
    ('Unterminated string starting at'), which would read 'at at' with the place appended."""
    what = exc.msg.removesuffix(" at")
    where = f"line {exc.lineno}, column {exc.colno}" if line else f"column {exc.colno}"
    return f"{what} at {where}"
