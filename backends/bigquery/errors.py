"""How failures of evaluated SQL on BigQuery are named (``ExecError.kind``): by the job error's
``reason`` where BigQuery gives one, else by the client's exception class."""

from __future__ import annotations

import concurrent.futures

import requests
from google.api_core import exceptions as api_exceptions

from polysql.core.model import ErrorKind

_TOO_LARGE_REASONS = frozenset({"bytesBilledLimitExceeded", "responseTooLarge",
                                "resourcesExceeded", "billingTierLimitExceeded"})
_UNAVAILABLE_REASONS = frozenset({"backendError", "rateLimitExceeded", "quotaExceeded",
                                  "billingNotEnabled", "tableUnavailable"})


def _reason_and_message(exc: api_exceptions.GoogleAPICallError) -> tuple[str, str]:
    errors = getattr(exc, "errors", None) or []
    first = errors[0] if errors and isinstance(errors[0], dict) else {}
    message = str(first.get("message") or getattr(exc, "message", "") or exc)
    return str(first.get("reason") or ""), message


def classify(exc: BaseException, *, timed_out: bool) -> tuple[ErrorKind, str]:
    """An ExecError kind and message for an exception raised while running a query."""
    if timed_out or isinstance(exc, (concurrent.futures.TimeoutError, requests.Timeout)):
        return "timeout", str(exc) or "timed out"
    if isinstance(exc, api_exceptions.GoogleAPICallError):
        reason, message = _reason_and_message(exc)
        if reason in ("timeout", "stopped") or "timed out" in message.lower():
            return "timeout", message
        if reason in _TOO_LARGE_REASONS:
            return "too_large", message
        if reason == "invalidQuery" or isinstance(exc, api_exceptions.BadRequest):
            # BigQuery reports syntax and semantic errors alike as invalidQuery; only the
            # former start with "Syntax error".
            return ("syntax" if message.startswith("Syntax error") else "runtime"), message
        if reason == "notFound" or isinstance(exc, api_exceptions.NotFound):
            return "runtime", message
        if reason == "accessDenied" or isinstance(exc, api_exceptions.Forbidden):
            if "perhaps it does not exist" in message:
                # BigQuery's answer for a table that does not exist where the caller cannot
                # list tables: from the query's point of view, an unknown table.
                return "runtime", message
            if reason in _UNAVAILABLE_REASONS:
                return "unavailable", message
            return "forbidden", message
        if reason in _UNAVAILABLE_REASONS or isinstance(
                exc, (api_exceptions.ServiceUnavailable, api_exceptions.Unauthorized)):
            return "unavailable", message
        return "runtime", message
    if isinstance(exc, (requests.ConnectionError, api_exceptions.RetryError)):
        return "unavailable", str(exc)
    return "runtime", f"{type(exc).__name__}: {exc}"
