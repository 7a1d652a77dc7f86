"""Paired significance tests and agreement measures for comparing per-question correctness.

Every comparison here is *paired*: the two sequences are aligned by question, so a question that is
hard for everyone is hard on both sides and cancels out. Inputs are sequences of booleans
("question answered correctly") of equal length.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as scipy_stats

from polysql.analysis.summary import wilson_interval

__all__ = [
    "CHI2_MIN_DISCORDANT",
    "BootstrapInterval",
    "McNemarResult",
    "TauResult",
    "cohen_kappa",
    "holm",
    "kendall_tau",
    "mcnemar",
    "paired_bootstrap",
    "tiers",
    "wilson_interval",
]

# Below this many discordant pairs the chi-square approximation to McNemar's test is poor, so the
# statistic is not reported at all rather than reported and misread.
CHI2_MIN_DISCORDANT = 25


def _paired(first: Sequence[bool], second: Sequence[bool]) -> tuple[np.ndarray, np.ndarray]:
    a = np.asarray(first, dtype=bool)
    b = np.asarray(second, dtype=bool)
    if a.ndim != 1 or b.ndim != 1:
        raise ValueError("paired inputs must be flat sequences of booleans")
    if a.shape != b.shape:
        raise ValueError(
            f"paired inputs must have the same length (one entry per question): "
            f"{a.shape[0]} != {b.shape[0]}"
        )
    return a, b


def _check_confidence(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be strictly between 0 and 1, got {confidence}")


@dataclass(frozen=True, slots=True)
class BootstrapInterval:
    """Accuracy difference ``other - reference`` with a percentile bootstrap interval."""

    diff: float
    low: float
    high: float
    resamples: int
    seed: int
    n: int
    confidence: float


def paired_bootstrap(
    reference: Sequence[bool],
    other: Sequence[bool],
    *,
    resamples: int = 10_000,
    seed: int = 0,
    confidence: float = 0.95,
) -> BootstrapInterval:
    """Percentile bootstrap of ``mean(other) - mean(reference)``, resampling questions as pairs.

    Negative means ``other`` answers fewer questions than ``reference``. Deterministic for a seed.
    """
    ref, oth = _paired(reference, other)
    n = ref.shape[0]
    if n == 0:
        raise ValueError("paired_bootstrap needs at least one question; got empty sequences")
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    _check_confidence(confidence)

    per_question = oth.astype(np.int64) - ref.astype(np.int64)  # -1, 0 or +1 per question
    losses = int(np.count_nonzero(per_question < 0))
    gains = int(np.count_nonzero(per_question > 0))
    # A paired resample only matters through how many drawn questions are losses, ties and gains,
    # and drawing n questions with replacement makes those counts multinomial. Drawing the counts
    # directly is the same distribution as drawing indices, in O(resamples) memory instead of
    # O(resamples * n).
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(n, [losses / n, (n - losses - gains) / n, gains / n], size=resamples)
    diffs = (counts[:, 2] - counts[:, 0]) / n
    alpha = 1.0 - confidence
    low, high = np.quantile(diffs, [alpha / 2, 1.0 - alpha / 2])
    return BootstrapInterval(
        diff=(gains - losses) / n,
        low=float(low),
        high=float(high),
        resamples=resamples,
        seed=seed,
        n=n,
        confidence=confidence,
    )


@dataclass(frozen=True, slots=True)
class McNemarResult:
    """McNemar's test on paired correctness.

    ``b``: first correct and second wrong; ``c``: first wrong and second correct; ``n``: questions.
    ``chi2``/``p_chi2`` are None below :data:`CHI2_MIN_DISCORDANT` discordant pairs.
    """

    b: int
    c: int
    n: int
    p_exact: float
    chi2: float | None
    p_chi2: float | None

    @property
    def discordant(self) -> int:
        return self.b + self.c

    @property
    def p_value(self) -> float:
        # Decisions use the exact binomial p: it is valid at every number of discordant pairs,
        # while the chi-square p is only an approximation that is poor for small b + c.
        return self.p_exact


def mcnemar(first: Sequence[bool], second: Sequence[bool]) -> McNemarResult:
    """Two-sided McNemar test: exact binomial p always, continuity-corrected chi-square when large.

    With no discordant pairs there is no evidence of a difference, so ``p_exact`` is 1.0.
    """
    a, s = _paired(first, second)
    b = int(np.count_nonzero(a & ~s))
    c = int(np.count_nonzero(~a & s))
    discordant = b + c
    p_exact = 1.0 if discordant == 0 else float(scipy_stats.binomtest(b, discordant, 0.5).pvalue)
    chi2: float | None = None
    p_chi2: float | None = None
    if discordant >= CHI2_MIN_DISCORDANT:
        # Edwards' correction; floored at zero so that b == c gives 0 (as R's mcnemar.test does)
        # instead of a spurious 1 / (b + c).
        chi2 = max(abs(b - c) - 1, 0) ** 2 / discordant
        p_chi2 = float(scipy_stats.chi2.sf(chi2, df=1))
    return McNemarResult(b=b, c=c, n=int(a.shape[0]), p_exact=p_exact, chi2=chi2, p_chi2=p_chi2)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm step-down adjusted p-values, in input order (monotone in the raw p, capped at 1)."""
    p = np.asarray(p_values, dtype=float)
    if p.ndim != 1:
        raise ValueError("holm expects a flat sequence of p-values")
    m = p.shape[0]
    if m == 0:
        return []
    if np.isnan(p).any() or (p < 0).any() or (p > 1).any():
        raise ValueError("p-values must lie in [0, 1]")
    order = np.argsort(p, kind="stable")
    scaled = (m - np.arange(m)) * p[order]
    # Step-down: an adjusted p can never be smaller than the one of a smaller raw p.
    stepped = np.minimum(np.maximum.accumulate(scaled), 1.0)
    adjusted = np.empty(m)
    adjusted[order] = stepped
    return [float(x) for x in adjusted]


def cohen_kappa(first: Sequence[bool], second: Sequence[bool]) -> float | None:
    """Cohen's kappa of two binary raters over the same questions.

    None when chance agreement is 1 (both raters constant and identical): kappa is 0/0 there.
    """
    a, s = _paired(first, second)
    n = int(a.shape[0])
    if n == 0:
        raise ValueError("cohen_kappa needs at least one question; got empty sequences")
    agree = int(np.count_nonzero(a == s))
    a_true, s_true = int(np.count_nonzero(a)), int(np.count_nonzero(s))
    # Integer arithmetic so "chance agreement is exactly 1" is an exact test, not a float compare.
    chance = a_true * s_true + (n - a_true) * (n - s_true)  # p_e * n**2
    if chance == n * n:
        return None
    return (n * agree - chance) / (n * n - chance)


@dataclass(frozen=True, slots=True)
class TauResult:
    """Kendall's tau-b with its two-sided p-value over ``n`` items."""

    tau: float
    p_value: float
    n: int


def kendall_tau(first: Sequence[float], second: Sequence[float]) -> TauResult | None:
    """Kendall's tau-b between two score vectors over the same items.

    None with fewer than 2 items or when tau is undefined (a vector with every value tied).
    """
    x = np.asarray(first, dtype=float)
    y = np.asarray(second, dtype=float)
    if x.ndim != 1 or y.ndim != 1:
        raise ValueError("kendall_tau expects flat sequences of scores")
    if x.shape != y.shape:
        raise ValueError(f"score vectors must have the same length: {x.shape[0]} != {y.shape[0]}")
    if np.isnan(x).any() or np.isnan(y).any():
        raise ValueError("score vectors must not contain NaN")
    n = int(x.shape[0])
    if n < 2:
        return None
    result = scipy_stats.kendalltau(x, y)
    tau, p_value = float(result.statistic), float(result.pvalue)
    if math.isnan(tau):
        return None
    return TauResult(tau=tau, p_value=p_value, n=n)


def tiers(
    names: Sequence[str],
    accuracy: Mapping[str, float],
    significant: Callable[[str, str], bool],
) -> list[list[str]]:
    """Group names into difficulty tiers, best first.

    Names are sorted by accuracy, highest first (ties by name). A tier starts at its best member;
    each next name joins the current tier only if it is not significantly different from ANY
    member already in it, otherwise it starts a new tier. So every pair inside a tier is not
    significantly different, and tiers are consecutive runs of the accuracy order. Because
    "not significantly different" is not transitive, a chain A~B, B~C, A!~C gives [[A, B], [C]].
    """
    if len(set(names)) != len(names):
        raise ValueError("tier names must be unique")
    ordered = sorted(names, key=lambda name: (-accuracy[name], name))
    result: list[list[str]] = []
    for name in ordered:
        current = result[-1] if result else None
        if current is not None and not any(significant(member, name) for member in current):
            current.append(name)
        else:
            result.append([name])
    return result
