"""Canonical keys for result values: one hashable key per value, computed a whole column at a time.

Two values that the contract calls equal get equal keys (``1``, ``1.0``, ``Decimal('1.00')`` and,
against a numeric column, ``'1'``), so rows can be compared as tuples of keys with hashing and
counting instead of pairwise loops. Numbers are bucketed to the policy's significant digits, which
makes equal keys imply "within tolerance"; values within tolerance that fall into neighbouring
buckets are reconciled afterwards by :mod:`polysql.normalizers.tolerance` on the few rows left over.

Work is dispatched once per column on the set of Python types it holds, so the common homogeneous
columns, with or without NULLs, are converted with a single vectorized numpy pass or a C-level
``map``; only columns mixing several types take the general path (:func:`keys_by_type`).
"""

from __future__ import annotations

import math
import re
import uuid
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from decimal import Decimal, InvalidOperation
from itertools import compress, repeat
from numbers import Integral, Real
from operator import is_, is_not
from typing import Any

import numpy as np

from polysql.core.columnar import ArrowColumn, RowsColumn
from polysql.normalizers.policy import ComparePolicy

NoneType = type(None)
NUMBER_TYPES: frozenset[type] = frozenset({int, float, Decimal})
TEMPORAL_TYPES: frozenset[type] = frozenset({date, datetime, time})
BINARY_TYPES: frozenset[type] = frozenset({bytes, bytearray, memoryview})
#: integers up to this magnitude convert to float64 exactly
EXACT_FLOAT_INT = 2**53


class _NaN:
    """The key of every NaN when NaN equals NaN (float('nan') is not equal to itself)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NaN"


NAN_KEY = _NaN()


@dataclass(frozen=True, slots=True)
class Reading:
    """How the values of one aligned column pair are read.

    Text is read as a number / date / boolean only when the column it is compared with holds such
    values: two text columns are always compared as text, so '01' and '1' stay different there.
    ``native`` says the pair's Python types already compare the way the contract wants (ints, or
    one temporal or binary type on both sides), so the raw values serve as keys unconverted.
    """

    numbers: bool = False
    temporal: bool = False
    booleans: bool = False
    native: bool = False
    #: a side's engine type is a 32-bit float: seven digits that round what the other side may
    #: have written out in full, so no number of the pair counts as written out
    approximate: bool = False


PLAIN_READING = Reading()
_NATIVE_READING = Reading(native=True)
#: types whose own equality and hashing already are the contract's, when a pair holds only them
_NATIVE_ALONE: frozenset[type] = frozenset({date, datetime, time, bytes})
# Decimals are deliberately not native: converted once to (bucketed) floats they hash cheaply and
# injectively as float64, where hashing and checking Decimals themselves costs several passes.


def column_types(values: Sequence[Any]) -> frozenset[type]:
    """The set of Python types in a column (one C-level pass)."""
    return frozenset(map(type, values))


def reading_for(types: frozenset[type], policy: ComparePolicy, *, native_ok: bool = True) -> Reading:
    """How to read a column pair whose combined value types are ``types``."""
    kinds = types - {NoneType}
    if native_ok and kinds:
        exact_ints = {int, bool} if policy.bool_as_int else {int}
        if kinds <= exact_ints or len(kinds) == 1 and kinds <= _NATIVE_ALONE:
            return _NATIVE_READING
    if str not in types:
        return PLAIN_READING
    numberish = NUMBER_TYPES | ({bool} if policy.bool_as_int else set())
    return Reading(
        numbers=policy.numeric_strings and bool(types & numberish),
        temporal=policy.temporal_text and bool(types & TEMPORAL_TYPES),
        booleans=policy.bool_text and bool in types,
    )


# -- numbers ------------------------------------------------------------------------------------

# Powers of ten by table lookup: an exact, cheap alternative to np.power for integer exponents.
_POW10_OFFSET = 330
with np.errstate(over="ignore"):
    _POW10 = 10.0 ** np.arange(-_POW10_OFFSET, _POW10_OFFSET + 1)


def round_significant(values: np.ndarray, digits: int) -> np.ndarray:
    """Round finite non-zero floats to ``digits`` significant digits (others unchanged)."""
    return rounded_to(values, digits)[0]


def rounded_to(values: np.ndarray, *digits: int) -> list[np.ndarray]:
    """:func:`round_significant` to each of ``digits``, the decimal exponent found once."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # In place on one fresh array: these run over every float of a result.
        exponent = np.abs(values)
        np.log10(exponent, out=exponent)
        np.floor(exponent, out=exponent)
        # Bounds keep the scale in the table: subnormal and huge inputs are rounded at another
        # digit than asked (a subnormal to zero), and one whose rounding overflows is left as
        # it was, below. fmax/fmin also send the exponents of 0 (-inf), infinities and NaN into
        # the table: those values come out of the rounding as they went in whatever the scale.
        np.fmax(exponent, -300, out=exponent)
        np.fmin(exponent, 300, out=exponent)
        offsets = _POW10_OFFSET - 1 - exponent.astype(np.intp)
        out = []
        for count in digits:
            scale = _POW10[offsets + count]
            rounded = values * scale
            np.round(rounded, out=rounded)
            rounded /= scale
            unrounded = ~np.isfinite(rounded)
            if unrounded.any():
                rounded[unrounded] = values[unrounded]
            out.append(rounded)
        return out


#: Numbers written out with at most this many significant digits -- a rounded result, a decimal
#: literal, an engine's exact numeric, any integer -- are compared exactly with each other. The
#: relative tolerance is there for float noise, which shows in the last of a double's 16-17
#: digits: 22979.63 against 22979.6 (ROUND to 1 place where the gold rounds to 2), or 1378778
#: against 1378778.04 (integer division), are different answers however close. Twelve leaves a
#: margin: a noisy double lands exactly on a 12-digit decimal about once in 10^4 values.
SHORT_DIGITS = 12
#: Two numbers written out in full, neither of them integral, may still differ by a 32-bit
#: float's precision: a CAST AS REAL on one side rounds to 24 bits before the arithmetic goes on
#: in doubles (368231.326 against 368231.328). A rounding to fewer places (1e-6 and up) or a
#: truncation to an integer (compared exactly) is still a different answer.
WRITTEN_RTOL = 2.0**-23
#: An integer against a number that is not written out in full (a long float, an exact numeric
#: of many digits) may differ only by float noise, whatever the relative tolerance allows:
#: 393599 (integer division, a cast, a ROUND to no places) against an AVG of 393599.2121039109
#: is a truncation, not noise, although within 1e-5 of it. A sum of a million doubles strays
#: from its exact value by about 1e-13 relative, ten million naively summed by 1e-9 at worst.
INTEGER_NOISE_RTOL = 1e-9
# Where round_significant decides shortness exactly: every power of ten it scales by, 10^0 to
# 10^22, is exact in float64. Outside this range a number counts as not written out (tolerant).
_SHORT_RANGE = (1e-11, 1e12)


# Float noise within this relative distance of a short decimal counts as that decimal written
# out in full: SQLite's AVG gives 22979.630000000005 for 22979.63, which is then a different
# answer from 22979.6 (ROUND to one place), as 22979.63 itself is. Keys use the same forms, so
# the hashed pass pairs the noise with the decimal without the tolerance pass.
_SNAP = 4e-15  # 20-40 units in the last place
# Only decimals of at most this many significant digits attract noise. A random double lands
# within _SNAP of a 12-digit decimal a few times in 1000, which would make long numbers count as
# written out now and then (and sent ~1% of the rows of two noisy float columns to the
# tolerance pass); within _SNAP of a 10-digit decimal it lands ~1 time in 10^5, while an
# aggregate of prices or counts still snaps. Noise around an 11- or 12-digit number keeps the
# relative tolerance.
SNAP_DIGITS = 10


def _written_forms(values: np.ndarray, written: np.ndarray, snapped: np.ndarray) -> np.ndarray:
    """Per float in the short range: the number written out in full that it is, or is float
    noise around; NaN for the others (integers outside the range included: see
    :func:`written_numbers`). ``written``: the values rounded to SHORT_DIGITS; ``snapped``: to
    SNAP_DIGITS."""
    with np.errstate(invalid="ignore"):
        magnitude = np.abs(values)
        in_range = (magnitude >= _SHORT_RANGE[0]) & (magnitude < _SHORT_RANGE[1])
        noise = in_range & (np.abs(snapped - values) <= _SNAP * magnitude)
        exact = in_range & (written == values)
    # Two distinct 12-digit decimals lie at least 1e-12 apart relatively, far beyond _SNAP, so
    # no value is both exactly one and noise around another.
    return np.where(noise, snapped, np.where(exact, values, np.nan))


def written_numbers(values: np.ndarray) -> np.ndarray:
    """Per float: the number it writes out in full, NaN if none. That is the float itself when
    integral (below 2^53) or the double nearest to a decimal of at most SHORT_DIGITS significant
    digits, and that decimal when the float is noise around one of at most SNAP_DIGITS."""
    written, snapped = rounded_to(values, SHORT_DIGITS, SNAP_DIGITS)
    with np.errstate(invalid="ignore"):
        integral = (values == np.trunc(values)) & (np.abs(values) < EXACT_FLOAT_INT)
    return np.where(integral, values, _written_forms(values, written, snapped))


def written_number(value: float) -> float | None:
    """:func:`written_numbers` of one float, by the same steps in plain Python (NumPy on a
    one-element array costs 35 us a value; the tolerance pass asks value by value)."""
    if not math.isfinite(value):
        return None
    magnitude = abs(value)
    if value == math.trunc(value) and magnitude < EXACT_FLOAT_INT:
        return value
    if not _SHORT_RANGE[0] <= magnitude < _SHORT_RANGE[1]:
        return None
    offset = _POW10_OFFSET - 1 - math.floor(math.log10(magnitude))
    scale = float(_POW10[offset + SHORT_DIGITS])
    if round(value * scale) / scale == value:  # round half to even, as np.round
        return value
    scale = float(_POW10[offset + SNAP_DIGITS])
    snapped = round(value * scale) / scale
    return snapped if abs(snapped - value) <= _SNAP * magnitude else None


class FloatKeys(Sequence[Any]):
    """Keys of a column converted through float64, held as the float64 array itself.

    Hashing reads the array directly; the Python list of keys is built only if something asks
    for the keys one by one (most comparisons never do). ``nulls`` marks NULL rows (their array
    slot holds a NaN placeholder and their key is None). ``patches`` are positions whose key is
    not that float: NaN's sentinel, or an exact integer beyond float precision.
    """

    __slots__ = ("_values", "_nulls", "_patches", "_list", "_floats")

    def __init__(self, values: np.ndarray, nulls: np.ndarray | None = None, *,
                 floats: np.ndarray | None = None) -> None:
        self._values = values
        # Kept only when some row is NULL, so "no NULL" costs nothing to test later.
        self._nulls = nulls if nulls is not None and nulls.any() else None
        self._patches: dict[int, Any] = {}
        self._list: list[Any] | None = None
        self._floats = floats

    @property
    def floats(self) -> tuple[np.ndarray, np.ndarray | None] | None:
        """(the column's own values, NULL mask or None) when the keys were made from a column
        of floats (NULL slots hold NaN): the tolerance pass and the mismatch shape read the
        numbers here instead of converting the Python values once more. None otherwise."""
        return None if self._floats is None else (self._floats, self._nulls)

    @property
    def array(self) -> np.ndarray | None:
        """The float64 array when it alone describes every key (no NULL, no patch), else None."""
        return None if self._patches or self._nulls is not None else self._values

    @property
    def nullable_array(self) -> tuple[np.ndarray, np.ndarray | None] | None:
        """(float64 array, NULL mask or None) when those two describe every key (no patch)."""
        return None if self._patches else (self._values, self._nulls)

    def patch(self, i: int, key: Any) -> None:
        self._patches[i] = key
        if self._list is not None:
            self._list[i] = key

    def spread(self, present: np.ndarray) -> FloatKeys:
        """These keys (of the rows where ``present`` is True, in order) put back among NULLs."""
        values = np.full(present.size, np.nan)
        values[present] = self._values
        spread = FloatKeys(values, ~present)
        if self._patches:
            rows = np.flatnonzero(present)
            for i, key in self._patches.items():
                spread.patch(int(rows[i]), key)
        return spread

    def take(self, rows: np.ndarray) -> FloatKeys:
        """The keys of ``rows`` (positions, in that order), still held as arrays."""
        nulls = None if self._nulls is None else self._nulls[rows]
        floats = None if self._floats is None else self._floats[rows]
        taken = FloatKeys(self._values[rows], nulls, floats=floats)
        if self._patches:
            patched = np.fromiter(self._patches, dtype=np.intp, count=len(self._patches))
            for k in np.flatnonzero(np.isin(rows, patched)).tolist():
                taken.patch(k, self._patches[int(rows[k])])
        return taken

    def as_list(self) -> list[Any]:
        if self._list is None:
            keys = self._values.tolist()
            if self._nulls is not None:
                for i in np.flatnonzero(self._nulls).tolist():
                    keys[i] = None
            for i, key in self._patches.items():
                keys[i] = key
            self._list = keys
        return self._list

    def __len__(self) -> int:
        return len(self._values)

    def __getitem__(self, i: Any) -> Any:
        return self.as_list()[i]

    def __iter__(self) -> Iterator[Any]:
        return iter(self.as_list())


def materialize(keys: Sequence[Any]) -> Sequence[Any]:
    """Keys as a plain sequence with C-speed indexing (builds a FloatKeys', an Arrow column's or
    a rows column's values)."""
    return keys.as_list() if isinstance(keys, FloatKeys | ArrowColumn | RowsColumn) else keys


def _float_array_keys(arr: np.ndarray, policy: ComparePolicy, nulls: np.ndarray | None = None,
                      *, floats: bool = False) -> FloatKeys:
    """Keys of a float64 array: integral values kept exactly (so 3.0 meets int 3 in the hash),
    and with ``short_numbers_exact`` numbers written out in full (see SHORT_DIGITS) and float
    noise around them keyed as those numbers; the others bucketed to the policy's significant
    digits (a bucket that is an integer moved off it, see :func:`off_integer`). ``nulls`` marks
    NULL rows, whose slots hold a NaN placeholder. Rounding is elementwise, so placeholders
    change no other key. ``floats``: ``arr`` holds the column's float values themselves, kept
    beside the keys."""
    source = arr
    if policy.tolerant:
        arr = _tolerant_float_keys(arr, policy)
    keys = FloatKeys(arr, nulls, floats=source if floats else None)
    nan = np.isnan(arr)
    if nulls is not None:
        nan &= ~nulls
    for i in np.flatnonzero(nan).tolist():
        keys.patch(i, _nan_key(policy))
    return keys


#: Block length for elementwise arithmetic over a column (keys here, row hashes in hashing.py):
#: a block's temporaries stay in the CPU cache, which makes the keys of a million floats about
#: twice as fast as whole-array passes, and their row hashes 1.5x (measured).
BLOCK = 1 << 16


def _tolerant_float_keys(arr: np.ndarray, policy: ComparePolicy) -> np.ndarray:
    """:func:`_float_array_keys`' float64 values under a tolerant policy, block by block; ``arr``
    itself when every value is kept as it is."""
    if arr.size <= BLOCK:
        return _tolerant_float_block(arr, policy)
    out = np.empty_like(arr)
    changed = False
    for start in range(0, arr.size, BLOCK):
        block = arr[start:start + BLOCK]
        keys = _tolerant_float_block(block, policy)
        out[start:start + BLOCK] = keys
        changed = changed or keys is not block
    return out if changed else arr


def _tolerant_float_block(arr: np.ndarray, policy: ComparePolicy) -> np.ndarray:
    integral = (arr == np.trunc(arr)) & (np.abs(arr) < EXACT_FLOAT_INT)
    if integral.all():
        return arr
    if policy.short_numbers_exact:
        bucketed, written, snapped = rounded_to(arr, policy.significant_digits,
                                                SHORT_DIGITS, SNAP_DIGITS)
        forms = _written_forms(arr, written, snapped)
        long = np.isnan(forms)
        # rare where buckets are finer than 1, every one where they are not
        at = np.flatnonzero(long & (bucketed == np.trunc(bucketed)))
        if at.size:
            at = at[np.abs(bucketed[at]) < EXACT_FLOAT_INT]
            bucketed[at] = off_integer(bucketed[at], policy.significant_digits)
        bucketed = np.where(long, bucketed, forms)
    else:
        bucketed = round_significant(arr, policy.significant_digits)
    return np.where(integral, arr, bucketed)


def off_integer(buckets: np.ndarray, digits: int) -> np.ndarray:
    """Integral buckets of numbers not written out in full, moved off the integer: the key of
    an integer is the integer itself, and the two differ beyond float noise (see
    INTEGER_NOISE_RTOL; a bucket's own noise is left to the tolerance pass). Half a bucket
    step, at most 0.5: every number of the bucket stays within the tolerance of its key, and
    two buckets never share one."""
    half = np.full(buckets.size, 0.5)
    # from 10^(digits-1) up, a bucket step is 1 or more: half a step is 0.5 there
    fine = np.flatnonzero(np.abs(buckets) < 10.0 ** (digits - 1))
    if fine.size:
        with np.errstate(divide="ignore"):
            exponent = np.floor(np.log10(np.abs(buckets[fine])))
        half[fine] = 10.0 ** (exponent - digits + 1) / 2
    return buckets + np.copysign(half, buckets)


def off_integer_one(bucket: float, digits: int) -> float:
    """:func:`off_integer` of one bucket, which is left as it is unless it is an integer."""
    if abs(bucket) < EXACT_FLOAT_INT and bucket == math.trunc(bucket):
        return float(off_integer(np.array([bucket]), digits)[0])
    return bucket


def integer_against_long(a: float, b: float, policy: ComparePolicy) -> bool:
    """An integer against a number not written out in full (see INTEGER_NOISE_RTOL)."""
    if not (math.isfinite(a) and math.isfinite(b)):
        return a == b
    limit = max(INTEGER_NOISE_RTOL * max(abs(a), abs(b)), policy.abs_tol)
    return abs(a - b) <= limit


def _nan_key(policy: ComparePolicy) -> Hashable:
    # A fresh object equals nothing but itself, which is exactly "NaN never equals NaN".
    return NAN_KEY if policy.nan_equals_nan else object()


def _float_keys(values: Sequence[float], policy: ComparePolicy) -> Sequence[Any]:
    # fromiter reads exact Python floats about twice as fast as np.array (measured).
    return _float_array_keys(np.fromiter(values, dtype=np.float64, count=len(values)), policy,
                             floats=True)


def _float_keys_with_nulls(values: Sequence[float | None], policy: ComparePolicy) -> FloatKeys:
    """Keys of a column of floats and NULLs from one numpy conversion, which reads None as NaN:
    only the NaN slots are then looked at one by one, to tell NULL from a real NaN. The values
    are gathered into an object array first (one C-level pass, no Python list) and cast from
    there: 40 ms a million against 60 ms through a list. (pyarrow reads the NULL mask faster
    still, but its first use imports pandas: 0.2 s.)"""
    objects = np.fromiter(values, dtype=object, count=len(values))
    arr = objects.astype(np.float64)
    nulls = np.zeros(arr.size, dtype=bool)
    maybe = np.flatnonzero(np.isnan(arr))
    nulls[maybe] = [value is None for value in objects[maybe].tolist()]
    return _float_array_keys(arr, policy, nulls, floats=True)


def _int_keys(values: Sequence[int], policy: ComparePolicy) -> list[Any]:
    # Python ints are exact and hash equal to the equal float/Decimal: they are their own keys.
    return list(values)


def _decimal_keys(values: Sequence[Decimal], policy: ComparePolicy) -> Sequence[Any]:
    if not policy.tolerant:
        return [_exact_decimal_key(d, policy) for d in values]
    try:
        arr = np.fromiter(map(float, values), dtype=np.float64, count=len(values))
    except (ValueError, OverflowError):  # signalling NaN and the like: per value
        return [_decimal_key_slow(d, policy) for d in values]
    keys = _float_array_keys(arr, policy)
    # Beyond float precision an integral Decimal must stay exact (ids, big sums).
    for i in np.flatnonzero(~(np.abs(arr) < EXACT_FLOAT_INT)).tolist():
        keys.patch(i, _decimal_key_slow(values[i], policy))
    return keys


def _decimal_key_slow(d: Decimal, policy: ComparePolicy) -> Hashable:
    if d.is_nan():
        return _nan_key(policy)
    if d.is_infinite():
        return math.inf if d > 0 else -math.inf
    if d == d.to_integral_value():
        return int(d)
    return _float_array_keys(np.array([float(d)]), policy)[0]


def _exact_decimal_key(d: Decimal, policy: ComparePolicy) -> Hashable:
    """Exact mode: Decimal('1.1') still equals the float 1.1 (its shortest repr), nothing closer."""
    if d.is_nan():
        return _nan_key(policy)
    if d.is_finite() and d == d.to_integral_value():
        return int(d)
    as_float = float(d)
    return as_float if Decimal(repr(as_float)) == d else d


def _bool_keys(values: Sequence[bool], policy: ComparePolicy) -> list[Any]:
    if policy.bool_as_int:
        return list(values)  # True == 1 and hash(True) == 1 already
    return [("bool", v) for v in values]


# -- temporal -----------------------------------------------------------------------------------

_DATETIME_TEXT = re.compile(
    r"(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?)?"
)
_TIME_TEXT = re.compile(r"(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?")


def _clock_text(hh: str, mm: str, ss: str, fraction: str) -> str:
    fraction = fraction.rstrip("0")
    return f"{hh}:{mm}:{ss}.{fraction}" if fraction else f"{hh}:{mm}:{ss}"


def _datetime_text(day: str, hh: str, mm: str, ss: str, fraction: str, policy: ComparePolicy) -> str:
    clock = _clock_text(hh, mm, ss, fraction)
    if policy.midnight_as_date and clock == "00:00:00":
        return day
    return f"{day} {clock}"


def _datetime_key(v: datetime, policy: ComparePolicy) -> Hashable:
    if v.tzinfo is not None and v.utcoffset() is not None:
        # Aware values are compared as instants: render in UTC and mark them so.
        utc = v.astimezone(UTC)
        clock = _clock_text(f"{utc.hour:02d}", f"{utc.minute:02d}", f"{utc.second:02d}",
                            f"{utc.microsecond:06d}")
        text = f"{utc.date().isoformat()} {clock}+00:00"
        return text if policy.temporal_text else ("datetime", text)
    if policy.midnight_as_date and v.time() == time(0):
        return _date_key(v.date(), policy)
    if not policy.temporal_text:
        return v
    clock = _clock_text(f"{v.hour:02d}", f"{v.minute:02d}", f"{v.second:02d}", f"{v.microsecond:06d}")
    return f"{v.date().isoformat()} {clock}"


def _date_key(v: date, policy: ComparePolicy) -> Hashable:
    return v.isoformat() if policy.temporal_text else v


def _time_key(v: time, policy: ComparePolicy) -> Hashable:
    if not policy.temporal_text:
        return v
    return _clock_text(f"{v.hour:02d}", f"{v.minute:02d}", f"{v.second:02d}", f"{v.microsecond:06d}")


def _date_keys(values: Sequence[date], policy: ComparePolicy) -> list[Any]:
    return list(map(date.isoformat, values)) if policy.temporal_text else list(values)


def _datetime_keys(values: Sequence[datetime], policy: ComparePolicy) -> list[Any]:
    return [_datetime_key(v, policy) for v in values]


def _time_keys(values: Sequence[time], policy: ComparePolicy) -> list[Any]:
    return [_time_key(v, policy) for v in values]


# -- text ---------------------------------------------------------------------------------------

_NUMBER_TEXT = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_INTEGER_TEXT = re.compile(r"[+-]?\d+")


def parse_number_text(text: str) -> int | Decimal | None:
    """The number ``text`` spells (strictly: no spaces, no 'inf'/'nan', no '_'), else None."""
    if _INTEGER_TEXT.fullmatch(text):
        return int(text)
    if _NUMBER_TEXT.fullmatch(text):
        try:
            return Decimal(text)
        except InvalidOperation:  # pragma: no cover - the pattern only admits valid numbers
            return None
    return None


def temporal_text_key(text: str, policy: ComparePolicy) -> str | None:
    """Canonical text of an ISO date, datetime or time spelled in ``text``, else None."""
    m = _DATETIME_TEXT.fullmatch(text)
    if m:
        day, hh, mm, ss, fraction = m.groups()
        if hh is None:
            return day
        return _datetime_text(day, hh, mm, ss or "00", fraction or "", policy)
    m = _TIME_TEXT.fullmatch(text)
    if m:
        hh, mm, ss, fraction = m.groups()
        return _clock_text(hh, mm, ss or "00", fraction or "")
    return None


def _text_keys_with(values: Sequence[str], policy: ComparePolicy, reading: Reading) -> list[Any]:
    trimmed = list(map(str.rstrip, values, repeat(" "))) if policy.trim_trailing_spaces else list(values)
    if reading == PLAIN_READING:
        return trimmed
    numbers: list[int | Decimal] = []
    number_positions: list[int] = []
    for i, text in enumerate(trimmed):
        if reading.numbers:
            number = parse_number_text(text)
            if number is not None:
                numbers.append(number)
                number_positions.append(i)
                continue
        if reading.temporal:
            key = temporal_text_key(text, policy)
            if key is not None:
                trimmed[i] = key
                continue
        if reading.booleans:
            lowered = text.lower()
            if lowered in ("true", "false"):
                trimmed[i] = _bool_keys([lowered == "true"], policy)[0]
    if numbers:
        for i, key in zip(number_positions, column_keys(numbers, policy), strict=True):
            trimmed[i] = key
    return trimmed


# -- other types --------------------------------------------------------------------------------

def _binary_keys(values: Sequence[Any], policy: ComparePolicy) -> list[Any]:
    return [bytes(v) for v in values]


def _generic_key(v: Any, policy: ComparePolicy) -> Hashable:
    """Types no engine driver we support returns today; handled one value at a time."""
    if isinstance(v, bool):
        return _bool_keys([v], policy)[0]
    if isinstance(v, Integral):
        return int(v)
    if isinstance(v, Real):
        return _float_keys([float(v)], policy)[0]
    if isinstance(v, uuid.UUID):
        return str(v)
    if isinstance(v, datetime):
        return _datetime_key(v, policy)
    if isinstance(v, date):
        return _date_key(v, policy)
    if isinstance(v, str):
        return v.rstrip(" ") if policy.trim_trailing_spaces else str(v)
    if isinstance(v, list | tuple):
        return tuple(_generic_key(x, policy) for x in v)
    try:
        hash(v)
    except TypeError:
        return ("unhashable", repr(v))
    return v


_HOMOGENEOUS: dict[type, Callable[[Sequence[Any], ComparePolicy], Sequence[Any]]] = {
    int: _int_keys,
    float: _float_keys,
    Decimal: _decimal_keys,
    bool: _bool_keys,
    date: _date_keys,
    datetime: _datetime_keys,
    time: _time_keys,
    bytes: _binary_keys,
    bytearray: _binary_keys,
    memoryview: _binary_keys,
}


def _homogeneous_keys(kind: type, values: Sequence[Any], policy: ComparePolicy,
                      reading: Reading) -> Sequence[Any]:
    if kind is str:
        return _text_keys_with(values, policy, reading)
    convert = _HOMOGENEOUS.get(kind)
    if convert is not None:
        return convert(values, policy)
    return [_generic_key(v, policy) for v in values]


def _values_are_keys(kinds: frozenset[type], policy: ComparePolicy, reading: Reading) -> bool:
    """Whether every value of a column holding ``kinds`` (and NULLs) is already its own key:
    Python ints are exact and hash equal to the equal float or Decimal (bools too, when they
    count as ints), and text read as text with nothing to trim stays itself."""
    if kinds <= ({int, bool} if policy.bool_as_int else {int}):
        return True
    return kinds == {str} and reading == PLAIN_READING and not policy.trim_trailing_spaces


def _one_kind_with_nulls(kind: type, values: Sequence[Any], policy: ComparePolicy,
                         reading: Reading) -> Sequence[Any]:
    """Keys of a column holding one type besides NULL: only the non-NULL values are converted,
    in one homogeneous call, with no per-value type dispatch."""
    if kind is float:
        return _float_keys_with_nulls(values, policy)
    if kind is str and reading == PLAIN_READING:
        # Trimming is on (off, text is its own key and never gets here): one pass over the
        # column beats compressing out the NULLs and scattering the keys back (measured).
        return [v if v is None else v.rstrip(" ") for v in values]
    present = list(map(is_not, values, repeat(None)))
    keys = _homogeneous_keys(kind, list(compress(values, present)), policy, reading)
    if isinstance(keys, FloatKeys):
        return keys.spread(np.array(present, dtype=bool))
    take = iter(keys).__next__
    return [take() if here else None for here in present]


def keys_by_type(values: Sequence[Any], policy: ComparePolicy,
                 reading: Reading = PLAIN_READING) -> list[Any]:
    """The general path, right for any column: each type's values converted together, then the
    keys dealt back in row order, each row taking the next key of its type. The fast paths of
    :func:`column_keys` must give the same keys."""
    row_types = list(map(type, values))
    take: dict[type, Callable[[], Any]] = {NoneType: repeat(None).__next__}
    for kind in frozenset(row_types) - {NoneType}:
        same = list(compress(values, map(is_, row_types, repeat(kind))))
        take[kind] = iter(_homogeneous_keys(kind, same, policy, reading)).__next__
    return [take[kind]() for kind in row_types]


def column_keys(values: Sequence[Any], policy: ComparePolicy,
                reading: Reading = PLAIN_READING,
                types: frozenset[type] | None = None) -> Sequence[Any]:
    """Canonical keys of one column, in row order. ``None`` (SQL NULL) stays ``None``.

    Keys are only read, never mutated, so a column whose values are their own keys is returned
    as it is, without a copy.
    """
    if types is None:
        types = column_types(values)
    if reading.approximate and policy.short_numbers_exact:
        # a 32-bit float on a side: every number of the pair is bucketed, none written out
        policy = policy.with_options(short_numbers_exact=False)
    kinds = types - {NoneType}
    if not kinds or reading.native or _values_are_keys(kinds, policy, reading):
        return values
    if kinds == {float} and isinstance(values, ArrowColumn):
        parts = values.float_parts()
        if parts is not None:  # the keys _float_keys(_with_nulls) make, from the Arrow buffer
            arr, nulls = parts  # nulls: None exactly when the column holds no NULL
            return _float_array_keys(arr, policy, nulls, floats=True)
    if len(kinds) == 1:
        kind = next(iter(kinds))
        if NoneType not in types:
            return _homogeneous_keys(kind, values, policy, reading)
        return _one_kind_with_nulls(kind, values, policy, reading)
    # Mixed column (SQLite is dynamically typed).
    return keys_by_type(values, policy, reading)


# -- exact values for the tolerance pass --------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Number:
    """A numeric value as the tolerance pass sees it: its float, and its exact integer when the
    value is an integer (two integers must be exactly equal; anything else compares within
    tolerance)."""

    approx: float
    exact: int | None
    #: read beside a 32-bit float (Reading.approximate): never written out in full
    loose: bool = False

    def __repr__(self) -> str:
        return str(self.exact) if self.exact is not None else repr(self.approx)


def as_float(v: int | float | Decimal) -> float:
    """A number as a float; beyond the float range, an infinity of its sign."""
    try:
        return float(v)
    except OverflowError:
        return math.inf if v > 0 else -math.inf


def fine_value(v: Any, policy: ComparePolicy, reading: Reading) -> Any:
    """The value as the tolerance pass compares it: a :class:`Number` for numbers (and numeric
    text where ``reading`` allows), the canonical key for anything else."""
    if v is None:
        return None
    kind = type(v)
    if kind is bool:
        return Number(float(v), int(v)) if policy.bool_as_int else _bool_keys([v], policy)[0]
    if kind is int:
        return Number(as_float(v), v)
    if kind is float:
        # A float is approximate by nature, even when integral: compared within tolerance unless
        # it is written out in full and so is the other number.
        return _nan_key(policy) if math.isnan(v) else Number(v, None, reading.approximate)
    if kind is Decimal:
        if v.is_nan():
            return _nan_key(policy)
        if v.is_finite() and v == v.to_integral_value():
            return Number(as_float(v), int(v))
        return Number(as_float(v), None, reading.approximate)
    if kind is str and reading.numbers:
        number = parse_number_text(v.rstrip(" ") if policy.trim_trailing_spaces else v)
        if number is not None:
            return fine_value(number, policy, reading)
    return column_keys([v], policy, reading)[0]
