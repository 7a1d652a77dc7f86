"""How Spark failures of evaluated SQL are named.

PySpark raises its own exception classes for both drivers in this process and Spark Connect
(``ParseException``, ``AnalysisException``, ``ArithmeticException``, ...), most carrying an error
condition and a SQLSTATE. A parse error is a syntax error; an analysis error is a syntax error only
when its SQLSTATE says so (42601), otherwise a runtime error (unknown table or column, type
mismatch); memory and result-size limits are ``too_large``; a lost driver or server is
``unavailable``. Cancellation by the timeout is decided by the caller, who knows it cancelled.
"""

from __future__ import annotations

from polysql.core.model import ErrorKind

_TOO_LARGE_MARKERS = (
    "OutOfMemoryError", "SparkOutOfMemoryError", "spark.driver.maxResultSize",
    "UNABLE_TO_ACQUIRE_MEMORY", "Not enough memory", "java.lang.OutOfMemoryError",
)
_UNAVAILABLE_MARKERS = (
    "Answer from Java side is empty", "Error while sending or receiving", "Connection refused",
    "SparkContext was shut down", "Cannot call methods on a stopped SparkContext",
    "StatusCode.UNAVAILABLE", "failed to connect to all addresses", "INVALID_HANDLE",
)
_SYNTAX_STATES = frozenset({"42601"})


def _call(exc: BaseException, method: str) -> str | None:
    getter = getattr(exc, method, None)
    if not callable(getter):
        return None
    try:
        value = getter()
    except Exception:  # an exception object whose Java side is gone
        return None
    return str(value) if value else None


def sqlstate_of(exc: BaseException) -> str | None:
    return _call(exc, "getSqlState")


def condition_of(exc: BaseException) -> str | None:
    return _call(exc, "getCondition") or _call(exc, "getErrorClass")


def message_of(exc: BaseException) -> str:
    """The engine's message without JVM stack traces."""
    java = getattr(exc, "java_exception", None)
    if java is not None:  # a raw Py4JJavaError: its str() is the whole Java stack
        try:
            return str(java.toString())
        except Exception:
            pass
    text = str(exc).strip() or type(exc).__name__
    for marker in ("\n\nJVM stacktrace:", "\n\tat ", "\nJVM stacktrace:"):
        text = text.split(marker, 1)[0]
    return text.strip()


def classify(exc: BaseException, *, cancelled: bool) -> tuple[ErrorKind, str | None]:
    """The ``ExecError.kind`` and SQLSTATE for an exception raised by evaluated SQL."""
    sqlstate = sqlstate_of(exc)
    if cancelled:
        return "timeout", sqlstate
    if isinstance(exc, MemoryError):
        return "too_large", sqlstate
    names = {cls.__name__ for cls in type(exc).__mro__}
    text = f"{type(exc).__name__}: {exc}"
    if any(marker in text for marker in _TOO_LARGE_MARKERS):
        return "too_large", sqlstate
    if "ParseException" in names:
        return "syntax", sqlstate
    if "AnalysisException" in names:
        return ("syntax" if sqlstate in _SYNTAX_STATES else "runtime"), sqlstate
    if any(marker in text for marker in _UNAVAILABLE_MARKERS) or \
            {"Py4JNetworkError", "ConnectionError"} & names:
        return "unavailable", sqlstate
    return "runtime", sqlstate
