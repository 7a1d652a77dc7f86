"""Start bqemulator offline, with three adjustments; run by the emulator venv's own python.

    <emulator-venv>/bin/python _bqemulator_launcher.py start --rest-port N --grpc-port 0

This file is executed as a script inside the emulator's virtual environment: it imports only
bqemulator and the standard library, never polysql.

1. bqemulator insists on DuckDB's ``spatial`` extension at start and downloads it; with no
   network it refuses to start. GEOGRAPHY is not needed here, so the load is skipped.
2. Its SQL-identifier whitelist rejects table names real BigQuery accepts (spaces, letters outside
   ASCII). The names are always double-quoted in its DuckDB SQL, so the whitelist is widened to
   BigQuery's own table-name alphabet (word characters, dashes and spaces) -- quotes, semicolons
   and the like stay refused.
3. It runs every query synchronously inside the request and ignores ``jobTimeoutMs``, so a
   runaway query blocks the whole server for as long as it runs. Here ``jobTimeoutMs`` is
   honoured the way BigQuery documents it: the query is interrupted when the limit passes and
   the job fails with reason ``timeout``.
"""

from __future__ import annotations

import contextvars
import re
import sys
import threading
import time
from typing import Any

from bqemulator.api.routes import jobs as job_routes
from bqemulator.catalog.models import JobMeta
from bqemulator.storage import engine as engine_module
from bqemulator.storage import sql_identifiers

# The running job's deadline (monotonic seconds) and whether its query was interrupted.
_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar("deadline", default=None)
_fired: contextvars.ContextVar[list[bool] | None] = contextvars.ContextVar("fired", default=None)


def _skip_spatial(self: Any) -> None:
    return None


def _widen_identifiers() -> None:
    sql_identifiers._SQL_SAFE_ID_RE = re.compile(r"^\w[\w\- ]{0,1023}$")


_original_handle_query_job = job_routes._handle_query_job


async def _handle_query_job(project_id: str, job_id: str, config: dict[str, Any],
                            **kwargs: Any) -> Any:
    limit = int(config.get("jobTimeoutMs") or 0)
    fired: list[bool] = []
    token = _deadline.set(time.monotonic() + limit / 1000 if limit > 0 else None)
    fired_token = _fired.set(fired)
    try:
        result = await _original_handle_query_job(project_id, job_id, config, **kwargs)
    finally:
        _deadline.reset(token)
        _fired.reset(fired_token)
    if fired and isinstance(result, JobMeta) and result.error_result is not None:
        # BigQuery's own wording and reason for a job stopped by jobTimeoutMs
        result = result.model_copy(update={"error_result": {
            "reason": "timeout",
            "message": f"Job timed out after {limit / 1000:g}s (jobTimeoutMs). Consider "
                       "reducing the amount of work performed by your operation so that it "
                       "can complete within this limit.",
        }})
    return result


_original_fetch_arrow = engine_module.DuckDBEngine.fetch_arrow


def _fetch_arrow(self: Any, sql: str, parameters: list[Any] | None = None) -> Any:
    deadline = _deadline.get()
    if deadline is None:
        return _original_fetch_arrow(self, sql, parameters)
    connection = self.connection
    guard = threading.Lock()  # an interrupt never lands on the next statement
    running = [True]
    fired = _fired.get()

    def interrupt() -> None:
        with guard:
            if running[0]:
                if fired is not None:
                    fired.append(True)
                connection.interrupt()

    timer = threading.Timer(max(0.0, deadline - time.monotonic()), interrupt)
    timer.daemon = True
    timer.start()
    try:
        return _original_fetch_arrow(self, sql, parameters)
    finally:
        with guard:
            running[0] = False
        timer.cancel()


def main() -> None:
    engine_module.DuckDBEngine._load_spatial = _skip_spatial
    engine_module.DuckDBEngine.fetch_arrow = _fetch_arrow
    job_routes._handle_query_job = _handle_query_job
    _widen_identifiers()
    from bqemulator.cli import main as cli_main

    cli_main(sys.argv[1:], prog_name="bqemulator")


if __name__ == "__main__":
    main()
