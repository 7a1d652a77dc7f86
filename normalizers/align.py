"""Decide which predicted column answers which gold column.

Three ways, tried in this order by :mod:`polysql.normalizers.compare`:

* ``name``: every gold header appears (case-insensitively) among the predicted headers, and no
  header involved is ambiguous. Extra predicted columns are ignored.
* ``position``: same number of columns; column i answers column i.
* ``value``: each gold column is paired with a distinct predicted column holding the same values
  (same multiset, or the same vector when row order is strict). Found by hashing each column's
  canonical values once, so ``SELECT COUNT(*)`` and ``SELECT COUNT(*) AS n, name`` can still be
  compared. Only where several columns hold the same values (a home and an away team, each
  team as often in either) are their other pairings tried too, a bounded number
  (:func:`value_pairings`).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

AlignmentMethod = Literal["name", "position", "value"]


@dataclass(frozen=True, slots=True)
class Alignment:
    """``mapping[i]`` is the predicted column index answering gold column ``i``."""

    method: AlignmentMethod
    mapping: tuple[int, ...]

    def ignored(self, pred_width: int) -> list[int]:
        """Predicted columns no gold column uses."""
        used = set(self.mapping)
        return [j for j in range(pred_width) if j not in used]


def _fold(name: str, case_insensitive: bool) -> str:
    return name.casefold() if case_insensitive else name


def align_by_name(gold_columns: Sequence[str], pred_columns: Sequence[str], *,
                  case_insensitive: bool, allow_extra: bool) -> Alignment | None:
    """Alignment by header, or None when some gold header is missing or a header is ambiguous."""
    gold_names = [_fold(n, case_insensitive) for n in gold_columns]
    pred_names = [_fold(n, case_insensitive) for n in pred_columns]
    if len(set(gold_names)) != len(gold_names):
        return None  # e.g. two `count(*)` columns: names cannot tell them apart
    if not allow_extra and len(pred_names) != len(gold_names):
        return None
    where = {name: j for j, name in enumerate(pred_names)}
    counts = Counter(pred_names)
    mapping: list[int] = []
    for name in gold_names:
        if name not in where or counts[name] != 1:
            return None
        mapping.append(where[name])
    return Alignment("name", tuple(mapping))


def align_by_position(gold_width: int, pred_width: int) -> Alignment | None:
    if gold_width != pred_width:
        return None
    return Alignment("position", tuple(range(gold_width)))


def column_signature(keys: Sequence[Any], ordered: bool, *, distinct: bool = False) -> Hashable:
    """A hashable digest of a column's canonical values: the vector itself when order is strict,
    the set of values when rows compare as sets (``distinct``), otherwise the multiset (a
    frozenset of value counts)."""
    if ordered:
        return tuple(keys)
    if distinct:
        return frozenset(keys)
    return frozenset(Counter(keys).items())


def align_by_value(gold_signatures: Sequence[Hashable], pred_signatures: Sequence[Hashable], *,
                   allow_extra: bool) -> Alignment | None:
    """Pair each gold column with a distinct predicted column of equal signature.

    Ties (several predicted columns with the same values) are broken by position, lowest first,
    which keeps the pairing stable and linear in the number of columns.
    """
    if not allow_extra and len(pred_signatures) != len(gold_signatures):
        return None
    available: dict[Hashable, list[int]] = {}
    for j, signature in enumerate(pred_signatures):
        available.setdefault(signature, []).append(j)
    mapping: list[int] = []
    for signature in gold_signatures:
        candidates = available.get(signature)
        if not candidates:
            return None
        mapping.append(candidates.pop(0))
    return Alignment("value", tuple(mapping))


#: Pairings of columns holding the same values tried in all, the first included: every pairing
#: of up to four such columns (4! = 24).
MOST_VALUE_PAIRINGS = 24


def value_pairings(gold_signatures: Sequence[Hashable], pred_signatures: Sequence[Hashable], *,
                   allow_extra: bool) -> Iterator[Alignment]:
    """:func:`align_by_value`'s pairing, then the others that pair gold columns of one signature
    with other predicted columns of that signature, up to :data:`MOST_VALUE_PAIRINGS` in all.

    Equal signatures say only that two columns hold the same values (as a multiset): which of
    them answers which gold column shows in the rows alone, so each pairing is a candidate for
    the rows to confirm. Lazy: a caller that finds its match stops asking.
    """
    first = align_by_value(gold_signatures, pred_signatures, allow_extra=allow_extra)
    if first is None:
        return
    yield first
    golds_of: dict[Hashable, list[int]] = {}
    for i, signature in enumerate(gold_signatures):
        golds_of.setdefault(signature, []).append(i)
    preds_of: dict[Hashable, list[int]] = {}
    for j, signature in enumerate(pred_signatures):
        preds_of.setdefault(signature, []).append(j)
    groups = [(golds, preds_of[signature]) for signature, golds in golds_of.items()
              if len(preds_of[signature]) > 1]
    if not groups:
        return
    # each group's choices bounded before the product, which lists its inputs whole
    choices = [list(itertools.islice(itertools.permutations(preds, len(golds)),
                                     MOST_VALUE_PAIRINGS)) for golds, preds in groups]
    tried = 1
    for picked in itertools.product(*choices):
        mapping = list(first.mapping)
        for (golds, _), columns in zip(groups, picked, strict=True):
            for i, j in zip(golds, columns, strict=True):
                mapping[i] = j
        if tuple(mapping) == first.mapping:
            continue
        yield Alignment("value", tuple(mapping))
        tried += 1
        if tried >= MOST_VALUE_PAIRINGS:
            return
