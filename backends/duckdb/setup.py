"""Build a DuckDB evaluation database from a setup script (``Backend.build_from_script``).

Like a load, the database is built in a temporary file and renamed into place, and the script's
fingerprint is recorded in the sidecar beside it (:mod:`polysql.backends._common.load_files`), so
an unchanged script is not run again and a failed one leaves the previous database as it was.
The script runs with the evaluation connection's safety settings: it cannot read files or fetch
extensions either.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import duckdb

from polysql.backends._common.load_files import atomic_build, load_file_once
from polysql.backends.duckdb.connect import open_connection
from polysql.backends.duckdb.load import _COMPANIONS, _refuse_if_open_here
from polysql.backends.duckdb.types import quote_ident
from polysql.core.errors import ConfigError
from polysql.core.schema import LoadReport

if TYPE_CHECKING:
    from polysql.backends.base import SetupScript
    from polysql.backends.duckdb.backend import DuckDBBackend


def build_from_script(target: DuckDBBackend, script: SetupScript) -> LoadReport:
    """Run ``script`` into a fresh file at ``target``'s path (its objects go to ``main``).
    ``target`` is a writable connection; the caller holds its lock."""
    path = target.path
    if path is None:
        raise ConfigError(f"{script.origin}: {target!r} names no database file to build")
    config = dict(target._config)

    def build() -> LoadReport:
        _refuse_if_open_here(path, config)
        with atomic_build(path, _COMPANIONS) as temporary:
            # in UTC, as evaluation connections are: the script's timestamp text is read alike
            conn = open_connection(temporary, read_only=False, config=config)
            try:
                script.run(target.url, conn.execute, duckdb.Error)
                names = [row[0] for row in conn.execute(
                    "SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main' "
                    "ORDER BY table_name").fetchall()]
                counts = {name: conn.execute(f"SELECT count(*) FROM {quote_ident(name)}")
                          .fetchone()[0] for name in names}
                conn.execute("CHECKPOINT")
            finally:
                conn.close()
        return script.report(target.url, counts)

    return load_file_once(path, origin=script.origin, fingerprint=script.fingerprint,
                          replace=False, build=build, engine=target.name,
                          engine_version=duckdb.__version__)
