"""How failures of evaluated SQL on ClickHouse are named (``ExecError.kind``): by the error code
ClickHouse puts in its message, the same on the embedded engine and on a server."""

from __future__ import annotations

import re

from polysql.core.model import ErrorKind

# ClickHouse error codes (src/Common/ErrorCodes.cpp) whose kind is not "runtime".
_BY_CODE: dict[int, ErrorKind] = {
    62: "syntax",  # SYNTAX_ERROR
    159: "timeout",  # TIMEOUT_EXCEEDED
    209: "timeout",  # SOCKET_TIMEOUT
    164: "forbidden",  # READONLY
    497: "forbidden",  # ACCESS_DENIED
    291: "forbidden",  # DATABASE_ACCESS_DENIED
    241: "too_large",  # MEMORY_LIMIT_EXCEEDED
    158: "too_large",  # TOO_MANY_ROWS
    396: "too_large",  # TOO_MANY_ROWS_OR_BYTES
    307: "too_large",  # TOO_MANY_BYTES
    306: "too_large",  # TOO_DEEP_RECURSION
    243: "too_large",  # NOT_ENOUGH_SPACE
    210: "unavailable",  # NETWORK_ERROR
    516: "unavailable",  # AUTHENTICATION_FAILED
    194: "unavailable",  # REQUIRED_PASSWORD
}
_CODE = re.compile(r"Code: (\d+)\.")
_NOISE = re.compile(r"^(?:Streaming query failed: |Failed to create connection: )+")


def error_code(message: str) -> int | None:
    match = _CODE.search(message)
    return int(match.group(1)) if match else None


def clean_message(message: str) -> str:
    """ClickHouse's own words, without the client's prefixes."""
    return _NOISE.sub("", message.strip()) or message


def classify(message: str, code: int | None = None) -> ErrorKind:
    """The ``ExecError.kind`` of a ClickHouse failure (by error code; unknown codes are runtime:
    unknown tables, columns and functions, type errors, division by zero ...)."""
    code = code if code is not None else error_code(message)
    if code is None:
        return "runtime"
    if code == 394:  # QUERY_WAS_CANCELLED: only polysql cancels, and only on timeout
        return "timeout"
    return _BY_CODE.get(code, "runtime")
