"""Text ordered by a case- and accent-insensitive collation.

SQLite orders text by its bytes, as do DuckDB and the PostgreSQL copies polysql builds (collation
"C"); MySQL and MariaDB order it by the database's collation, whose defaults (``utf8mb4_general_ci``,
``utf8mb4_0900_ai_ci``, ``uca1400_ai_ci``) weigh letters without their case or accents:
``'United Kingdom'`` sorts before ``'USA'`` there and after it in SQLite. A prediction that orders
by the right key on such an engine returns the right rows in its engine's order, and, under a
LIMIT, possibly other rows than the gold's.

Nothing is re-run for this. With no LIMIT the prediction matches when it holds the gold's rows and
is itself sorted by the gold's ORDER BY keys with text weighed that way. With a LIMIT, the gold's
widened re-run (see :func:`~polysql.normalizers.ordering.widen_limit`) holds every row of the
answer when it came back short of its own limit; re-sorted here, its first rows are the answer
such an engine gives. Otherwise the strict order stays.

Three weighings are tried (:data:`WEIGHINGS`): :func:`folded` follows ``general_ci`` (accents
dropped, letters compared as capitals, so ``'_'`` sorts after letters); :func:`folded_unicode`
follows the collations built on the Unicode collation algorithm (``unicode_ci``,
``0900_ai_ci``, ``uca1400_ai_ci``, and PostgreSQL's ICU collations): case folded so ``'ß'`` is
``'ss'``, accents dropped, spaces and punctuation before digits before letters;
:func:`folded_alphanumeric` follows the C library's locales (a PostgreSQL database created with
``en_US.UTF-8``) and ICU's "shifted" collations, which weigh letters and digits only. All ignore
trailing spaces. Where an engine's collation differs from all three, the prediction is held to
the strict order, never accepted for it.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

from polysql.normalizers.ordering import NULL_CONVENTIONS, OrderInfo

Row = tuple[Any, ...]
#: (label, NULLs first under an ascending key?, NULLs first under a descending key?)
NullConvention = tuple[str, bool, bool]


@lru_cache(maxsize=65_536)
def folded(text: str) -> str:
    """``text`` as a case- and accent-insensitive collation weighs it: accents dropped, letters
    as capitals (``general_ci`` weighs a letter by its capital, so ``'_'`` sorts after letters),
    trailing spaces ignored (PAD SPACE)."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).upper().rstrip(" ")


# ASCII spaces, punctuation and symbols in the order of their primary weights under the Unicode
# collation algorithm (as MariaDB's utf8mb4_unicode_520_ci weighs them): all before the digits.
_UNICODE_PUNCTUATION = " `^_-,;:!?.'\"()[]{}@*/\\&#%+<=>|~$"
_PUNCTUATION_RANK = {c: rank for rank, c in enumerate(_UNICODE_PUNCTUATION)}
# letters the algorithm weighs as two (casefold already makes 'ß' 'ss')
_EXPANSIONS = {"æ": "ae", "œ": "oe", "ĳ": "ij"}


@lru_cache(maxsize=65_536)
def folded_unicode(text: str) -> tuple[tuple[int, int, str], ...]:
    """``text`` as an accent- and case-insensitive collation of the Unicode collation algorithm
    weighs it: per character (class, rank, letter) with spaces, punctuation and symbols (class
    0, in the algorithm's order) before digits (1) before letters (2); trailing spaces ignored."""
    decomposed = unicodedata.normalize("NFKD", text.casefold().rstrip(" "))
    weights = []
    for c in decomposed:
        if unicodedata.combining(c):
            continue
        for letter in _EXPANSIONS.get(c, c):
            if letter.isalpha():
                weights.append((2, 0, letter))
            elif letter.isdigit():
                weights.append((1, 0, letter))
            else:
                rank = _PUNCTUATION_RANK.get(letter, len(_PUNCTUATION_RANK) + ord(letter))
                weights.append((0, rank, ""))
    return tuple(weights)


@lru_cache(maxsize=65_536)
def folded_alphanumeric(text: str) -> tuple[tuple[int, int, str], ...]:
    """:func:`folded_unicode` without the spaces, punctuation and symbols, which the locales of
    the C library (``en_US.UTF-8``) and ICU's "shifted" collations ignore until every letter
    and digit is equal: ``'De Vries'`` after ``'Dean'``, ``"O'Brien"`` after ``'Ober'``."""
    return tuple(weight for weight in folded_unicode(text) if weight[0])


Weigh = Callable[[str], Any]
#: (name, weighing) of the collations tried, see the module's text
WEIGHINGS: tuple[tuple[str, Weigh], ...] = (
    ("general_ci", folded), ("unicode", folded_unicode), ("locale", folded_alphanumeric))


def holds_text(rows: Sequence[Row], keys: Sequence[int]) -> bool:
    """Whether any ORDER BY key column holds text: only then can a collation change the order."""
    return any(isinstance(row[k], str) for row in rows for k in keys)


def holds_null(rows: Sequence[Row], keys: Sequence[int]) -> bool:
    return any(row[k] is None for row in rows for k in keys)


def _weight(value: Any, null_rank: int, weigh: Weigh) -> tuple[int, Any]:
    if value is None:
        return (null_rank, 0)
    return (1 - null_rank, weigh(value) if isinstance(value, str) else value)


def sort_folded(rows: Sequence[Row], keys: Sequence[int], descending: Sequence[bool],
                nulls: NullConvention, weigh: Weigh = folded) -> list[Row] | None:
    """``rows`` stably sorted by ``keys`` (each descending or not) with text weighed by ``weigh``
    and NULLs placed by ``nulls``; None when a key column mixes values that do not order against
    each other (numbers and text)."""
    _, asc_first, desc_first = nulls
    ordered = list(rows)
    try:
        for key, desc in reversed(list(zip(keys, descending, strict=True))):
            first = desc_first if desc else asc_first
            # the sort is reversed for a descending key, so NULLs take the rank that ends first
            null_rank = int(desc) if first else int(not desc)
            ordered.sort(key=lambda row, k=key, r=null_rank: _weight(row[k], r, weigh),
                         reverse=desc)
    except TypeError:
        return None
    return ordered


def sorted_folded(rows: Sequence[Row], keys: Sequence[int], descending: Sequence[bool],
                  nulls: NullConvention, weigh: Weigh = folded) -> bool:
    """Whether ``rows`` are already in the order :func:`sort_folded` gives them (rows that tie
    under ``weigh`` in any order among themselves)."""
    again = sort_folded(rows, keys, descending, nulls, weigh)
    if again is None:
        return False
    weights = [[_weight(row[k], 0, weigh) for k in keys] for row in rows]
    return weights == [[_weight(row[k], 0, weigh) for k in keys] for row in again]


def conventions(null_order: str, *columns: tuple[Sequence[Row], Sequence[int]]) -> list[NullConvention]:
    """The NULL placements to try. When no key column holds a NULL, one stands for all (they
    order the rows alike). Otherwise every engine's (``null_order="either"``), or none under the
    strict rule: the gold's own placement is not known here."""
    if not any(holds_null(rows, keys) for rows, keys in columns):
        return [NULL_CONVENTIONS[0]]
    return list(NULL_CONVENTIONS) if null_order == "either" else []


def gold_rows_folded(info: OrderInfo, limited: bool, rows: Sequence[Row],
                     widened: Sequence[Row] | None, widened_limit: int,
                     nulls: NullConvention, weigh: Weigh = folded) -> list[Row] | None:
    """The rows the gold's query returns on an engine that weighs text by ``weigh``: its own
    rows when nothing limits them (``limited``: a LIMIT, OFFSET or FETCH); under an integer
    LIMIT, the first rows of the widened re-run re-sorted, when that re-run holds the whole answer
    (it came back with fewer than ``widened_limit`` rows); None when that cannot be known here."""
    if info.keys is None or info.offset:
        return None
    if not limited:
        return list(rows)
    if info.limit is None:
        return None
    if widened is None or len(widened) >= widened_limit:
        return None
    resorted = sort_folded(widened, info.keys, info.descending, nulls, weigh)
    return None if resorted is None else resorted[:info.limit]
