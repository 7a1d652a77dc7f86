"""The switches of the comparison contract, gathered in one frozen object.

Every rule of docs/comparison.md that could reasonably be argued either way has a field here, so a
user who disagrees with a default can turn it off per call (``polysql.compare(..., bool_as_int=False)``)
without forking the comparison code.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, fields, replace
from typing import Any, Literal

from polysql.core.errors import ComparisonError

#: Bumped whenever a default of the contract changes what is judged equal: sweep records carry it,
#: so a resumed sweep re-judges (from its execution cache) every verdict made under another one.
#: 2: numbers written out in full are compared without relative tolerance (short_numbers_exact);
#:    same-width columns under other names align by value; runs ordered by the gold's float
#:    noise form one tie group.
#: 3: float noise around a decimal of at most 10 significant digits counts as that decimal
#:    written out in full (22979.630000000005 is 22979.63, so no longer equal to 22979.6).
#: 4: an ordered prediction may order text keys without regard to case or accents, as the
#:    default collations of MySQL and MariaDB do (text_order); a position among ORDER BY keys
#:    the gold does not return (ORDER BY 1, COUNT(*)) orders by its column, no longer ties.
#: 5: an integer against a number not written out in full (393599 against an AVG of
#:    393599.2121039109) differs beyond float noise, no longer within the relative tolerance.
#: 6: a verdict that rests on rows the row cap cut off (both results cut, or either as sets) is
#:    reached on the gold and the prediction run again under a cap ten times higher.
#: 7: columns aligned by their values try the other pairings of columns that hold the same
#:    values (a home and an away team), not only the leftmost; with names not counting
#:    (align_by_name off) the same headers in another order align by value too.
CONTRACT_VERSION = 7

#: How much higher the row cap is when a verdict rested on rows the first cap cut off (contract 6).
ROW_CAP_GROWTH = 10

UnresolvedOrder = Literal["exact", "bag"]
NullOrder = Literal["either", "strict"]
TextOrder = Literal["either", "strict"]
ArrayOrder = Literal["ordered", "unordered"]
NaiveTimestamps = Literal["utc", "strict"]


@dataclass(frozen=True, slots=True)
class ComparePolicy:
    """How lenient the comparison is. Defaults are the contract in docs/comparison.md."""

    # -- values -------------------------------------------------------------------------------
    #: compare numbers within ``rel_tol``/``abs_tol``; False means exact numeric equality
    numeric_tolerance: bool = True
    rel_tol: float = 1e-5
    abs_tol: float = 1e-9
    #: two numbers both written out in at most 12 significant digits (integers, rounded
    #: results, exact numerics) get no relative tolerance beyond a 32-bit float's precision: it
    #: is for float noise, not rounding
    short_numbers_exact: bool = True
    #: text that spells a number equals that number (only against a column holding numbers)
    numeric_strings: bool = True
    #: True/False equal 1/0
    bool_as_int: bool = True
    #: text 'true'/'false' (any case) equals a boolean (only against a column holding booleans)
    bool_text: bool = False
    #: a floating NaN equals another NaN
    nan_equals_nan: bool = True
    #: dates/datetimes equal their ISO text ('T' or space, fractional zeros ignored)
    temporal_text: bool = True
    #: a datetime at exactly midnight equals the date alone
    midnight_as_date: bool = True
    #: 'abc  ' equals 'abc' (CHAR padding differs between engines)
    trim_trailing_spaces: bool = True

    # -- columns ------------------------------------------------------------------------------
    #: compare column headers ignoring case when aligning by name
    case_insensitive_headers: bool = True
    #: align columns by header name when every gold name is found among the predicted ones
    align_by_name: bool = True
    #: extra predicted columns are ignored (name or value alignment)
    allow_extra_columns: bool = True
    #: match columns by their values when names and positions cannot align them
    align_by_value: bool = True

    # -- rows ---------------------------------------------------------------------------------
    #: rows tied on the gold's ORDER BY keys may come in any order among themselves
    ties_any_order: bool = True
    #: accept any rows from a tie group cut by the gold's LIMIT (needs ``gold_widened``)
    ties_at_limit: bool = True
    #: what to do when an ORDER BY key is not an output column: demand the gold's exact row
    #: order ("exact") or ignore order altogether ("bag")
    unresolved_order_keys: UnresolvedOrder = "exact"
    #: where NULLs sort is each engine's convention (SQLite/MySQL: smallest, PostgreSQL: largest,
    #: DuckDB: last). "either": an ordered prediction also matches the gold re-run with NULLs
    #: placed by another convention (needs a re-run, see normalizers.gold.judge); "strict": no
    null_order: NullOrder = "either"
    #: text ORDER BY keys: by code point (SQLite, DuckDB, PostgreSQL "C") or by a case- and
    #: accent-insensitive collation (MySQL/MariaDB defaults). "either": an ordered prediction also
    #: matches when it is the gold's answer in that second order (see normalizers.text_order);
    #: "strict": the gold's own order only
    text_order: TextOrder = "either"
    #: compare the results' distinct rows with order ignored, as BIRD's execution accuracy does
    #: (``set(predicted) == set(gold)``): duplicates and row order never count, and the tie
    #: rules above do not apply. Off: rows are a bag, or a sequence under ORDER BY.
    set_semantics: bool = False

    # -- structured values (see normalizers.families) ---------------------------------------
    #: arrays compare element by element in order ("ordered") or as multisets ("unordered")
    array_order: ArrayOrder = "ordered"
    #: a timestamp without a zone against one with: "utc" reads it as UTC (the verdict says so
    #: when that decided a match); "strict": never equal
    naive_timestamps: NaiveTimestamps = "utc"

    def __post_init__(self) -> None:
        for name in ("rel_tol", "abs_tol"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value) \
                    or value < 0 or value >= 1:
                raise ComparisonError(
                    f"policy option {name} must be a number in [0, 1), got {value!r}"
                )
        for f in fields(self):
            if f.type == "bool" and not isinstance(getattr(self, f.name), bool):
                raise ComparisonError(
                    f"policy option {f.name} must be True or False, got {getattr(self, f.name)!r}"
                )
        if self.null_order not in ("either", "strict"):
            raise ComparisonError(
                f"policy option null_order must be 'either' or 'strict', got {self.null_order!r}")
        if self.text_order not in ("either", "strict"):
            raise ComparisonError(
                f"policy option text_order must be 'either' or 'strict', got {self.text_order!r}")
        if self.array_order not in ("ordered", "unordered"):
            raise ComparisonError("policy option array_order must be 'ordered' or 'unordered', "
                                  f"got {self.array_order!r}")
        if self.naive_timestamps not in ("utc", "strict"):
            raise ComparisonError("policy option naive_timestamps must be 'utc' or 'strict', "
                                  f"got {self.naive_timestamps!r}")
        if self.unresolved_order_keys not in ("exact", "bag"):
            raise ComparisonError(
                "policy option unresolved_order_keys must be 'exact' or 'bag', "
                f"got {self.unresolved_order_keys!r}"
            )

    @property
    def tolerant(self) -> bool:
        """Whether numbers are compared within a tolerance rather than exactly."""
        return self.numeric_tolerance and (self.rel_tol > 0 or self.abs_tol > 0)

    @property
    def significant_digits(self) -> int:
        """Digits kept when bucketing numbers for hashing: buckets no wider than ``rel_tol``."""
        if self.rel_tol <= 0:
            return 17
        return min(17, 1 + math.ceil(-math.log10(self.rel_tol)))

    def with_options(self, **options: Any) -> ComparePolicy:
        """A copy with ``options`` changed; unknown names raise ComparisonError."""
        unknown = sorted(set(options) - set(option_names()))
        if unknown:
            raise ComparisonError(
                f"unknown comparison policy option(s) {', '.join(unknown)}; "
                f"valid options are: {', '.join(option_names())}"
            )
        return replace(self, **options)


def option_names() -> list[str]:
    """Names of every policy option, in declaration order."""
    return [f.name for f in fields(ComparePolicy)]


DEFAULT_POLICY = ComparePolicy()

#: Named sets of options that reproduce another evaluator's verdicts (``--policy bird``,
#: ``polysql.compare(..., policy="bird")``); options given beside a preset override it.
PRESETS: dict[str, dict[str, Any]] = {
    # BIRD's evaluation script: set(predicted) == set(gold) on the fetched tuples -- columns by
    # position, values by Python's == (1 == 1.0, '1' != 1, 0.1 + 0.2 != 0.3), text as it is,
    # and no allowance for the rows a LIMIT keeps among ties, NULLs or another collation.
    "bird": {"set_semantics": True, "align_by_name": False, "align_by_value": False,
             "numeric_tolerance": False, "numeric_strings": False, "trim_trailing_spaces": False,
             "temporal_text": False, "ties_at_limit": False, "null_order": "strict",
             "text_order": "strict"},
    # Spider's test-suite execution match: the rows as a bag, or as a sequence when the gold has
    # an ORDER BY, each row's values by Python's ==, with the predicted columns in any order but
    # no column more or fewer; no allowance for ties, NULLs or another collation either.
    "spider": {"align_by_name": False, "allow_extra_columns": False,
               "numeric_tolerance": False, "numeric_strings": False,
               "trim_trailing_spaces": False, "temporal_text": False, "midnight_as_date": False,
               "ties_any_order": False, "ties_at_limit": False, "null_order": "strict",
               "text_order": "strict"},
}


def preset_options(name: str) -> dict[str, Any]:
    """The options of the preset called ``name``; ComparisonError names the presets there are."""
    options = PRESETS.get(name)
    if options is None:
        raise ComparisonError(f"unknown comparison policy preset {name!r}; the presets are: "
                              f"{', '.join(sorted(PRESETS))}")
    return dict(options)


def changed_options(recorded: Any) -> dict[str, Any]:
    """The options of a policy as a run records it (run.json's or a bundle's ``settings.policy``)
    that differ from the contract's defaults: what makes a run's verdicts incomparable with a
    default run's. Nothing recorded, or not a mapping, is the default policy."""
    if not isinstance(recorded, dict):
        return {}
    return {name: value for name, value in sorted(recorded.items())
            if getattr(DEFAULT_POLICY, name, None) != value}



def options_text(options: dict[str, Any]) -> str:
    """``options`` as they are typed after ``--policy``: ``set_semantics=true, rel_tol=0.01``,
    led by the name of the preset they are exactly, if any: ``bird (set_semantics=true, ...)``."""
    text = ", ".join(f"{name}={json.dumps(value)}" for name, value in options.items())
    for name, preset in PRESETS.items():
        if options and options == preset:
            return f"{name} ({text})"
    return text
