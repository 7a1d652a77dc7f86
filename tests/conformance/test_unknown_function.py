"""Calling a function the engine does not have is the same kind of error on every engine.

MariaDB answers an unknown function called by the SELECT-only evaluation login with "execute
command denied ... for routine": it checks the EXECUTE privilege before it looks the routine up.
Nothing was refused there, so it must not be recorded as ``forbidden``.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from polysql.analysis.signals import error_signal
from polysql.backends.base import Backend

UNKNOWN_KIND = "runtime"


@pytest.mark.parametrize("sql", [
    "SELECT no_such_function(1)",
    'SELECT no_such_function("CustomerID") FROM "Customers"',
    # SQLite's date function: the classic case of a gold query run verbatim elsewhere
    "SELECT julianday_nope('2020-01-01')",
])
def test_unknown_function_is_a_runtime_error_everywhere(backend: Backend, sql: str,
                                                        q: Callable[[str], str]) -> None:
    result = backend.execute(q(sql))
    assert result.error is not None, f"{backend.name} accepted {sql!r}: {result!r}"
    assert result.error.kind == UNKNOWN_KIND, result.error
    assert result.error.message
    # the error analysis reads it as an unknown function on every engine as well
    label = error_signal(result.error.kind, result.error.message, result.error.sqlstate)
    assert label == "unknown_function", (backend.name, result.error)
