"""Everything comparison needs from the gold side, gathered by running the gold and its re-runs.

Comparison is pure: it never executes SQL. But two rules need more than the gold's own result:

* ties among rows ordered by keys the gold does not return (``ORDER BY COUNT(*) DESC``) can only
  be seen if the gold is re-run returning those keys too (:func:`keyed_order_sql`);
* a tie group cut by the gold's LIMIT shows only in a re-run with the LIMIT widened
  (:func:`widen_limit`);
* where NULLs sort is each engine's convention, so an ordered prediction that placed them by its
  own engine's rule is checked against the gold with NULLs placed that way (:func:`judge`,
  policy ``null_order``): its rows re-sorted here when the ORDER BY keys are output columns and
  nothing limits the rows, else the gold re-run.

:func:`run_gold` does both through a caller-supplied ``run`` function, so every caller (sweep,
``polysql compare``, Python users) gathers the same evidence the same way -- up front, or
(``deferred``) when the first prediction that is not the gold's own answer needs it. A re-run
whose engine cannot run it at all (an outage) raises EvidenceUnavailableError rather than
leaving the verdict to less evidence: an outage is never a wrong answer.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from polysql.core.model import Result, Verdict
from polysql.core.outage import require_available
from polysql.normalizers import text_order
from polysql.normalizers.compare import GOLD_DIALECT, compare, resolve_policy
from polysql.normalizers.gold_memo import GoldMemo
from polysql.normalizers.ordering import (
    WIDEN_EXTRA_ROWS,
    infer_order,
    keyed_order_sql,
    limits_rows,
    null_order_variants,
    replaced_nulls,
    widen_limit,
    widens,
)
from polysql.normalizers.policy import ROW_CAP_GROWTH

# The re-runs' results: (compared, hidden, widened) as GoldRuns holds them.
Evidence = tuple[Result, int, "Result | None"]


@dataclass(slots=True)
class GoldRuns:
    sql: str
    dialect: str
    result: Result  # the gold as written
    compared: Result  # what predictions are compared with (the keyed re-run when usable)
    hidden: int = 0  # trailing ORDER BY key columns in ``compared`` and ``widened``
    widened: Result | None = None
    # The re-runs not made yet (run_gold(deferred=True)): ``compared``, ``hidden`` and
    # ``widened`` hold the gold as written until :meth:`gather` makes them.
    pending: Callable[[], Evidence] | None = field(default=None, repr=False, compare=False)
    # Entered while waiting for another thread that is making the re-runs: a sweep counts that
    # wait nowhere, since their time is counted in the thread that makes them.
    waiting: Callable[[], AbstractContextManager[object]] = field(
        default=contextlib.nullcontext, repr=False, compare=False)
    _gathering: threading.Lock = field(default_factory=threading.Lock, repr=False,
                                       compare=False)
    # What comparing read off these results, kept for the next prediction compared with them.
    memo: GoldMemo = field(default_factory=GoldMemo, repr=False, compare=False)

    def compare_kwargs(self) -> dict[str, object]:
        """Keyword arguments for ``compare(runs.compared, pred, **runs.compare_kwargs())``."""
        return {"gold_sql": self.sql, "gold_widened": self.widened, "hidden_columns": self.hidden,
                "memo": self.memo}

    def gather(self) -> None:
        """Make the re-runs a deferred gold put off (once, whichever thread asks first)."""
        if self.pending is None:
            return
        if not self._gathering.acquire(blocking=False):  # another thread is making them
            with self.waiting():
                self._gathering.acquire()
        try:
            if self.pending is not None:
                self.compared, self.hidden, self.widened = self.pending()
                self.pending = None
        finally:
            self._gathering.release()


def run_gold(sql: str, dialect: str, run: Callable[[str], Result], *,
             deferred: bool = False,
             waiting: Callable[[], AbstractContextManager[object]] = contextlib.nullcontext,
             ) -> GoldRuns:
    """The gold run through ``run``, and the re-runs judging may need (see the module). With
    ``deferred`` the re-runs wait until a prediction is not simply the gold's own rows in the
    gold's own order (:func:`judge` then gathers them): a prediction that is needs none, nor
    does one that failed.
    ``waiting`` is entered while one thread waits for another that is making them."""
    result = run(sql)
    if not result.ok:
        return GoldRuns(sql, dialect, result, result)

    keyed = keyed_order_sql(sql, dialect)

    def evidence() -> Evidence:
        compared, hidden, base_sql = result, 0, sql
        if keyed is not None:
            keyed_result = require_available(run(keyed.sql), "the re-run of the gold "
                                             "returning its ORDER BY keys", side="gold")
            # Usable only when it returned as many rows; otherwise the ties stay unknown.
            if keyed_result.ok and len(keyed_result.rows) == len(result.rows):
                compared, hidden, base_sql = keyed_result, keyed.hidden_columns, keyed.sql
        wider_sql = widen_limit(base_sql, dialect)
        if wider_sql is None:
            return compared, hidden, None
        return compared, hidden, require_available(
            run(wider_sql), "the re-run of the gold with its LIMIT widened", side="gold")

    if deferred and (keyed is not None or widens(sql, dialect)):
        return GoldRuns(sql, dialect, result, result, pending=evidence, waiting=waiting)
    return GoldRuns(sql, dialect, result, *evidence())


def _replaced_nulls(gold: GoldRuns) -> dict[str, list[tuple[Any, ...]]] | None:
    """The gold rows under each other NULL convention when they can be re-sorted here instead of
    re-run (see :func:`replaced_nulls`): never for a truncated result or a keyed re-run."""
    if gold.result.truncated or gold.hidden or gold.widened is not None:
        return None
    return replaced_nulls(gold.sql, gold.dialect, gold.result.columns, gold.result.rows)


def judge_results(gold: Result, pred: Result, *, gold_sql: str | None = None,
                  ordered: bool | None = None, dialect: str = GOLD_DIALECT,
                  gold_widened: Result | None = None, hidden_columns: int = 0,
                  memo: GoldMemo | None = None, **policy: Any) -> Verdict:
    """:func:`~polysql.normalizers.compare.compare` with every rule of :func:`judge` that needs
    no engine: given ``gold_sql``, an ordered prediction whose NULLs sit where another engine's
    convention puts them matches when the gold's own rows can be moved that way. What only a
    re-run could tell stays under the strict rule. ``memo``: a GoldRuns' (``compare_kwargs``)."""
    if gold_sql is None:
        return compare(gold, pred, ordered=ordered, dialect=dialect, gold_widened=gold_widened,
                       hidden_columns=hidden_columns, memo=memo, **policy)
    runs = GoldRuns(gold_sql, dialect, gold, gold, hidden_columns, gold_widened,
                    memo=memo if memo is not None else GoldMemo())
    return judge(runs, pred, None, ordered=ordered, **policy)


def judge(gold: GoldRuns, pred: Result, run: Callable[[str], Result] | None = None, *,
          ordered: bool | None = None, **policy: Any) -> Verdict:
    """``compare`` plus the rules that need more gold evidence: an ordered prediction that misses
    only because its engine sorts NULLs by another convention matches the gold with NULLs placed
    that way (``null_order="either"``) -- its rows moved here when that is exact, otherwise the
    gold re-run through ``run`` on its engine. ``policy``: compare's options, and ``policy=`` a
    whole ComparePolicy as compare takes it."""
    options = {key: value for key, value in policy.items() if key != "policy"}
    chosen = resolve_policy(policy.get("policy"), options)
    # A failed prediction is judged on its error alone: no re-run could change that verdict.
    if gold.pending is not None and pred.ok:
        # Against the gold as written, ORDER BY keys it does not return demand its exact order
        # (unresolved_order_keys="exact"): what matches so also matches with the re-runs, which
        # only let rows tie. Anything else needs them.
        if chosen.unresolved_order_keys == "exact":
            plain = compare(gold.result, pred, ordered=ordered, dialect=gold.dialect,
                            gold_sql=gold.sql, memo=gold.memo, **policy)
            if plain.match:
                return plain
        gold.gather()
    verdict = compare(gold.compared, pred, ordered=ordered, dialect=gold.dialect,
                      **gold.compare_kwargs(), **policy)
    # As sets order never counts, but where NULLs sort still decides which rows a LIMIT keeps.
    ordered_rows = (verdict.details.get("ordered")
                    or verdict.details.get("order_source") == "set_semantics")
    if verdict.match or not ordered_rows:
        return verdict
    # Another NULL placement reorders the gold's rows, or picks others under its LIMIT, but
    # never changes how many there are: as bags a prediction of another length cannot match it.
    same_length = chosen.set_semantics or len(pred.rows) == len(gold.result.rows)
    if chosen.null_order == "either" and same_length:
        again = _with_nulls_elsewhere(gold, pred, run, ordered=ordered, **policy)
        if again is not None:
            return again
    # Rows that tie under the folded weights come in any order, so only where ties may.
    if chosen.text_order == "either" and (chosen.ties_any_order or chosen.set_semantics):
        again = _with_text_folded(gold, pred, chosen.null_order, chosen.set_semantics, policy)
        if again is not None:
            return again
    return verdict


@dataclass(frozen=True, slots=True)
class Judged:
    """A verdict with the evidence it was reached on (re-runs under a higher row cap, if any)."""

    verdict: Verdict
    gold: GoldRuns
    pred: Result


def rests_on_cut_rows(gold: Result, pred: Result, *, set_semantics: bool) -> bool:
    """Whether rows the row cap cut off could change the verdict of ``pred`` against ``gold``.

    Both cut: the engines kept rows of their own choosing (without an ORDER BY, any rows), so
    equal prefixes say nothing of the rest and unequal ones may be the same answer. One cut: as
    bags the cut side has more rows than the other has in all, so they differ whatever the rest
    holds; as sets its rows beyond the cap may all repeat ones already seen.
    """
    if not (gold.ok and pred.ok):
        return False
    if gold.truncated and pred.truncated:
        return True
    return set_semantics and (gold.truncated or pred.truncated)


def judge_within_row_cap(gold: GoldRuns, pred: Result, run: Callable[[str], Result] | None,
                         rerun: Callable[[int], tuple[Callable[[str], Result], Result]] | None,
                         row_cap: int, *, ordered: bool | None = None,
                         **policy: Any) -> Judged:
    """:func:`judge`, and when the verdict rests on rows the row cap cut off
    (:func:`rests_on_cut_rows`), judged again on the gold and the prediction re-run under a cap
    :data:`ROW_CAP_GROWTH` times higher. ``rerun(cap)`` gives the gold's ``run`` under ``cap``
    and the prediction's result under it. A verdict that still rests on cut rows says so in its
    reason and has ``details["rests_on_cut_rows"]``; ``details["row_cap"]`` is the cap of
    the re-runs it was reached on, when there were some."""
    options = {key: value for key, value in policy.items() if key != "policy"}
    as_sets = resolve_policy(policy.get("policy"), options).set_semantics
    judged: Judged | None = None
    # Whether the verdict would rest on cut rows depends on the results alone, so the rows as
    # cut are judged only when no re-run replaces them (judging two cut sides of a large
    # result, which mostly differ, costs as much as judging the re-run's).
    if rerun is not None and rests_on_cut_rows(gold.result, pred, set_semantics=as_sets):
        higher = row_cap * ROW_CAP_GROWTH
        run_higher, pred_higher = rerun(higher)
        require_available(pred_higher, f"the re-run of the prediction under a row cap of "
                          f"{higher}", side="prediction")
        gold_higher = run_gold(gold.sql, gold.dialect, run_higher)
        require_available(gold_higher.result, f"the re-run of the gold under a row cap of {higher}",
                          side="gold")
        # a re-run that failed (over the time limit, say) leaves the verdict on what was seen
        if gold_higher.result.ok and pred_higher.ok:
            again = judge(gold_higher, pred_higher, run_higher, ordered=ordered, **policy)
            again.details["row_cap"] = higher
            judged = Judged(again, gold_higher, pred_higher)
    if judged is None:
        judged = Judged(judge(gold, pred, run, ordered=ordered, **policy), gold, pred)
    if rests_on_cut_rows(judged.gold.result, judged.pred, set_semantics=as_sets):
        judged.verdict.details["rests_on_cut_rows"] = True
    return judged


def _with_nulls_elsewhere(gold: GoldRuns, pred: Result, run: Callable[[str], Result] | None, *,
                          ordered: bool | None, **policy: Any) -> Verdict | None:
    """The match of ``pred`` with the gold under another NULL convention, or None."""
    moved = _replaced_nulls(gold)
    for label, variant_sql in null_order_variants(gold.sql, gold.dialect):
        if moved is not None and label in moved:
            rows = moved[label]
            variant = GoldRuns(variant_sql, gold.dialect, dataclasses.replace(gold.result, rows=rows),
                               dataclasses.replace(gold.compared, rows=rows))
        elif run is not None:
            variant = run_gold(variant_sql, gold.dialect, run)
            require_available(variant.result, "the re-run of the gold with NULLs ordered by the "
                              f"{label.replace('_', ' ')} convention", side="gold")
        else:
            continue  # only a re-run could tell, and there is no engine to run it on
        if not variant.result.ok or variant.result.rows == gold.result.rows:
            continue  # the re-run failed, or NULL placement changes nothing here
        again = compare(variant.compared, pred, ordered=ordered, dialect=gold.dialect,
                        **variant.compare_kwargs(), **policy)
        if again.match:
            again.details["null_order"] = label
            again.reason += f" (with NULLs ordered by the {label.replace('_', ' ')} convention)"
            return again
    return None


def _with_text_folded(gold: GoldRuns, pred: Result, null_order: str, as_sets: bool,
                      policy: dict[str, Any]) -> Verdict | None:
    """The match of ``pred`` with the gold's answer ordered with text weighed without case or
    accents (see :mod:`polysql.normalizers.text_order`), or None. As sets (``as_sets``) only
    the rows a LIMIT keeps can differ, and the prediction's own order does not count."""
    if gold.result.truncated or pred.truncated or not pred.ok:
        return None
    # keys among the output columns: the prediction's order is checked on its own columns
    info = infer_order(gold.sql, gold.dialect, gold.result.columns)
    if info.keys is None:
        return None
    limited = limits_rows(gold.sql, gold.dialect)
    if as_sets and not limited:
        return None  # every row is kept whatever the order: the sets already differ
    widened = gold.widened.rows if (gold.widened is not None and gold.widened.ok
                                    and not gold.widened.truncated) else None
    if widened is not None and gold.hidden:  # a keyed re-run: its key columns trail the rest
        width = len(gold.result.columns)
        widened = [tuple(row[:width]) for row in widened]
    seen = widened if limited else gold.result.rows
    if seen is None or not text_order.holds_text(seen, info.keys):
        return None
    widened_limit = (info.limit or 0) + WIDEN_EXTRA_ROWS
    same_rows: Verdict | None = None
    tries = [(name, weigh, nulls) for name, weigh in text_order.WEIGHINGS
             for nulls in text_order.conventions(null_order, (seen, info.keys))]
    for collation, weigh, nulls in tries:
        rows = text_order.gold_rows_folded(info, limited, gold.result.rows, widened,
                                           widened_limit, nulls, weigh)
        if rows is None:
            return None
        if limited or same_rows is None:  # without a LIMIT the rows are those of every convention
            same_rows = compare(dataclasses.replace(gold.result, rows=rows), pred, ordered=False,
                                dialect=gold.dialect, **policy)
        if not same_rows.match:
            if not limited:
                return None
            continue
        if as_sets:
            details = {**same_rows.details, "text_order": "folded", "collation": collation}
            return Verdict(True, f"{same_rows.reason}, the rows the LIMIT keeps when text is "
                                 "ordered without regard to case or accents (as MySQL's and "
                                 "MariaDB's default collations order it)", details)
        column_map = same_rows.details.get("column_map")
        if not column_map:
            return None
        pred_keys = [column_map[k] for k in info.keys]
        if any(k is None for k in pred_keys):
            return None
        if not text_order.sorted_folded(pred.rows, pred_keys, info.descending, nulls, weigh):
            continue
        details = {**same_rows.details, "ordered": True, "text_order": "folded",
                   "collation": collation}
        if text_order.holds_null(pred.rows, pred_keys):
            details["null_order"] = nulls[0]
        return Verdict(True, f"same {len(rows)} rows, ordered by the ORDER BY keys with text "
                             "compared without regard to case or accents (as MySQL's and "
                             "MariaDB's default collations order it)", details)
    return None
