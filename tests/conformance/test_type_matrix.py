"""Every type family compares right on every pair of engines.

For each family in :mod:`type_families` (JSON, arrays, structs, maps, time zones, intervals,
UUIDs, bytes, extreme dates, fractional times, NaN/infinity, 38-digit decimals, long text), each
engine runs a literal query returning the same logical value, and one or more near misses. For
every ordered pair of engines that can express the family -- an engine paired with itself
included, since a value must at least match itself -- the gold's value must match the
prediction's (``polysql.compare(...).match``) and must not match any near miss.

Each literal runs once per engine (results cached for the module) and the pairs are compared in
Python, so the matrix costs one query per (engine, literal), not one per pair. Test ids read
``family-gold-pred`` and ``family.near_miss-gold-pred``.

``test_engine_expresses_family`` (ids ``family-engine``) checks each engine runs its literals;
an engine that cannot express a family at all (SQLite has no arrays, Snowflake no INTERVAL
type) is declared ``never`` there, with the reason from the family, and has no pairs.

Where a pair cannot compare right the case carries a gap marker and is a strict xfail (see GAPS
below): ``notimpl`` where polysql does not canonicalise the family yet, ``notyet`` where the
engine (an emulator here) cannot run the literal, ``never`` where the contract says no (JSON text
that neither engine types as JSON is not guessed to be JSON). Fixing a gap makes its cases pass
and the run fail until the entry is removed. ``pytest -m notimpl`` lists what canonicalisation
still lacks.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest
from polysql_testkit import availability

import polysql
from polysql.backends.base import Backend
from polysql.core.errors import EngineUnavailableError
from polysql.core.model import Result


def _load_families() -> ModuleType:
    """The sibling data module. The suite imports test files by path (--import-mode=importlib,
    no packages under tests/), so it is loaded from its file rather than imported by name; it
    is registered in sys.modules because dataclasses look their module up there."""
    name = "polysql_conformance_type_families"
    if name not in sys.modules:
        path = Path(__file__).with_name("type_families.py")
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


_families = _load_families()
Family = _families.Family
ENGINE_NAMES: tuple[str, ...] = _families.ENGINE_NAMES
FAMILIES: tuple[Family, ...] = _families.FAMILIES

# -- gaps -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Gap:
    """A known wrong verdict, declared with the suite's gap markers (notimpl / notyet / never).

    A gap covers the ordered engine pairs of ``family`` where the two engines hand the value
    over in different ``shapes`` (both engines listed, shapes differ), or every pair that
    involves one of ``engines``. ``cases`` says which cases: ``"same"`` (the same value must
    match), ``"all"`` (near misses too: the literal itself cannot run).
    """

    kind: str
    family: str
    why: str
    shapes: dict[str, str] | None = None
    engines: tuple[str, ...] = ()
    cases: str = "same"

    def applies(self, gold: str, pred: str) -> bool:
        if self.shapes is not None:
            return (gold in self.shapes and pred in self.shapes
                    and self.shapes[gold] != self.shapes[pred])
        return gold in self.engines or pred in self.engines

    def reason(self, gold: str, pred: str) -> str:
        if self.shapes is None:
            return self.why
        return f"{self.why}: {gold} gives {self.shapes[gold]}, {pred} gives {self.shapes[pred]}"


# JSON that no engine type names as JSON. MariaDB reports its JSON columns as text, SQLite has no
# column types and Spark's to_json returns a plain string, and ClickHouse reports a JSON array
# literal as an Array. Text is read as JSON only when one side's engine type says JSON (never by
# guessing from the text), so two of these compare as what they are: text, or text against an
# array. Between themselves they then differ only in spacing (SQLite and Spark write none,
# MariaDB writes ', ' and ': ').
_COMPACT = "compact JSON text in an untyped or text column"
_SPACED = "spaced JSON text in a text column (MariaDB's JSON is LONGTEXT)"
_UNTYPED_JSON = {"sqlite": _COMPACT, "spark": _COMPACT, "mysql": _SPACED}
_NEVER_GUESSED = ("neither engine reports a JSON type, and polysql never guesses that text "
                  "is JSON")

GAPS: tuple[Gap, ...] = (
    Gap("never", "json_object", _NEVER_GUESSED, shapes=_UNTYPED_JSON),
    Gap("never", "json_array", _NEVER_GUESSED,
        shapes={**_UNTYPED_JSON, "clickhouse": "a parsed list reported as an Array, not JSON"}),
    Gap("notyet", "map",
        "the fakesnow emulator cannot cast an OBJECT to a structured MAP (HTTP 500)",
        engines=("snowflake",), cases="all"),
    Gap("notyet", "decimal38",
        "the fakesnow emulator maps NUMBER(38, 0) to a 64-bit integer and fails on 38 digits",
        engines=("snowflake",), cases="all"),
    Gap("notyet", "decimal38",
        "the BigQuery emulator reads BIGNUMERIC as DECIMAL(38, 5) and fails on 38 digits",
        engines=("bigquery",), cases="all"),
)


def _gaps_for(family: str, near: str | None, gold: str, pred: str) -> list[Gap]:
    wanted = ("same", "all") if near is None else ("all",)
    return [g for g in GAPS if g.family == family and g.cases in wanted and g.applies(gold, pred)]


# -- cases ----------------------------------------------------------------------------------------


def _gap_marks(gaps: list[Gap], engines: list[str],
               reason_of: Callable[[Gap], str]) -> list[pytest.MarkDecorator]:
    """The suite's gap marker (for `-m notimpl` and for readers) plus a strict xfail, so the case
    fails once the gap is fixed. Both are set here because the suite's autouse hook only acts on
    tests parametrised by `backend`, and these cases name two engines."""
    marks: list[pytest.MarkDecorator] = []
    for gap in gaps:
        reason = reason_of(gap)
        marks.append(getattr(pytest.mark, gap.kind)(engines, reason=reason))
        marks.append(pytest.mark.xfail(strict=True, reason=f"{gap.kind}: {reason}"))
    return marks


def _engine_marks(*engines: str) -> list[pytest.MarkDecorator]:
    """One marker per engine involved, so `pytest -m duckdb` selects every case DuckDB is in."""
    return [getattr(pytest.mark, e) for e in dict.fromkeys(engines)]


@dataclass(frozen=True, slots=True)
class Case:
    family: Family
    gold: str
    pred: str
    near: str | None  # None: the same value; else the near miss's name


def _pair_cases(near_misses: bool) -> Iterator[object]:
    for family in FAMILIES:
        engines = family.engines()
        for near in (family.near if near_misses else (None,)):
            label = family.name if near is None else f"{family.name}.{near}"
            for gold in engines:
                for pred in engines:
                    if near is not None and pred not in family.near[near]:
                        continue
                    gaps = _gaps_for(family.name, near, gold, pred)
                    marks = _engine_marks(gold, pred) + _gap_marks(
                        gaps, [gold, pred], lambda g, gold=gold, pred=pred: g.reason(gold, pred))
                    yield pytest.param(Case(family, gold, pred, near), marks=marks,
                                       id=f"{label}-{gold}-{pred}")


def _engine_cases() -> Iterator[object]:
    for family in FAMILIES:
        for engine in ENGINE_NAMES:
            marks = _engine_marks(engine)
            if engine in family.cannot:
                never = Gap("never", family.name, f"{engine} {family.cannot[engine]}",
                            engines=(engine,), cases="all")
                marks += _gap_marks([never], [engine], lambda g: g.why)
            else:
                gaps = [g for g in GAPS if g.family == family.name and g.cases == "all"
                        and engine in g.engines]
                marks += _gap_marks(gaps, [engine], lambda g: g.why)
            yield pytest.param(family, engine, marks=marks, id=f"{family.name}-{engine}")


# -- results, once per (engine, literal) -----------------------------------------------------------


class Literals:
    """Results of the family literals, run lazily: each at most once per module, and an engine
    is only reached when a selected case needs it."""

    def __init__(self, backend_of: Callable[[str], Backend]) -> None:
        self._backend_of = backend_of
        self._results: dict[tuple[str, str], Result] = {}

    def result(self, engine: str, sql: str) -> Result:
        key = (engine, sql)
        if key not in self._results:
            try:
                backend = self._backend_of(engine)
            except EngineUnavailableError as exc:
                # the suite's rule: skip, or fail for an engine named in POLYSQL_REQUIRE
                availability.unavailable(engine, str(exc))
            self._results[key] = backend.execute(sql)
        return self._results[key]

    def ok(self, engine: str, sql: str) -> Result:
        """The literal's result, which must be one value: a failed literal fails the case rather
        than reaching compare(), where it would pass for a near miss ("prediction failed")."""
        result = self.result(engine, sql)
        assert result.ok, f"{engine} could not run {sql[:200]!r}: {result.error}"
        assert len(result.rows) == 1 and len(result.columns) == 1, result
        return result


@pytest.fixture(scope="module")
def literals(engine_backends: Callable[[str], Backend]) -> Literals:
    """Shares the suite's session backends (one provisioned copy per engine); caches per module."""
    return Literals(engine_backends)


def _describe(result: Result) -> str:
    value = result.rows[0][0]
    text = repr(value)
    if len(text) > 120:
        text = f"{text[:60]}...<{len(text)} chars>"
    type_name = result.types[0] if result.types else "?"
    return f"{result.engine} {type_name}: {type(value).__name__} {text}"


# -- the matrix -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("family", "engine"), list(_engine_cases()))
def test_engine_expresses_family(family: Family, engine: str, literals: Literals) -> None:
    """The engine runs the family's literal and each near miss, one value each. Engines that
    cannot express the family at all are declared ``never`` (with why) and take no part in its
    pairs."""
    assert engine not in family.cannot, f"{engine} {family.cannot.get(engine)}"
    literals.ok(engine, family.same[engine])
    for near, spellings in family.near.items():
        assert engine in spellings, f"{family.name}: no {near!r} near miss for {engine}"
        literals.ok(engine, spellings[engine])


@pytest.mark.parametrize("case", list(_pair_cases(near_misses=False)))
def test_same_value_matches(case: Case, literals: Literals) -> None:
    gold = literals.ok(case.gold, case.family.same[case.gold])
    pred = literals.ok(case.pred, case.family.same[case.pred])
    verdict = polysql.compare(gold, pred)
    assert verdict.match, (f"{case.family.description}: gold {_describe(gold)} vs "
                           f"pred {_describe(pred)}: {verdict.reason}")


@pytest.mark.parametrize("case", list(_pair_cases(near_misses=True)))
def test_near_miss_differs(case: Case, literals: Literals) -> None:
    assert case.near is not None
    gold = literals.ok(case.gold, case.family.same[case.gold])
    pred = literals.ok(case.pred, case.family.near[case.near][case.pred])
    verdict = polysql.compare(gold, pred)
    assert not verdict.match, (f"{case.family.description}: near miss {case.near!r} accepted: "
                               f"gold {_describe(gold)} vs pred {_describe(pred)}")


def test_declarations_are_consistent() -> None:
    """Every engine of every family is accounted for exactly once (a spelling or a reason it has
    none), and gaps name real families and engines, so a typo cannot silently drop cases."""
    known = set(ENGINE_NAMES)
    names = {f.name for f in FAMILIES}
    assert len(names) == len(FAMILIES)
    for family in FAMILIES:
        assert not set(family.same) & set(family.cannot), family.name
        assert set(family.same) | set(family.cannot) == known, family.name
        for near, spellings in family.near.items():
            assert set(family.engines()) <= set(spellings) <= known, (family.name, near)
    for gap in GAPS:
        assert gap.family in names, gap
        assert gap.kind in ("notimpl", "notyet", "never") and gap.cases in ("same", "all"), gap
        assert set(gap.engines) | set(gap.shapes or ()) <= known, gap
