"""The comparison contract: does the predicted result answer the same as the gold result?

Steps: refuse to judge when the gold failed; fail a prediction that errored; learn from the gold SQL
whether order matters and on which output columns; align columns (by name, position, then
values); compare rows as a bag, a sequence, or a sequence of tie groups; and when the gold's LIMIT
cut through a group of tied rows (seen in the widened re-run), accept any rows of that group.
docs/comparison.md states every rule, its default and its policy switch.
"""

from __future__ import annotations

import gc
import itertools
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from polysql.core.columnar import ArrowRows
from polysql.core.errors import ComparisonError
from polysql.core.model import Result, Verdict
from polysql.normalizers.align import (
    Alignment,
    align_by_name,
    align_by_position,
    column_signature,
    value_pairings,
)
from polysql.normalizers.columns import ResultColumns
from polysql.normalizers.describe import plural, row_span
from polysql.normalizers.distinct import distinct_rows
from polysql.normalizers.families import is_float32_type
from polysql.normalizers.gold_memo import GoldMemo
from polysql.normalizers.hashing import HashScheme, hash_columns
from polysql.normalizers.identical import identical_rows
from polysql.normalizers.ordering import OrderInfo, infer_order, widen_limit
from polysql.normalizers.policy import DEFAULT_POLICY, ComparePolicy, preset_options
from polysql.normalizers.rows import (
    RowOutcome,
    Side,
    compare_bag,
    compare_sequence,
    compare_set,
    compare_tie_groups,
    contained_in,
    example_row,
    side_difference,
    tie_groups,
)
from polysql.normalizers.shape import mismatch_shape
from polysql.normalizers.values import PLAIN_READING, Reading, reading_for

__all__ = ["ComparePolicy", "check_order_request", "compare", "resolve_policy", "widen_limit"]


@dataclass(frozen=True, slots=True)
class RowOrder:
    """How rows are compared: ``ordered`` with ``keys`` (tie groups) or strictly (keys None)."""

    ordered: bool
    keys: tuple[int, ...] | None
    source: str  # "argument" | "gold_sql" | "no_gold_sql" | "unparsable_gold_sql"
    info: OrderInfo | None
    #: per gold row, the ORDER BY key values when they are not output columns (hidden columns)
    ties: list[tuple[Any, ...]] | None = None

    @property
    def distinct(self) -> bool:
        """Compare distinct rows (policy ``set_semantics``): duplicates do not count."""
        return self.source == "set_semantics"


def resolve_policy(policy: ComparePolicy | str | None, options: dict[str, Any]) -> ComparePolicy:
    """The policy for one call: ``policy`` (a ComparePolicy, the name of a preset such as
    ``"bird"``, or None for the defaults) with ``options`` applied."""
    if isinstance(policy, str):
        base = DEFAULT_POLICY.with_options(**preset_options(policy))
    else:
        base = policy if policy is not None else DEFAULT_POLICY
    return base.with_options(**options) if options else base


#: the dialect gold SQL is read in when the caller names none: text-to-SQL data sets write theirs
#: for SQLite
GOLD_DIALECT = "sqlite"


def compare(gold: Result, pred: Result, *, gold_sql: str | None = None,
            ordered: bool | None = None, gold_widened: Result | None = None,
            dialect: str = GOLD_DIALECT, policy: ComparePolicy | str | None = None,
            hidden_columns: int = 0, memo: GoldMemo | None = None, **options: Any) -> Verdict:
    """Decide whether ``pred`` answers the same as ``gold``.

    ``gold_sql`` (in ``dialect``) tells whether row order matters; ``ordered`` overrides that.
    ``gold_widened`` is the gold re-run with a wider LIMIT (see
    :func:`polysql.normalizers.ordering.widen_limit`), used to accept rows from a tie group the
    LIMIT cut. ``hidden_columns``: the gold (and widened gold) end with that many columns holding
    their ORDER BY keys (see :func:`polysql.normalizers.ordering.keyed_order_sql`); they tell tied
    rows apart and are not compared. ``policy`` and keyword ``options`` switch the contract's rules
    (ComparePolicy fields). ``memo``: where what the gold's results read as is kept between
    comparisons with the same gold (see :mod:`polysql.normalizers.gold_memo`); the results it
    is given with must not change.
    """
    pol = resolve_policy(policy, options)

    def split(result: Result) -> tuple[Result, list[tuple[Any, ...]] | None]:
        return _split_hidden(result, hidden_columns) if memo is None else \
            memo.split(result, hidden_columns, _split_hidden)

    with _gc_paused():
        gold_ties = widened_ties = None
        if hidden_columns:
            gold, gold_ties = split(gold)
            if gold_widened is not None:
                gold_widened, widened_ties = split(gold_widened)
        return _compare(gold, pred, gold_sql, ordered, gold_widened, dialect, pol,
                        gold_ties, widened_ties, memo)


def _split_hidden(result: Result, hidden: int) -> tuple[Result, list[tuple[Any, ...]] | None]:
    """``result`` without its last ``hidden`` columns, and those columns' values per row."""
    if not result.ok or len(result.columns) <= hidden:
        return result, None
    width = len(result.columns) - hidden
    rows: Sequence[tuple[Any, ...]]
    if isinstance(result.rows, ArrowRows):  # the visible columns stay Arrow columns
        rows = result.rows.select(range(width))
        ties = list(result.rows.select(range(width, len(result.columns))))
    else:
        rows = [row[:width] for row in result.rows]
        ties = [row[width:] for row in result.rows]
    visible = Result(columns=result.columns[:width], rows=rows,  # type: ignore[arg-type]
                     types=result.types[:width], elapsed=result.elapsed, truncated=result.truncated,
                     error=None, engine=result.engine)
    return visible, ties


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while comparing.

    Comparing builds millions of short-lived tuples and no reference cycles; with the collector
    on, each allocation burst triggers full passes over every live tuple (including the results'
    own rows), which costs more than the comparison itself on large results.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _compare(gold: Result, pred: Result, gold_sql: str | None, ordered: bool | None,
             gold_widened: Result | None, dialect: str, pol: ComparePolicy,
             gold_ties: list[tuple[Any, ...]] | None = None,
             widened_ties: list[tuple[Any, ...]] | None = None,
             memo: GoldMemo | None = None) -> Verdict:
    if not gold.ok:
        assert gold.error is not None
        return Verdict(False, f"invalid gold: the gold query failed with a {gold.error.kind} error "
                              f"({gold.error.message}); the prediction cannot be judged",
                       {"rule": "invalid_gold", "invalid_gold": True,
                        "gold_error": gold.error.to_dict()})
    if not pred.ok:
        assert pred.error is not None
        return Verdict(False, f"prediction failed with a {pred.error.kind} error: {pred.error.message}",
                       {"rule": "pred_error", "invalid_gold": False,
                        "pred_error": pred.error.to_dict()})

    order = _row_order(gold, gold_sql, ordered, dialect, pol, gold_ties)
    details: dict[str, Any] = {
        "invalid_gold": False,
        "ordered": order.ordered,
        "order_source": order.source,
        "order_keys": (None if order.distinct
                       else list(order.info.unresolved) if order.ties is not None and order.info
                       else [gold.columns[j] for j in order.keys] if order.keys is not None else None),
        "gold_rows": len(gold.rows),
        "pred_rows": len(pred.rows),
        "tie_at_limit": False,
        "truncated": gold.truncated or pred.truncated,
    }
    if order.info is not None and order.info.unresolved:
        details["unresolved_order_keys"] = list(order.info.unresolved)
        details["order_keys_from_gold_rerun"] = order.ties is not None
    caveat = _truncation_caveat(gold, pred)

    gold_cols = ResultColumns(gold, "gold", pol, memo=memo.of(gold, pol) if memo else None)
    pred_cols = ResultColumns(pred, "predicted", pol)
    widened = _usable_widened(gold_widened, gold, details)
    widened_cols = None if widened is None else ResultColumns(
        widened, "widened gold", pol, memo=memo.of(widened, pol) if memo else None)

    first_failure: tuple[Alignment, RowOutcome, dict[str, Any], tuple[Side, Side] | None] | None = None
    for alignment in _alignments(gold_cols, pred_cols, order, pol):
        outcome, extra, sides = _compare_aligned(gold_cols, pred_cols, widened_cols, alignment,
                                                 order, pol, widened_ties)
        if outcome.match:
            details.update(_alignment_details(alignment, pred_cols), **extra,
                           tolerance_pairs=outcome.tolerance_pairs, rule="rows")
            reason = caveat + outcome.reason
            read_as_utc = _zone_note(gold_cols, pred_cols, alignment, pol)
            if read_as_utc:
                details["naive_timestamps_read_as_utc"] = read_as_utc
                reason += f" (timestamps without a time zone read as UTC in {read_as_utc})"
            return Verdict(True, reason, details)
        if first_failure is None:
            first_failure = (alignment, outcome, extra, sides)
    if first_failure is None:
        details.update(alignment=None, rule="columns", mismatch="columns")
        return Verdict(False, caveat + _unalignable_reason(gold_cols, pred_cols, pol), details)
    alignment, outcome, extra, sides = first_failure
    assert sides is not None  # only a match skips building them
    details.update(_alignment_details(alignment, pred_cols), **extra,
                   tolerance_pairs=outcome.tolerance_pairs, rule="rows")
    details.update(_shape_details(*sides, outcome))
    return Verdict(False, caveat + outcome.reason, details)


def _shape_details(gold_side: Side, pred_side: Side, outcome: RowOutcome) -> dict[str, Any]:
    """The mismatch's shape for error analysis (see :mod:`polysql.normalizers.shape`), from the
    sides the rows were compared on and, for a bag, the rows that comparison left unpaired."""
    shape, worst = mismatch_shape(gold_side, pred_side, outcome.difference)
    out: dict[str, Any] = {"mismatch": shape}
    if worst is not None:
        out["max_relative_difference"] = worst
    return out


# -- order ----------------------------------------------------------------------------------------

def _row_order(gold: Result, gold_sql: str | None, ordered: bool | None, dialect: str,
               pol: ComparePolicy, gold_ties: list[tuple[Any, ...]] | None = None) -> RowOrder:
    info = infer_order(gold_sql, dialect, list(gold.columns)) if gold_sql else None
    keys = info.keys if info is not None and info.ordered else None
    # Keys that are not output columns: the gold re-run that returned them gives the tie groups.
    ties = gold_ties if (info is not None and info.ordered and info.unresolved
                         and gold_ties is not None and len(gold_ties) == len(gold.rows)) else None
    if pol.set_semantics:
        check_order_request(ordered, pol)
        # The tie groups still tell which rows a LIMIT that cut one could have kept.
        return RowOrder(False, None, "set_semantics", info, ties)
    if ties is not None:
        keys = ()
    if not pol.ties_any_order:
        keys, ties = None, None
    if ordered is not None:
        return RowOrder(ordered, keys if ordered else None, "argument", info,
                        ties if ordered else None)
    if info is None:
        return RowOrder(False, None, "no_gold_sql", None)
    if not info.parsed:
        return RowOrder(False, None, "unparsable_gold_sql", info)
    if info.ordered and info.unresolved and ties is None and pol.unresolved_order_keys == "bag":
        return RowOrder(False, None, "gold_sql", info)
    return RowOrder(info.ordered, keys if info.ordered else None, "gold_sql", info, ties)


def check_order_request(ordered: bool | None, pol: ComparePolicy) -> None:
    """Raise ComparisonError when ``ordered=True`` contradicts the policy (rows as sets), so a
    caller can refuse before running anything."""
    if ordered and pol.set_semantics:
        raise ComparisonError(
            "ordered=True (--ordered) asks for the gold's row order, but policy option "
            "set_semantics compares rows as sets, where order never counts; drop one of the two")


def _truncation_caveat(gold: Result, pred: Result) -> str:
    cut = [label for label, r in (("gold", gold), ("predicted", pred)) if r.truncated]
    if not cut:
        return ""
    return (f"{' and '.join(cut)} result truncated at the row cap, so only the rows returned were "
            "compared and the verdict may not hold for the full results: ")


def _usable_widened(widened: Result | None, gold: Result, details: dict[str, Any]) -> Result | None:
    if widened is None:
        return None
    if not widened.ok:
        details["widened_gold_error"] = widened.error.to_dict() if widened.error else None
        return None
    if len(widened.columns) != len(gold.columns):
        details["widened_gold_error"] = {"kind": "columns", "message": "widened gold has "
                                         f"{len(widened.columns)} columns, gold {len(gold.columns)}"}
        return None
    return widened


# -- columns --------------------------------------------------------------------------------------

def _alignments(gold: ResultColumns, pred: ResultColumns, order: RowOrder, pol: ComparePolicy):
    """Candidate alignments, most meaningful first, each tried at most once."""
    seen: set[tuple[int, ...]] = set()
    by_name = None
    if pol.align_by_name:
        by_name = align_by_name(gold.names, pred.names, case_insensitive=pol.case_insensitive_headers,
                                allow_extra=pol.allow_extra_columns)
        if by_name is not None:
            seen.add(by_name.mapping)
            yield by_name
    by_position = align_by_position(gold.width, pred.width)
    if by_position is not None and by_position.mapping not in seen:
        seen.add(by_position.mapping)
        yield by_position
    # Values decide only when names and positions did not give a match (this generator is lazy:
    # a prediction matched by name or position never pays for hashing every column), and not
    # when the names already said which column is which. With equal widths that leaves a
    # prediction listing the same columns in another order under other names; the same names
    # (a repeated FirstName for employee and manager) leave their order to say which is which,
    # unless names are not to count at all (align_by_name off, as Spider's evaluator has it).
    if pol.align_by_value and (gold.width != pred.width
                               or (by_name is None and (not pol.align_by_name
                                                        or not _same_headers(gold, pred, pol)))):
        strict = order.ordered and order.keys is None
        gold_sigs = [column_signature(gold.keys(j, _self_reading(gold, j, pol)), strict,
                                      distinct=order.distinct) for j in range(gold.width)]
        pred_sigs = [column_signature(pred.keys(j, _self_reading(pred, j, pol)), strict,
                                      distinct=order.distinct) for j in range(pred.width)]
        # Each further pairing costs a comparison of the rows: fewer of them on large results.
        pairings = max(2, _PAIRING_ROWS // max(1, gold.height, pred.height))
        for by_value in itertools.islice(value_pairings(
                gold_sigs, pred_sigs, allow_extra=pol.allow_extra_columns), pairings):
            if by_value.mapping not in seen:
                seen.add(by_value.mapping)
                yield by_value


#: Rows compared in all across the pairings of same-valued columns that value alignment tries
#: after its first (at least one more is always tried).
_PAIRING_ROWS = 2_000_000


def _same_headers(gold: ResultColumns, pred: ResultColumns, pol: ComparePolicy) -> bool:
    """Whether both results carry the same headers, counted, in any order."""
    def fold(names: list[str]) -> list[str]:
        return sorted(name.casefold() if pol.case_insensitive_headers else name for name in names)
    return fold(gold.names) == fold(pred.names)


def _self_reading(cols: ResultColumns, j: int, pol: ComparePolicy) -> Reading:
    # Full canonical keys (not native ones), so Decimal 1.1 and float 1.1 columns agree.
    return reading_for(cols.types(j), pol, native_ok=False)


def _alignment_details(alignment: Alignment, pred: ResultColumns) -> dict[str, Any]:
    return {"alignment": alignment.method,
            "column_map": list(alignment.mapping),
            "ignored_pred_columns": [pred.names[j] for j in alignment.ignored(pred.width)]}


def _unalignable_reason(gold: ResultColumns, pred: ResultColumns, pol: ComparePolicy) -> str:
    if pred.width == 0 and gold.width:
        # What a statement that answers nothing gives (MySQL's DO, a SELECT ... INTO where it is
        # allowed): say so rather than list zero columns to align.
        return (f"the prediction returned no result set (no columns); gold has "
                f"{plural(gold.width, 'column')} {gold.names}")
    # only the ways the policy allows (a preset may turn names or values off)
    ways = [way for way, allowed in (("name", pol.align_by_name), ("position", True),
                                     ("values", pol.align_by_value)) if allowed]
    tried = ", ".join(ways[:-1]) + f" or {ways[-1]}" if len(ways) > 1 else ways[0]
    extra = "" if pol.allow_extra_columns else " (no extra predicted column allowed)"
    return (f"columns cannot be aligned: gold has {plural(gold.width, 'column')} {gold.names}, "
            f"predicted {pred.width} {pred.names}; no alignment by {tried}{extra}")


def _read_json_pairs(gold: ResultColumns, pred: ResultColumns, widened: ResultColumns | None,
                     alignment: Alignment) -> None:
    """Text compared with a column the engine says is JSON is read as JSON too (a JSON value
    may come back parsed from one driver and as text from another)."""
    for j, k in enumerate(alignment.mapping):
        if gold.is_json(j) or pred.is_json(k) or (widened is not None and widened.is_json(j)):
            gold.read_as_json(j)
            pred.read_as_json(k)
            if widened is not None:
                widened.read_as_json(j)


def _zone_note(gold: ResultColumns, pred: ResultColumns, alignment: Alignment,
               pol: ComparePolicy) -> list[str]:
    """Gold columns whose timestamps had a zone where the predicted ones had none, or the other
    way round: under ``naive_timestamps="utc"`` the zoneless side was read as UTC."""
    if pol.naive_timestamps != "utc" or not gold.zones or not pred.zones:
        return []
    return [gold.names[j] for j, k in enumerate(alignment.mapping)
            if (gold.zones[j].aware and pred.zones[k].naive)
            or (gold.zones[j].naive and pred.zones[k].aware)]


def _sides(gold: ResultColumns, pred: ResultColumns, widened: ResultColumns | None,
           alignment: Alignment, pol: ComparePolicy) -> tuple[Side, Side, Side | None]:
    _read_json_pairs(gold, pred, widened, alignment)
    readings = []
    for j, k in enumerate(alignment.mapping):
        types = gold.types(j) | pred.types(k) | (widened.types(j) if widened is not None else frozenset())
        reading = reading_for(types, pol) if types else PLAIN_READING
        if float in types and any(is_float32_type(name) for name in (
                gold.type_name(j), pred.type_name(k),
                widened.type_name(j) if widened is not None else None)):
            reading = replace(reading, approximate=True)
        readings.append(reading)

    gold_indices = tuple(range(gold.width))
    sides = [(gold, gold_indices), (pred, alignment.mapping)]
    if widened is not None:
        sides.append((widened, gold_indices))
    keys = [[cols.keys(j, r) for j, r in zip(indices, readings, strict=True)] for cols, indices in sides]
    # One hash scheme per aligned column, chosen from every side's keys so all sides agree.
    schemes: list[HashScheme] = []
    hashes: list[list[np.ndarray]] = [[] for _ in sides]
    for j in range(gold.width):
        scheme, per_side = hash_columns(
            [side_keys[j] for side_keys in keys],
            lambda i, j=j: sides[i][0].key_types(sides[i][1][j], readings[j]))
        schemes.append(scheme)
        for side_hashes, hashed in zip(hashes, per_side, strict=True):
            side_hashes.append(hashed)
    built = [Side(cols.label, [cols.raw[j] for j in indices], side_keys, readings, pol, cols.height,
                  schemes, side_hashes, [cols.types(j) for j in indices])
             for (cols, indices), side_keys, side_hashes in zip(sides, keys, hashes, strict=True)]
    return built[0], built[1], built[2] if widened is not None else None


# -- rows -----------------------------------------------------------------------------------------

def _compare_aligned(gold: ResultColumns, pred: ResultColumns, widened: ResultColumns | None,
                     alignment: Alignment, order: RowOrder, pol: ComparePolicy,
                     widened_ties: list[tuple[Any, ...]] | None = None,
                     ) -> tuple[RowOutcome, dict[str, Any], tuple[Side, Side] | None]:
    """Compare the rows under one alignment; also returns the gold and predicted Sides built
    for it (a mismatch's shape is read off them; None for rows equal as they came)."""
    # With a widened gold, equal rows may still be a tie cut by the LIMIT, which the verdict
    # details; every other match of equal rows reads as the full comparison would put it.
    if widened is None and identical_rows(gold, pred, alignment, ordered=order.ordered):
        how = "in the same order" if order.ordered else \
            "as a bag, so also as sets" if order.distinct else "as a bag"
        return RowOutcome(True, f"same {plural(gold.height, 'row')} {how}"), {}, None
    gold_side, pred_side, widened_side = _sides(gold, pred, widened, alignment, pol)
    return _compare_sides(gold, gold_side, pred_side, widened_side, order, pol, widened_ties)


def _compare_sides(gold: ResultColumns, gold_side: Side, pred_side: Side,
                   widened_side: Side | None, order: RowOrder, pol: ComparePolicy,
                   widened_ties: list[tuple[Any, ...]] | None,
                   ) -> tuple[RowOutcome, dict[str, Any], tuple[Side, Side]]:
    """The rows' outcome, details, and the two sides it was reached on (as sets: each side's
    distinct rows, which a mismatch's unpaired positions refer to)."""
    sides = (gold_side, pred_side)
    if gold_side.height == 0 and pred_side.height == 0:
        return RowOutcome(True, "both results are empty"), {}, sides
    info = order.info
    # The keys come from the SQL, not from the order mode: with ordered=False the tie group cut
    # by the LIMIT still decides which rows the gold could have returned.
    tie_keys = _tie_key_source(info, order, widened_side, widened_ties)
    if (widened_side is not None and pol.ties_at_limit and info is not None and info.ordered
            and tie_keys is not None and info.limit is not None and gold.height > 0):
        cut = _cut_tie_group(gold_side, widened_side, *tie_keys)
        if cut is not None:
            if order.distinct:
                return (*_set_with_cut_ties(gold_side, pred_side, widened_side, cut), sides)
            return (*_compare_with_cut_ties(gold_side, pred_side, widened_side, cut, order,
                                            gold.names), sides)
    if order.distinct:
        gold_set, pred_set = distinct_rows(gold_side), distinct_rows(pred_side)
        return (compare_set(gold_set, pred_set),
                {"gold_distinct_rows": gold_set.height, "pred_distinct_rows": pred_set.height},
                (gold_set, pred_set))
    return _compare_rows(gold_side, pred_side, order, gold.names), {}, sides


def _tie_key_source(info: OrderInfo | None, order: RowOrder, widened: Side | None,
                    widened_ties: list[tuple[Any, ...]] | None):
    """How to read the ORDER BY keys of the widened rows: output columns, or the values the keyed
    widened re-run returned; None when neither is known."""
    if info is None:
        return None
    if info.keys is not None:
        return (info.keys, None)
    if order.ties is not None and widened is not None and widened_ties is not None \
            and len(widened_ties) == widened.height:
        return ((), widened_ties)
    return None


def _compare_rows(gold: Side, pred: Side, order: RowOrder, names: list[str]) -> RowOutcome:
    if not order.ordered:
        return compare_bag(gold, pred)
    if order.keys is None:
        return compare_sequence(gold, pred, names)
    return compare_tie_groups(gold, pred, order.keys, names, order.ties)


@dataclass(frozen=True, slots=True)
class CutTies:
    """The gold's last tie group continues past its LIMIT."""

    boundary: int  # first gold row of the last tie group
    group_rows: list[int]  # rows of the widened gold in that tie group
    may_continue: bool  # the widened gold ends inside the group: it may be longer still


def _cut_tie_group(gold: Side, widened: Side, keys: tuple[int, ...],
                   widened_ties: list[tuple[Any, ...]] | None = None) -> CutTies | None:
    """The tie group the gold's LIMIT cuts, as the widened re-run shows it (None: no cut).

    The gold is the widened re-run's first rows (the same query with a wider LIMIT), so the
    group is the widened run's tie group at the gold's last position, grouped as any gold is
    (a run ordered only by float noise is one group)."""
    if gold.height == 0 or widened.height < gold.height:
        return None
    groups = tie_groups(widened, keys, widened_ties)
    members = np.flatnonzero(groups == groups[gold.height - 1])
    boundary = int(members[0])
    if len(members) <= gold.height - boundary:
        return None
    may_continue = int(members[-1]) == widened.height - 1
    return CutTies(boundary, members.tolist(), may_continue)


def _compare_with_cut_ties(gold: Side, pred: Side, widened: Side, cut: CutTies, order: RowOrder,
                           names: list[str]) -> tuple[RowOutcome, dict[str, Any]]:
    extra = {"tie_at_limit": True, "tie_group_rows_seen": len(cut.group_rows),
             "tie_group_may_continue": cut.may_continue}
    slots = gold.height - cut.boundary
    group = widened.rows(cut.group_rows)
    if pred.height != gold.height:
        return RowOutcome(False, f"gold has {plural(gold.height, 'row')}, predicted {pred.height} "
                                 "(the LIMIT cuts a tie group, but the row count must still match)"), extra
    prefix_gold = gold.rows(range(cut.boundary))
    if order.ordered:
        # Rows before the cut group must match in order; the last `slots` rows may be any rows
        # of the tie group.
        prefix_pred = pred.rows(range(cut.boundary))
        before = _compare_rows(prefix_gold, prefix_pred, order, names) if cut.boundary else \
            RowOutcome(True, "")
        if not before.match:
            return before, extra
        tail = pred.rows(range(cut.boundary, pred.height))
    else:
        # Bag: every gold row outside the cut group must be predicted; the rest must come
        # from the tie group.
        gold_left, pred_left, _ = side_difference(prefix_gold, pred)
        if gold_left:
            return RowOutcome(False, f"{plural(len(gold_left), 'gold row')} missing from prediction, "
                                     f"e.g. {example_row(prefix_gold, gold_left)}"), extra
        tail = pred.rows(pred_left)
    foreign, paired = contained_in(group, tail)
    if foreign:
        return RowOutcome(False, f"the gold's LIMIT cuts a tie group at {row_span(cut.boundary, gold.height - 1)}, "
                                 f"but predicted row {example_row(tail, foreign)} is not one "
                                 f"of the {len(cut.group_rows)} tied rows", paired), extra
    head = f"first {plural(cut.boundary, 'row')} match and the last " if cut.boundary else "all "
    return RowOutcome(True, f"{head}{plural(slots, 'row')} come from the tie group the gold's "
                            f"LIMIT cuts ({len(cut.group_rows)} tied rows seen)", paired), extra


def _set_with_cut_ties(gold: Side, pred: Side, widened: Side,
                       cut: CutTies) -> tuple[RowOutcome, dict[str, Any]]:
    """:func:`_compare_with_cut_ties` for rows compared as sets: every distinct gold row before
    the cut group is predicted, and every other distinct predicted row is a row of the group,
    no more of them than the rows the gold took from it, and at least one."""
    extra = {"tie_at_limit": True, "tie_group_rows_seen": len(cut.group_rows),
             "tie_group_may_continue": cut.may_continue}
    before = distinct_rows(gold.rows(range(cut.boundary)))
    predicted = distinct_rows(pred)
    slots = gold.height - cut.boundary  # rows, not distinct rows: an engine may take others
    gold_left, pred_left, _ = side_difference(before, predicted)
    if gold_left:
        return RowOutcome(False, f"{plural(len(gold_left), 'gold row')} missing from prediction, "
                                 f"e.g. {example_row(before, gold_left)}"), extra
    tail = predicted.rows(pred_left)
    foreign, paired = contained_in(distinct_rows(widened.rows(cut.group_rows)), tail)
    if foreign:
        return RowOutcome(False, f"the gold's LIMIT cuts a tie group at {row_span(cut.boundary, gold.height - 1)}, "
                                 f"but predicted row {example_row(tail, foreign)} is not one "
                                 f"of the {len(cut.group_rows)} tied rows", paired), extra
    if not 0 < tail.height <= slots:
        return RowOutcome(False, f"the gold takes {plural(slots, 'row')} from the tie group its "
                                 f"LIMIT cuts, the prediction {tail.height} distinct rows"), extra
    head = f"the first {plural(before.height, 'distinct row')} match and the other " \
        if cut.boundary else "all "
    return RowOutcome(True, f"as sets, {head}{plural(tail.height, 'distinct row')} come from the "
                            f"tie group the gold's LIMIT cuts ({len(cut.group_rows)} tied rows "
                            "seen)", paired), extra
