"""Spot the commonest matches cheaply: a prediction whose rows equal the gold's, row for row, or
(for a small unordered result) the same rows in another order.

Python's own equality of two lists of row tuples runs in C and stops at the first difference, so
asking costs little whether the answer is yes or no; for a bag of at most
:data:`SMALL_BAG_ROWS` rows, counting each side's row tuples (a Counter) costs less than the
keyed comparison would. Where the values are plain scalars it also
implies the contract's equality: numbers equal exactly (int, float, Decimal and bool alike) are
equal within any tolerance, equal text stays equal with or without trailing spaces, and NaN
equals itself only when it is the same object, which the contract (``nan_equals_nan``) allows
too. What it does not imply is left to the full comparison, which is never skipped for:

* values inside arrays, structs, maps or JSON (a nested True is not a nested 1 there), values of
  types this module does not know, and datetimes (which of a column's values carry a time zone
  is noted in the verdict, and only the full comparison reads the zones);
* a column holding floats or decimals beside numbers of another type: an integer beyond 2**53
  equals its float exactly, and so does a float the decimal of all its digits, yet the full
  comparison reads one side as written out and the other as approximate, pairs the two through
  its tolerance pass and says so;
* columns an engine types as JSON, a map, an interval or a time of day, whose values are read
  into another form first;
* policies under which Python's equality says more than the contract (``bool_as_int`` or
  ``nan_equals_nan`` off);
* a prediction whose columns do not line up one for one with the gold's, and Arrow results.

A yes therefore gives exactly the verdict the full comparison would; a no costs one pass that
ends at the first differing row, or two Counters of a small result.
"""

from __future__ import annotations

from collections import Counter
from datetime import date, time, timedelta
from decimal import Decimal
from uuid import UUID

from polysql.core.columnar import ArrowRows
from polysql.normalizers.align import Alignment
from polysql.normalizers.columns import ResultColumns
from polysql.normalizers.families import type_family

#: rows up to which an unordered result is also tried as a bag of row tuples: Python hashes
#: them faster than the keyed comparison reads them, and for large results the other way round
#: (hashing a million Decimals or dates costs seconds)
SMALL_BAG_ROWS = 10_000

_NUMBERS: frozenset[type] = frozenset({bool, int, float, Decimal})
_INEXACT: frozenset[type] = frozenset({float, Decimal})

# Types whose equality is the contract's equality, at the top level of a row. datetime is left
# out on purpose (see the module docstring); date is the exact type, not its datetime subclass.
_SCALARS: frozenset[type] = frozenset({type(None), bool, int, float, Decimal, str, bytes, date,
                                       time, timedelta, UUID})


def identical_rows(gold: ResultColumns, pred: ResultColumns, alignment: Alignment, *,
                   ordered: bool = True) -> bool:
    """Whether ``pred``'s rows equal ``gold``'s, column for column, in the same order (or, not
    ``ordered``, as small bags), in a way that settles the comparison as a match (see the
    module docstring)."""
    policy = gold.policy
    if not (policy.bool_as_int and policy.nan_equals_nan):
        return False
    width = gold.width
    if pred.width != width or gold.height != pred.height or gold.height == 0 \
            or alignment.mapping != tuple(range(width)):
        return False
    gold_rows, pred_rows = gold.rows, pred.rows
    if isinstance(gold_rows, ArrowRows) or isinstance(pred_rows, ArrowRows):
        return False
    if any(type_family(name) is not None for name in (*gold.type_names, *pred.type_names)):
        return False
    try:
        if gold_rows != pred_rows and (ordered or gold.height > SMALL_BAG_ROWS
                                       or Counter(gold_rows) != Counter(pred_rows)):
            return False
    except Exception:  # noqa: BLE001 - a value that cannot be compared or hashed (a signalling
        return False   # Decimal NaN, a list inside a row)
    # The value types of each column, as the full comparison reads them first (and keeps: should
    # the answer be no, it does not read them again). Rows of another width than the header
    # raise here, as they would there.
    for j in range(width):
        kinds = gold.types(j) | pred.types(j)
        if not kinds <= _SCALARS or _mixed_numbers(kinds):
            return False
    return True


def _mixed_numbers(kinds: frozenset[type]) -> bool:
    """Whether a float or a decimal is among ``kinds`` beside another type of number."""
    numbers = kinds & _NUMBERS
    return bool(numbers & _INEXACT) and len(numbers) > 1

