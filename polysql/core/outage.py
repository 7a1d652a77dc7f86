"""An engine that could not run a statement at all is an outage, never an answer.

A result of kind ``unavailable`` says nothing about the SQL: the server went away, refused the
connection, or the backend was closed. Scored as a failure it would count an outage against a
model, a rewrite method or a policy; every task that judges SQL by running it therefore passes
its results through :func:`require_available`, which turns an outage into
:class:`~polysql.core.errors.EngineUnavailableError` (exit 3 on the command line) so that
nothing is scored for it; comparison does the same for the re-runs a verdict needs.
"""

from __future__ import annotations

from polysql.core.errors import EngineUnavailableError, EvidenceUnavailableError
from polysql.core.model import Result


def require_available(result: Result, what: str, *, side: str | None = None) -> Result:
    """``result`` as it is, unless its engine could not run ``what`` (e.g. "the rewrite of case
    q1") at all: then EngineUnavailableError saying so; EvidenceUnavailableError when ``side``
    names whose re-run a verdict needed it was (``"gold"`` or ``"prediction"``)."""
    if result.unavailable:
        assert result.error is not None
        engine = f" on {result.engine}" if result.engine else ""
        message = (f"{what} could not run{engine}: the engine is unavailable "
                   f"({result.error.message}); nothing was scored for it -- start or reconnect "
                   "the engine and run again")
        if side is not None:
            raise EvidenceUnavailableError(message, side=side)
        raise EngineUnavailableError(message)
    return result
