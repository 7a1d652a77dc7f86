"""Everything comparison needs from the gold side, gathered by running the gold and its re-runs.

Comparison is pure: it never executes SQL. But two rules need more than the gold's own result:

* ties among rows ordered by keys the gold does not return (``ORDER BY COUNT(*) DESC``) can only
  be seen if the gold is re-run returning those keys too (:func:`keyed_order_sql`);
* a tie group cut by the gold's LIMIT shows only in a re-run with the LIMIT widened
  (:func:`widen_limit`).

:func:`run_gold` does both through a caller-supplied ``run`` function, so every caller (sweep,
``polysql compare``, Python users) gathers the same evidence the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from polysql.model import Result
from polysql.normalizers.ordering import keyed_order_sql, widen_limit


@dataclass(slots=True)
class GoldRuns:
    sql: str
    result: Result  # the gold as written
    compared: Result  # what predictions are compared with (the keyed re-run when usable)
    hidden: int = 0  # trailing ORDER BY key columns in ``compared`` and ``widened``
    widened: Result | None = None

    def compare_kwargs(self) -> dict[str, object]:
        """Keyword arguments for ``compare(runs.compared, pred, **runs.compare_kwargs())``."""
        return {"gold_sql": self.sql, "gold_widened": self.widened, "hidden_columns": self.hidden}


def run_gold(sql: str, dialect: str, run: Callable[[str], Result]) -> GoldRuns:
    result = run(sql)
    if not result.ok:
        return GoldRuns(sql, result, result)
    compared, hidden, base_sql = result, 0, sql
    keyed = keyed_order_sql(sql, dialect)
    if keyed is not None:
        keyed_result = run(keyed.sql)
        # Usable only when it returned as many rows; otherwise the ties stay unknown.
        if keyed_result.ok and len(keyed_result.rows) == len(result.rows):
            compared, hidden, base_sql = keyed_result, keyed.hidden_columns, keyed.sql
    wider_sql = widen_limit(base_sql, dialect)
    widened = run(wider_sql) if wider_sql else None
    return GoldRuns(sql, result, compared, hidden, widened)
