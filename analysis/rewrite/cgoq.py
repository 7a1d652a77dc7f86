"""CGOQ: one score for a query rewrite, from its speedup and how much simpler it made the query.

Only rewrites that passed the correctness gate get a score. With s = input time / rewrite time,
z = ln s, a = ln(1 + delta) and tau = ln(s_ref / (1 + delta)):

    R(s) = sgn(z) * tanh(max(|z| - a, 0) / tau)           speed reward in (-1, 1)
    r_C  = max(0, (C_b - C_r) / max(C_b, eps))              relative SCS drop, input b -> rewrite r
    K    = clip((r_C - theta) / (c - theta), 0, 1)          simplification credit
    CGOQ = 100 * [R + lambda * (1 - |R|) * K]

Speedups within the neutral band [1/(1+delta), 1+delta] are noise (R = 0); the reference speedup
s_ref earns R = tanh(1); a slowdown mirrors a speedup (R(1/s) = -R(s)). Simplification can only
fill the room speed left (1 - |R|), so a fast rewrite gains little from also being simpler.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

__all__ = [
    "DEFAULT_PARAMS",
    "SENSITIVITY_DELTAS",
    "SENSITIVITY_LAMBDAS",
    "SENSITIVITY_RAMPS",
    "SENSITIVITY_S_REFS",
    "CgoqCase",
    "CgoqParams",
    "SensitivityRange",
    "cgoq",
    "geometric_mean_speedup",
    "mean_of_scored",
    "sensitivity",
    "sensitivity_grid",
    "simplification_credit",
    "simplification_ratio",
    "speed_reward",
]

# guards the division when the input itself scores 0 (nothing to simplify)
_EPS = 1e-9


@dataclass(frozen=True, slots=True)
class CgoqParams:
    delta: float = 0.05  # neutral band half-width, as a relative speedup
    lam: float = 0.4  # weight of the simplification credit (lambda)
    s_ref: float = 2.0  # speedup that earns R = tanh(1)
    theta: float = 0.10  # SCS drop below which simplification earns nothing
    c: float = 0.30  # SCS drop at which the credit is full

    def __post_init__(self) -> None:
        if self.delta < 0:
            raise ValueError(f"delta must be >= 0, got {self.delta}")
        if not 0 <= self.lam <= 1:
            raise ValueError(f"lambda must be in [0, 1], got {self.lam}")
        if self.s_ref <= 1 + self.delta:
            raise ValueError(f"s_ref must exceed 1 + delta, got {self.s_ref} (delta {self.delta})")
        if not 0 <= self.theta < self.c:
            raise ValueError(f"need 0 <= theta < c, got theta={self.theta}, c={self.c}")

    @property
    def a(self) -> float:
        return math.log1p(self.delta)

    @property
    def tau(self) -> float:
        return math.log(self.s_ref / (1 + self.delta))


DEFAULT_PARAMS = CgoqParams()


def speed_reward(speedup: float, params: CgoqParams = DEFAULT_PARAMS) -> float:
    """R(s): 0 inside the neutral band, odd in ln s, saturating towards +-1."""
    if not (math.isfinite(speedup) and speedup > 0):
        raise ValueError(f"a speedup is a finite positive ratio, got {speedup}")
    z = math.log(speedup)
    excess = max(abs(z) - params.a, 0.0)
    return math.copysign(math.tanh(excess / params.tau), z) if excess else 0.0


def simplification_ratio(scs_input: float, scs_rewrite: float) -> float:
    """r_C: the share of the input's SCS the rewrite removed (0 when it did not get simpler)."""
    return max(0.0, (scs_input - scs_rewrite) / max(scs_input, _EPS))


def simplification_credit(ratio: float, params: CgoqParams = DEFAULT_PARAMS) -> float:
    """K: a linear ramp from 0 at r_C = theta to 1 at r_C = c."""
    return min(1.0, max(0.0, (ratio - params.theta) / (params.c - params.theta)))


def cgoq(
    speedup: float,
    scs_input: float,
    scs_rewrite: float,
    consistent: bool,
    params: CgoqParams = DEFAULT_PARAMS,
) -> float | None:
    """CGOQ of one rewrite, or None when it failed the correctness gate."""
    if not consistent:
        return None
    reward = speed_reward(speedup, params)
    credit = simplification_credit(simplification_ratio(scs_input, scs_rewrite), params)
    return 100.0 * (reward + params.lam * (1.0 - abs(reward)) * credit)


# -- sensitivity -------------------------------------------------------------------------------

SENSITIVITY_DELTAS = (0.025, 0.05, 0.075)
SENSITIVITY_LAMBDAS = (0.2, 0.4, 0.6)
SENSITIVITY_S_REFS = (1.5, 2.0, 3.0)
SENSITIVITY_RAMPS = ((0.05, 0.25), (0.10, 0.30), (0.15, 0.40))


def sensitivity_grid() -> Iterator[CgoqParams]:
    """The 81 configurations: every delta x lambda x s_ref x (theta, c); the default is one."""
    for delta, lam, s_ref, (theta, c) in itertools.product(
        SENSITIVITY_DELTAS, SENSITIVITY_LAMBDAS, SENSITIVITY_S_REFS, SENSITIVITY_RAMPS
    ):
        yield CgoqParams(delta=delta, lam=lam, s_ref=s_ref, theta=theta, c=c)


@dataclass(frozen=True, slots=True)
class CgoqCase:
    """One rewrite as CGOQ sees it."""

    speedup: float | None  # None when there is no timing (e.g. the rewrite failed the gate)
    scs_input: float
    scs_rewrite: float
    consistent: bool

    def score(self, params: CgoqParams = DEFAULT_PARAMS) -> float | None:
        if not self.consistent:
            return None
        if self.speedup is None:
            raise ValueError("a consistent rewrite needs a speedup")
        return cgoq(self.speedup, self.scs_input, self.scs_rewrite, True, params)


Aggregate = Callable[[Sequence[float | None]], float]


def mean_of_scored(values: Sequence[float | None]) -> float:
    """Mean CGOQ over the rewrites that passed the gate (None entries are left out)."""
    scored = [v for v in values if v is not None]
    if not scored:
        raise ValueError("no rewrite passed the correctness gate")
    return statistics.fmean(scored)


@dataclass(frozen=True, slots=True)
class SensitivityRange:
    """An aggregate of per-case CGOQ, computed under each of the grid's configurations."""

    minimum: float
    maximum: float
    median: float
    at_default: float
    per_config: tuple[tuple[CgoqParams, float], ...]


def sensitivity(
    cases: Sequence[CgoqCase], aggregate: Aggregate = mean_of_scored
) -> SensitivityRange:
    """How far ``aggregate`` moves over :func:`sensitivity_grid`.

    ``aggregate`` gets the per-case values in case order, None for a case that failed the gate, so
    how a failed rewrite counts (left out, scored 0, ...) is its decision.
    """
    per_config = tuple(
        (params, aggregate([case.score(params) for case in cases])) for params in sensitivity_grid()
    )
    values = [value for _, value in per_config]
    return SensitivityRange(
        minimum=min(values),
        maximum=max(values),
        median=statistics.median(values),
        at_default=dict(per_config)[DEFAULT_PARAMS],
        per_config=per_config,
    )


def geometric_mean_speedup(speedups: Iterable[float | None]) -> tuple[float | None, int]:
    """Geometric mean of the timed speedups and how many there were (None entries are skipped)."""
    logs = []
    for speedup in speedups:
        if speedup is None:
            continue
        if not (math.isfinite(speedup) and speedup > 0):
            raise ValueError(f"a speedup is a finite positive ratio, got {speedup}")
        logs.append(math.log(speedup))
    if not logs:
        return None, 0
    return math.exp(statistics.fmean(logs)), len(logs)
