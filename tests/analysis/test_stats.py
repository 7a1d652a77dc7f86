"""polysql.analysis.stats checked against independent implementations on generated data."""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Callable

import numpy as np
import pytest
from scipy import stats as scipy_stats
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar
from statsmodels.stats.inter_rater import cohens_kappa as sm_cohens_kappa
from statsmodels.stats.multitest import multipletests

from polysql.analysis import summary
from polysql.analysis.stats import (
    CHI2_MIN_DISCORDANT,
    BootstrapInterval,
    McNemarResult,
    TauResult,
    cohen_kappa,
    holm,
    kendall_tau,
    mcnemar,
    paired_bootstrap,
    tiers,
    wilson_interval,
)

SEEDS = (0, 1, 2, 7, 42)
SIZES = (3, 12, 40, 150, 600)


def paired_correctness(
    seed: int, n: int, p_first: float = 0.7, p_second: float = 0.55, agree: float = 0.6
) -> tuple[list[bool], list[bool]]:
    """Two correlated correctness vectors: the second copies the first on a share of questions."""
    rng = np.random.default_rng(seed)
    first = rng.random(n) < p_first
    own = rng.random(n) < p_second
    second = np.where(rng.random(n) < agree, first, own)
    return [bool(x) for x in first], [bool(x) for x in second]


def statsmodels_kappa(first: list[bool], second: list[bool]) -> float:
    # statsmodels also computes kappa's standard error, which warns (0/0) on degenerate tables
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(sm_cohens_kappa(table_2x2(first, second)).kappa)


def table_2x2(first: list[bool], second: list[bool]) -> np.ndarray:
    """Rows: first correct / wrong; columns: second correct / wrong (counted in plain Python)."""
    table = np.zeros((2, 2), dtype=int)
    for x, y in zip(first, second, strict=True):
        table[0 if x else 1, 0 if y else 1] += 1
    return table


# --- wilson_interval ---------------------------------------------------------------------------


def test_wilson_interval_is_the_summary_one_not_a_copy() -> None:
    assert wilson_interval is summary.wilson_interval


# --- paired_bootstrap --------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(("n", "tolerance"), [(20, 0.2), (200, 0.06), (1_000, 0.04)])
def test_bootstrap_agrees_with_scipy_paired_percentile_bootstrap(
    seed: int, n: int, tolerance: float
) -> None:
    reference, other = paired_correctness(seed, n)
    ours = paired_bootstrap(reference, other, resamples=10_000, seed=seed)

    ref = np.asarray(reference, dtype=float)
    oth = np.asarray(other, dtype=float)
    theirs = scipy_stats.bootstrap(
        (ref, oth),
        lambda r, o, axis=-1: o.mean(axis=axis) - r.mean(axis=axis),
        paired=True,
        vectorized=True,
        n_resamples=10_000,
        method="percentile",
        confidence_level=0.95,
        random_state=np.random.default_rng(seed + 1000),
    ).confidence_interval
    assert ours.diff == pytest.approx(oth.mean() - ref.mean(), abs=1e-12)
    # Two Monte Carlo estimates of the same percentiles from different streams: they agree up to
    # resampling noise and the 1/n grid the differences live on, measured as a share of the
    # interval's width (worst seen: 14% at n=20, 4% at 200, 2% at 1000). A 90% interval passed
    # off as 95% would move each end by about 8% of the width.
    width = ours.high - ours.low
    assert ours.low == pytest.approx(theirs.low, abs=tolerance * width)
    assert ours.high == pytest.approx(theirs.high, abs=tolerance * width)


def test_bootstrap_is_deterministic_for_a_seed_and_varies_across_seeds() -> None:
    reference, other = paired_correctness(3, 80)
    first = paired_bootstrap(reference, other, seed=11)
    assert paired_bootstrap(reference, other, seed=11) == first
    assert isinstance(first, BootstrapInterval)
    assert (first.resamples, first.seed, first.n, first.confidence) == (10_000, 11, 80, 0.95)
    others = {(paired_bootstrap(reference, other, seed=s).low,
               paired_bootstrap(reference, other, seed=s).high) for s in range(12, 20)}
    assert len(others | {(first.low, first.high)}) > 1


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n", SIZES[1:])
def test_bootstrap_interval_contains_the_point_difference(seed: int, n: int) -> None:
    reference, other = paired_correctness(seed, n)
    result = paired_bootstrap(reference, other, seed=seed)
    assert result.low <= result.diff <= result.high
    assert -1.0 <= result.low <= result.high <= 1.0


def test_bootstrap_sign_is_other_minus_reference() -> None:
    reference = [True] * 8 + [False] * 2
    other = [True] * 5 + [False] * 5
    assert paired_bootstrap(reference, other).diff == pytest.approx(-0.3)
    assert paired_bootstrap(other, reference).diff == pytest.approx(0.3)


@pytest.mark.parametrize("seed", SEEDS)
def test_bootstrap_interval_narrows_with_more_data(seed: int) -> None:
    small = paired_bootstrap(*paired_correctness(seed, 50), seed=seed)
    large = paired_bootstrap(*paired_correctness(seed, 2_000), seed=seed)
    assert large.high - large.low < small.high - small.low


def test_bootstrap_wider_at_higher_confidence() -> None:
    reference, other = paired_correctness(5, 120)
    narrow = paired_bootstrap(reference, other, confidence=0.80)
    wide = paired_bootstrap(reference, other, confidence=0.99)
    assert wide.low <= narrow.low and narrow.high <= wide.high
    assert wide.high - wide.low > narrow.high - narrow.low


def test_bootstrap_identical_vectors_give_a_zero_width_interval() -> None:
    answers = [True, False, True, True, False]
    result = paired_bootstrap(answers, answers)
    assert (result.diff, result.low, result.high) == (0.0, 0.0, 0.0)


def test_bootstrap_rejects_empty_and_mismatched_inputs() -> None:
    with pytest.raises(ValueError, match="at least one question"):
        paired_bootstrap([], [])
    with pytest.raises(ValueError, match="same length"):
        paired_bootstrap([True, False], [True])
    with pytest.raises(ValueError, match="resamples"):
        paired_bootstrap([True], [False], resamples=0)
    with pytest.raises(ValueError, match="confidence"):
        paired_bootstrap([True], [False], confidence=1.0)


# --- mcnemar -----------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n", SIZES)
def test_mcnemar_agrees_with_statsmodels(seed: int, n: int) -> None:
    first, second = paired_correctness(seed, n)
    table = table_2x2(first, second)
    result = mcnemar(first, second)
    assert isinstance(result, McNemarResult)
    assert (result.b, result.c, result.n) == (table[0, 1], table[1, 0], n)

    exact = sm_mcnemar(table, exact=True)
    assert result.p_exact == pytest.approx(exact.pvalue, rel=1e-9, abs=1e-12)
    assert result.p_value == result.p_exact
    if result.discordant:
        assert result.p_exact == pytest.approx(
            scipy_stats.binomtest(result.b, result.discordant, 0.5).pvalue, rel=1e-12)

    if result.discordant < CHI2_MIN_DISCORDANT:
        assert result.chi2 is None and result.p_chi2 is None
    else:
        assert result.chi2 is not None and result.p_chi2 is not None
        approx = sm_mcnemar(table, exact=False, correction=True)
        if result.b != result.c:
            assert result.chi2 == pytest.approx(approx.statistic, rel=1e-12)
            assert result.p_chi2 == pytest.approx(approx.pvalue, rel=1e-9)
        else:
            # statsmodels applies (|b-c|-1)^2 literally and reports 1/(b+c) here; the
            # correction is floored at zero instead, as R's mcnemar.test does.
            assert approx.statistic == pytest.approx(1 / result.discordant)
            assert (result.chi2, result.p_chi2) == (0.0, 1.0)


def test_mcnemar_chi2_threshold_is_exactly_the_constant() -> None:
    below = [True] * (CHI2_MIN_DISCORDANT - 1)
    at = [True] * CHI2_MIN_DISCORDANT
    assert mcnemar(below, [not x for x in below]).chi2 is None
    result = mcnemar(at, [not x for x in at])
    assert result.chi2 == pytest.approx((CHI2_MIN_DISCORDANT - 1) ** 2 / CHI2_MIN_DISCORDANT)


def test_mcnemar_chi2_with_equal_discordant_counts_is_zero() -> None:
    first = [True] * 15 + [False] * 15
    second = [False] * 15 + [True] * 15
    result = mcnemar(first, second)
    assert (result.b, result.c) == (15, 15)
    assert (result.chi2, result.p_chi2, result.p_exact) == (0.0, 1.0, 1.0)
    # statsmodels applies the correction literally here: (0 - 1)^2 / 30
    literal = sm_mcnemar(table_2x2(first, second), exact=False, correction=True)
    assert literal.statistic == pytest.approx(1 / 30)


def test_mcnemar_no_discordant_pairs_gives_p_one() -> None:
    answers = [True, False, True, True]
    result = mcnemar(answers, answers)
    assert (result.b, result.c, result.n, result.p_exact) == (0, 0, 4, 1.0)
    assert result.chi2 is None
    # statsmodels agrees on the degenerate table
    assert sm_mcnemar(table_2x2(answers, answers), exact=True).pvalue == 1.0


@pytest.mark.parametrize("n", (1, 3, 10, 30))
def test_mcnemar_all_discordant_one_way(n: int) -> None:
    first = [True] * n
    second = [False] * n
    result = mcnemar(first, second)
    assert (result.b, result.c) == (n, 0)
    # two-sided exact: both extreme tails, 2 * 0.5**n, capped at 1
    assert result.p_exact == pytest.approx(min(1.0, 2 * 0.5**n), rel=1e-12)
    assert result.p_exact == pytest.approx(sm_mcnemar(table_2x2(first, second)).pvalue)
    assert mcnemar(second, first).p_exact == result.p_exact
    assert (mcnemar(second, first).b, mcnemar(second, first).c) == (0, n)


def test_mcnemar_tiny_and_all_correct_inputs() -> None:
    assert mcnemar([True], [False]).p_exact == 1.0
    assert mcnemar([], []).n == 0 and mcnemar([], []).p_exact == 1.0
    all_correct = [True] * 10
    mixed = [True] * 7 + [False] * 3
    result = mcnemar(all_correct, mixed)
    assert (result.b, result.c) == (3, 0)
    assert result.p_exact == pytest.approx(sm_mcnemar(table_2x2(all_correct, mixed)).pvalue)


def test_mcnemar_rejects_mismatched_lengths() -> None:
    with pytest.raises(ValueError, match="same length"):
        mcnemar([True, True], [True])


# --- holm --------------------------------------------------------------------------------------


def holm_by_definition(p: list[float]) -> list[float]:
    """Holm straight from its definition, one adjusted value at a time."""
    m = len(p)
    ranked = sorted(range(m), key=lambda i: (p[i], i))
    adjusted = [0.0] * m
    for rank, i in enumerate(ranked):
        adjusted[i] = min(1.0, max((m - k) * p[ranked[k]] for k in range(rank + 1)))
    return adjusted


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("m", (1, 2, 5, 17, 60))
def test_holm_agrees_with_statsmodels_and_the_definition(seed: int, m: int) -> None:
    rng = np.random.default_rng(seed)
    # a mix of small "real effect" p-values and uniform nulls, with a few exact ties
    p = np.concatenate([rng.uniform(0, 0.01, m // 3), rng.uniform(0, 1, m - m // 3)])
    if m > 3:
        p[-1] = p[0]
    rng.shuffle(p)
    ours = holm(list(p))
    _, theirs, _, _ = multipletests(p, method="holm")
    assert ours == pytest.approx(list(theirs), rel=1e-12, abs=1e-15)
    assert ours == pytest.approx(holm_by_definition(list(p)), rel=1e-12, abs=1e-15)
    # monotone in the raw p-values, never below them, capped at 1
    for i, j in itertools.permutations(range(m), 2):
        if p[i] <= p[j]:
            assert ours[i] <= ours[j]
    assert all(raw <= adj <= 1.0 for raw, adj in zip(p, ours, strict=True))


def test_holm_small_cases() -> None:
    assert holm([]) == []
    assert holm([0.03]) == [0.03]
    # sorted 0.01, 0.03, 0.04 scale to 3*0.01, 2*0.03, 1*0.04 = 0.03, 0.06, 0.04; the last
    # would drop below the one before it, so it is stepped up to 0.06
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.6, 0.5]) == [1.0, 1.0]


def test_holm_rejects_values_outside_unit_interval() -> None:
    for bad in ([1.5], [-0.1], [float("nan")]):
        with pytest.raises(ValueError, match=r"\[0, 1\]"):
            holm(bad)


# --- cohen_kappa -------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n", SIZES)
def test_kappa_agrees_with_statsmodels(seed: int, n: int) -> None:
    first, second = paired_correctness(seed, n, p_first=0.6, p_second=0.4, agree=0.5)
    ours = cohen_kappa(first, second)
    table = table_2x2(first, second)
    if (table.sum(axis=0) == n).any() and (table.sum(axis=1) == n).any() and table.trace() == n:
        assert ours is None  # both constant and identical: checked separately below
        return
    assert ours == pytest.approx(statsmodels_kappa(first, second), rel=1e-9, abs=1e-12)


def test_kappa_perfect_agreement_and_perfect_disagreement() -> None:
    answers = [True, False, True, False, False]
    assert cohen_kappa(answers, answers) == 1.0
    flipped = [not x for x in answers]
    assert cohen_kappa(answers, flipped) == pytest.approx(
        statsmodels_kappa(answers, flipped))
    assert cohen_kappa(answers, flipped) < 0


def test_kappa_constant_but_different_raters_is_zero() -> None:
    # chance agreement is 0 here (one always says yes, the other always no), so kappa is defined
    first, second = [True] * 6, [False] * 6
    assert cohen_kappa(first, second) == 0.0
    assert statsmodels_kappa(first, second) == 0.0


@pytest.mark.parametrize("value", (True, False))
def test_kappa_undefined_when_both_raters_constant_and_identical(value: bool) -> None:
    answers = [value] * 7
    assert cohen_kappa(answers, answers) is None
    # statsmodels returns nan there (0/0, with a RuntimeWarning); None makes "undefined" explicit
    # instead of a nan that silently poisons averages.
    assert np.isnan(statsmodels_kappa(answers, answers))


def test_kappa_one_rater_constant() -> None:
    all_correct = [True] * 8
    mixed = [True] * 5 + [False] * 3
    # p_o == p_e when one rater never varies: kappa is exactly 0
    assert cohen_kappa(all_correct, mixed) == 0.0
    assert statsmodels_kappa(all_correct, mixed) == pytest.approx(0.0)


def test_kappa_rejects_empty_and_mismatched_inputs() -> None:
    with pytest.raises(ValueError, match="at least one question"):
        cohen_kappa([], [])
    with pytest.raises(ValueError, match="same length"):
        cohen_kappa([True], [True, False])


# --- kendall_tau -------------------------------------------------------------------------------


def tau_b_by_pairs(x: list[float], y: list[float]) -> float:
    """tau-b counted pair by pair: (concordant - discordant) / sqrt(untied_x * untied_y)."""
    concordant = discordant = untied_x = untied_y = 0
    for i, j in itertools.combinations(range(len(x)), 2):
        dx, dy = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
        untied_x += dx != 0
        untied_y += dy != 0
        concordant += dx * dy > 0
        discordant += dx * dy < 0
    return float((concordant - discordant) / np.sqrt(untied_x * untied_y))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n", (2, 5, 12, 40, 150))
@pytest.mark.parametrize("levels", (3, 1000))  # few levels: many ties; many levels: few ties
def test_kendall_tau_agrees_with_pair_counting_and_scipy(seed: int, n: int, levels: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.integers(0, levels, n).astype(float)
    y = x + rng.integers(0, levels, n) * 0.8  # correlated with x
    result = kendall_tau(list(x), list(y))
    if len(set(x)) == 1 or len(set(y)) == 1:
        assert result is None
        return
    assert isinstance(result, TauResult)
    assert result.n == n
    assert result.tau == pytest.approx(tau_b_by_pairs(list(x), list(y)), rel=1e-9, abs=1e-12)
    reference = scipy_stats.kendalltau(x, y, variant="b")
    assert result.tau == pytest.approx(reference.statistic, rel=1e-12)
    assert result.p_value == pytest.approx(reference.pvalue, rel=1e-9)
    assert 0.0 <= result.p_value <= 1.0


def test_kendall_tau_perfect_orders() -> None:
    up = kendall_tau([1, 2, 3, 4], [10, 20, 30, 40])
    down = kendall_tau([1, 2, 3, 4], [40, 30, 20, 10])
    assert up is not None and down is not None
    assert (up.tau, down.tau) == (1.0, -1.0)


def test_kendall_tau_with_ties_is_tau_b() -> None:
    x, y = [1, 1, 2, 3], [1, 2, 2, 3]
    result = kendall_tau(x, y)
    assert result is not None
    # 4 concordant, 0 discordant, 5 pairs untied in each: 4 / 5
    assert result.tau == pytest.approx(0.8)
    assert result.tau == pytest.approx(tau_b_by_pairs(x, y))


def test_kendall_tau_undefined_cases_are_none() -> None:
    assert kendall_tau([], []) is None
    assert kendall_tau([0.5], [0.7]) is None
    assert kendall_tau([0.5, 0.5, 0.5], [1, 2, 3]) is None  # all tied: tau-b is 0/0
    assert kendall_tau([1, 2, 3], [4, 4, 4]) is None


def test_kendall_tau_rejects_bad_inputs() -> None:
    with pytest.raises(ValueError, match="same length"):
        kendall_tau([1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match="NaN"):
        kendall_tau([1, float("nan")], [1, 2])


# --- tiers -------------------------------------------------------------------------------------


def significance_from(pairs: set[frozenset[str]]) -> Callable[[str, str], bool]:
    def significant(a: str, b: str) -> bool:
        return frozenset((a, b)) in pairs

    return significant


ACCURACY = {"duckdb": 0.81, "postgres": 0.78, "sqlite": 0.74, "mysql": 0.60}


def test_tiers_none_significant_is_one_tier_in_accuracy_order() -> None:
    result = tiers(["sqlite", "mysql", "duckdb", "postgres"], ACCURACY, significance_from(set()))
    assert result == [["duckdb", "postgres", "sqlite", "mysql"]]


def test_tiers_all_significant_is_one_tier_each() -> None:
    names = list(ACCURACY)
    every_pair = {frozenset(p) for p in itertools.combinations(names, 2)}
    assert tiers(names, ACCURACY, significance_from(every_pair)) == [
        ["duckdb"], ["postgres"], ["sqlite"], ["mysql"]]


def test_tiers_chain_splits_where_a_member_differs() -> None:
    accuracy = {"A": 0.9, "B": 0.8, "C": 0.7}
    # A~B and B~C but A!~C: C cannot join A's tier although it is close to B
    assert tiers(["C", "A", "B"], accuracy, significance_from({frozenset("AC")})) == [
        ["A", "B"], ["C"]]


def test_tiers_single_name_and_empty() -> None:
    assert tiers(["duckdb"], ACCURACY, significance_from(set())) == [["duckdb"]]
    assert tiers([], ACCURACY, significance_from(set())) == []


def test_tiers_ties_in_accuracy_are_broken_by_name() -> None:
    accuracy = {"b": 0.5, "a": 0.5, "c": 0.9}
    # order c, a, b: a joins c's tier; b differs from c so it starts the next one
    assert tiers(["b", "a", "c"], accuracy, significance_from({frozenset("cb")})) == [
        ["c", "a"], ["b"]]


@pytest.mark.parametrize("seed", SEEDS)
def test_tiers_guarantee_on_random_significance(seed: int) -> None:
    rng = np.random.default_rng(seed)
    names = [f"d{i}" for i in range(9)]
    accuracy = {name: float(rng.random()) for name in names}
    pairs = {frozenset(p) for p in itertools.combinations(names, 2) if rng.random() < 0.35}
    significant = significance_from(pairs)
    result = tiers(names, accuracy, significant)
    # consecutive runs of the accuracy order ...
    assert [n for tier in result for n in tier] == sorted(names, key=lambda n: -accuracy[n])
    for index, tier in enumerate(result):
        # ... with no significant pair inside a tier ...
        assert not any(significant(a, b) for a, b in itertools.combinations(tier, 2))
        # ... and each later tier's first name differs from someone in the tier before it
        if index:
            assert any(significant(m, tier[0]) for m in result[index - 1])


def test_tiers_rejects_duplicate_names() -> None:
    with pytest.raises(ValueError, match="unique"):
        tiers(["duckdb", "duckdb"], ACCURACY, significance_from(set()))


def test_wilson_bounds_never_exclude_the_observed_proportion() -> None:
    for n in range(1, 200):
        for k in (0, n):
            low, high = wilson_interval(k, n)
            assert low <= k / n <= high, (k, n, low, high)
