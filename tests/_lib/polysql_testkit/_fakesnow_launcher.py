"""Start a fakesnow server with two adjustments; run by the emulator venv's own python.

    <emulator-venv>/bin/python _fakesnow_launcher.py --host 127.0.0.1 --port N

This file is executed as a script inside the emulator's virtual environment: it imports only
fakesnow, its dependencies and the standard library, never polysql. Everything else is fakesnow
as released; both adjustments make it answer the way Snowflake does:

1. NULL timestamps. fakesnow sends a TIMESTAMP column to the connector as Snowflake's
   (epoch, fraction) struct but leaves the struct valid where the timestamp is NULL, so the
   connector reads those NULLs as 1970-01-01 00:00:00. Here the struct is NULL where the
   timestamp is.
2. Cancelling. fakesnow acknowledges the connector's abort request (sent when
   ``cursor.execute(timeout=...)`` runs out, and by SYSTEM$CANCEL_QUERY-style aborts) and does
   nothing, so a runaway statement keeps the emulator busy until it ends by itself. Here the abort
   interrupts the session's DuckDB statement, and the interrupted statement fails the way a
   cancelled Snowflake statement does: error 000604 "SQL execution canceled", SQLSTATE 57014.
"""

from __future__ import annotations

import argparse
import importlib
from typing import Any

import duckdb
import fakesnow.arrow
import fakesnow.cursor
import pyarrow as pa
import pyarrow.compute as pc
import snowflake.connector.errors
import uvicorn
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

# Imported by name: a plain ``import fakesnow.server`` would rebind the package's ``server``
# attribute (a function of the same name) to the module.
server = importlib.import_module("fakesnow.server")

_timestamp_to_sf_struct = fakesnow.arrow.timestamp_to_sf_struct


def _null_aware_timestamps(ts: pa.Array | pa.ChunkedArray) -> pa.Array:
    struct = _timestamp_to_sf_struct(ts)
    if isinstance(ts, pa.ChunkedArray):
        ts = ts.combine_chunks()
    if ts.null_count == 0:
        return struct
    children = [pc.fill_null(struct.field(i), 0) for i in range(struct.type.num_fields)]
    return pa.StructArray.from_arrays(children, fields=list(struct.type), mask=ts.is_null())


_execute = fakesnow.cursor.FakeSnowflakeCursor._execute


def _execute_cancellable(self: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        return _execute(self, *args, **kwargs)
    except duckdb.InterruptException as exc:
        raise snowflake.connector.errors.ProgrammingError(
            msg="SQL execution canceled", errno=604, sqlstate="57014") from exc


async def _abort_request(request: Request) -> JSONResponse:
    try:
        conn = server.to_conn(server.to_token(request))
    except server.ServerError:
        return JSONResponse({"data": None, "success": True})
    # one session runs one statement at a time, so this stops exactly the statement to abort
    conn._duck_conn.interrupt()  # noqa: SLF001
    return JSONResponse({"data": None, "success": True})


def _install() -> None:
    fakesnow.arrow.timestamp_to_sf_struct = _null_aware_timestamps
    fakesnow.cursor.FakeSnowflakeCursor._execute = _execute_cancellable
    routes = server.app.router.routes
    for i, route in enumerate(routes):
        if isinstance(route, Route) and route.path == "/queries/v1/abort-request":
            routes[i] = Route("/queries/v1/abort-request", _abort_request, methods=["POST"])
            break
    else:
        raise SystemExit("fakesnow has no abort-request route to adjust; update the launcher")


def main() -> None:
    parser = argparse.ArgumentParser(description="fakesnow server with polysql's adjustments")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    _install()
    # what fakesnow's own ``fakesnow -s`` runs, in the foreground, without a log line per request
    # (a long sweep would fill the log); the databases live in memory, so a stop need not wait
    # long for requests still open
    uvicorn.run(server.app, host=args.host, port=args.port, log_level="info", access_log=False,
                timeout_graceful_shutdown=3)


if __name__ == "__main__":
    main()
