"""How Snowflake failures of evaluated SQL are named.

Snowflake's SQLSTATE alone is too coarse: 42000 covers syntax errors (001003) and compilation
errors such as an invalid identifier (000904) alike. The connector's ``errno`` (Snowflake's error
code) decides where it is known, the SQLSTATE class otherwise.
"""

from __future__ import annotations

import re

import snowflake.connector.errors as sf_errors

from polysql.core.model import ErrorKind

_BY_ERRNO: dict[int, ErrorKind] = {
    1003: "syntax",  # SQL compilation error: syntax error ... unexpected ...
    604: "timeout",  # SQL execution canceled (our cancel, or the connector's timeout)
    630: "timeout",  # statement reached its statement or warehouse timeout
    3001: "forbidden",  # insufficient privileges to operate on ...
    3003: "forbidden",  # insufficient privileges (schema/database)
    606: "unavailable",  # no active warehouse selected in the current session
    # fakesnow's answer to a statement it does not implement: the emulator's gap, not a bad query
    9999: "runtime",
}

_BY_SQLSTATE: dict[str, ErrorKind] = {
    "57014": "timeout",  # query canceled
    "42501": "forbidden",  # insufficient privilege
    "57P03": "unavailable",  # cannot connect now / no warehouse
}

_BY_CLASS: dict[str, ErrorKind] = {
    "08": "unavailable",  # connection exception
    "53": "too_large",  # insufficient resources
    "54": "too_large",  # program limit exceeded
}

# What the connector raises when an HTTP request failed outright (no SQL answer at all).
_HTTP_FAILURE = re.compile(r"\bHTTP (\d{3})\b")


def classify(exc: BaseException, *, emulated: bool) -> tuple[ErrorKind, str | None]:
    """The ``ExecError.kind`` and SQLSTATE for an exception raised while running evaluated SQL."""
    if isinstance(exc, MemoryError):
        return "too_large", None
    if not isinstance(exc, sf_errors.Error):
        return "runtime", None
    sqlstate = exc.sqlstate if exc.sqlstate and exc.sqlstate != "n/a" else None
    errno = exc.errno if isinstance(exc.errno, int) else None
    if isinstance(exc, sf_errors.InternalServerError | sf_errors.ServiceUnavailableError):
        # A real service answering 5xx is unavailable; fakesnow answers 500 when the statement
        # reaches a feature DuckDB or fakesnow lacks, which is this statement's failure.
        return ("runtime" if emulated else "unavailable"), sqlstate
    if errno in _BY_ERRNO:
        return _BY_ERRNO[errno], sqlstate
    if sqlstate:
        kind = _BY_SQLSTATE.get(sqlstate) or _BY_CLASS.get(sqlstate[:2])
        if kind:
            return kind, sqlstate
    if isinstance(exc, sf_errors.OperationalError | sf_errors.InterfaceError) and not sqlstate:
        return "unavailable", None
    if _HTTP_FAILURE.search(str(exc)) and not sqlstate:
        return ("runtime" if emulated else "unavailable"), None
    return "runtime", sqlstate


_CODE_PREFIX = re.compile(r"\A\d{6} \([0-9A-Za-z/]+\): ")


def message_of(exc: BaseException) -> str:
    """The server's own words without the connector's ``001003 (42000):`` prefix (the code and
    SQLSTATE are recorded separately)."""
    msg = getattr(exc, "msg", None)
    text = (msg if isinstance(msg, str) and msg.strip() else str(exc)).strip()
    return _CODE_PREFIX.sub("", text) or type(exc).__name__
