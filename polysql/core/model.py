"""Core data model shared by every stage: execution results, execution errors and verdicts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

ErrorKind = Literal["syntax", "runtime", "timeout", "too_large", "forbidden", "unavailable"]
ERROR_KINDS: tuple[str, ...] = ("syntax", "runtime", "timeout", "too_large", "forbidden", "unavailable")


@dataclass(frozen=True, slots=True)
class ExecError:
    """Why a statement did not produce a result.

    ``kind`` is one of ``syntax | runtime | timeout | too_large | forbidden | unavailable``;
    ``message`` is the engine's own text; ``sqlstate`` the SQLSTATE code where the engine has one.
    """

    kind: ErrorKind
    message: str
    sqlstate: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in ERROR_KINDS:
            raise ValueError(f"ExecError.kind must be one of {ERROR_KINDS}, got {self.kind!r}")

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "message": self.message, "sqlstate": self.sqlstate}


@dataclass(slots=True)
class Result:
    """What one statement returned on one engine.

    ``rows`` hold Python values as the engine's driver returns them (int, float, Decimal, str,
    bytes, date, datetime, bool, None): a list of tuples, or an
    :class:`~polysql.core.columnar.ArrowRows` (a sequence of the same tuples, kept as Arrow
    columns until something asks for them). ``types`` are the engine's own type names, one per
    column.
    When ``error`` is set, ``columns`` and ``rows`` are empty.
    """

    columns: list[str] = field(default_factory=list)
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    types: list[str] = field(default_factory=list)
    elapsed: float = 0.0
    truncated: bool = False
    error: ExecError | None = None
    engine: str | None = None
    # what the engine reports about the run beyond rows, e.g. BigQuery's bytes processed
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def unavailable(self) -> bool:
        """Whether the engine could not run the statement at all (gone away, unreachable, or
        refusing the login): an outage, never an answer to judge."""
        return self.error is not None and self.error.kind == "unavailable"

    @classmethod
    def failed(cls, kind: ErrorKind, message: str, *, sqlstate: str | None = None,
               elapsed: float = 0.0, engine: str | None = None) -> Result:
        return cls(error=ExecError(kind, message, sqlstate), elapsed=elapsed, engine=engine)

    def __repr__(self) -> str:
        if self.error is not None:
            return f"Result(error={self.error.kind}: {self.error.message[:80]!r})"
        more = ", truncated" if self.truncated else ""
        return f"Result({len(self.rows)} rows x {len(self.columns)} cols {self.columns}{more})"


@dataclass(slots=True)
class Verdict:
    """The outcome of comparing a prediction's result to the gold result.

    ``match`` is the decision; ``reason`` says in words which rule decided it (and for a mismatch,
    the first differing row or column); ``details`` carries machine-readable facts such as the
    column alignment used, whether order mattered, and flags like ``tie_at_limit`` or
    ``invalid_gold``.
    """

    match: bool
    reason: str
    details: dict[str, Any] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return self.match

    def to_dict(self) -> dict[str, Any]:
        return {"match": self.match, "reason": self.reason, "details": self.details}


@dataclass(slots=True)
class Timing:
    """Warm-up then measured runs of input and rewrite, interleaved; seconds per run."""

    input_runs: list[float]
    rewrite_runs: list[float]
    warmup: int
    timeouts: int = 0  # measured runs that hit the per-run timeout (counted at the timeout)

    @property
    def input_median(self) -> float:
        return _median(self.input_runs)

    @property
    def rewrite_median(self) -> float:
        return _median(self.rewrite_runs)

    @property
    def speedup(self) -> float:
        """Input time over rewrite time: above 1 the rewrite is faster."""
        return self.input_median / max(self.rewrite_median, 1e-9)


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    n = len(ordered)
    if not n:
        return float("nan")
    mid = n // 2
    return ordered[mid] if n % 2 else (ordered[mid - 1] + ordered[mid]) / 2
