"""polysql: evaluate SQL-producing systems across SQL dialects by dual execution.

Public API (stable): :func:`connect`, :func:`compare`, :func:`compare_queries`, :func:`load`,
and the data types :class:`Result`, :class:`ExecError`, :class:`Verdict`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from polysql.core.model import ExecError, Result, Verdict
from polysql.core.version import __version__

if TYPE_CHECKING:
    from sqlalchemy.engine import URL

    from polysql.backends.base import Backend
    from polysql.core.schema import LoadReport


__all__ = ["ExecError", "Result", "Verdict", "__version__", "compare", "compare_queries", "connect",
           "load"]


def connect(url: str | URL, **options: Any) -> Backend:
    """Connect to the engine named by ``url`` (``sqlite:///path``, ``duckdb:///path``,
    ``postgresql://user@host/db``, ...). File engines open read-only unless
    ``read_only=False`` is passed."""
    # imported on first call: every `import polysql.<anything>` runs this file first, so the
    # engine stack (SQLAlchemy's URL, Arrow, the backends) is not paid for by code that needs
    # none of it (`polysql --help`, reports, leaderboards)
    from polysql.engines.registry import connect as _connect

    return _connect(url, **options)


def compare(gold: Result, pred: Result, *, gold_sql: str | None = None,
            ordered: bool | None = None, **policy: Any) -> Verdict:
    """Decide whether ``pred`` answers the same as ``gold`` under the comparison contract
    (docs/comparison.md). ``ordered=None`` infers order sensitivity from ``gold_sql``, which also
    lets NULLs sit where the prediction's engine puts them when that needs no re-run of the gold
    (:func:`compare_queries` runs the queries and makes the re-runs some verdicts need)."""
    # imported on first call, as in connect() above
    from polysql.normalizers.gold import judge_results

    return judge_results(gold, pred, gold_sql=gold_sql, ordered=ordered, **policy)


def compare_queries(gold_sql: str, pred_sql: str, engine: Backend | str | URL,
                    pred_engine: Backend | str | URL | None = None, *,
                    ordered: bool | None = None, **options: Any) -> Verdict:
    """Run ``gold_sql`` on ``engine`` and ``pred_sql`` on ``pred_engine`` (default: the same
    engine; either a Backend or an engine URL) and judge the prediction as a sweep and
    ``polysql compare`` do, re-running the gold (and, when the row cap cut both, both queries)
    where the verdict needs it. ``options``: ``timeout``, ``max_rows`` and compare's policy
    options. An engine that cannot run a statement at all raises EngineUnavailableError."""
    # imported on first call, as in connect() above
    from polysql.engines.judging import compare_queries as _compare_queries

    return _compare_queries(gold_sql, pred_sql, engine, pred_engine, ordered=ordered, **options)


def load(source_url: str, target_url: str, **options: Any) -> LoadReport:
    """Copy the database at ``source_url`` into ``target_url`` (idempotent by source fingerprint)."""
    # imported on first call, as in compare() above
    from polysql.engines.loading import load as _load

    return _load(source_url, target_url, **options)
