"""polysql.analysis.rewrite.cgoq: the speed reward, the simplification ramp and CGOQ by hand."""

from __future__ import annotations

import dataclasses
import math
import statistics

import numpy as np
import pytest
from scipy import stats as scipy_stats

from polysql.analysis.rewrite.cgoq import (
    DEFAULT_PARAMS,
    SENSITIVITY_DELTAS,
    SENSITIVITY_LAMBDAS,
    SENSITIVITY_RAMPS,
    SENSITIVITY_S_REFS,
    CgoqCase,
    CgoqParams,
    cgoq,
    geometric_mean_speedup,
    mean_of_scored,
    sensitivity,
    sensitivity_grid,
    simplification_credit,
    simplification_ratio,
    speed_reward,
)

TANH_1 = 0.7615941559557649  # tanh(1)


def test_reference_speedup_earns_tanh_one() -> None:
    # z = ln 2, a = ln 1.05, tau = ln(2 / 1.05): (ln 2 - ln 1.05) / ln(2 / 1.05) = 1
    assert (math.log(2) - math.log(1.05)) / math.log(2 / 1.05) == pytest.approx(1.0, abs=1e-15)
    assert DEFAULT_PARAMS.a == pytest.approx(math.log(1.05))
    assert DEFAULT_PARAMS.tau == pytest.approx(math.log(2 / 1.05))
    assert speed_reward(2.0) == pytest.approx(TANH_1, abs=1e-12)
    assert speed_reward(0.5) == pytest.approx(-TANH_1, abs=1e-12)
    for s_ref in (1.5, 3.0, 10.0):
        assert speed_reward(s_ref, CgoqParams(s_ref=s_ref)) == pytest.approx(TANH_1, abs=1e-12)


@pytest.mark.parametrize("speedup", [1.0, 1.01, 1.049, 1 / 1.049, 0.97, 1.0 + 1e-9])
def test_neutral_band_is_exactly_zero(speedup: float) -> None:
    assert speed_reward(speedup) == 0.0


def test_neutral_band_edges_and_just_outside() -> None:
    assert speed_reward(1.05) == pytest.approx(0.0, abs=1e-12)
    assert speed_reward(1 / 1.05) == pytest.approx(0.0, abs=1e-12)
    assert speed_reward(1.06) > 0
    assert speed_reward(1 / 1.06) < 0
    # a wider band swallows 1.06
    assert speed_reward(1.06, CgoqParams(delta=0.075)) == 0.0


@pytest.mark.parametrize("speedup", [1.06, 1.3, 2.0, 3.7, 25.0, 100.0])
def test_slowdown_mirrors_speedup(speedup: float) -> None:
    assert speed_reward(1 / speedup) == pytest.approx(-speed_reward(speedup), abs=1e-12)
    assert -1 < speed_reward(1 / speedup) < 0 < speed_reward(speedup) < 1


def test_speed_reward_grows_with_speedup() -> None:
    speedups = np.geomspace(1.06, 1000, 50)
    rewards = [speed_reward(float(s)) for s in speedups]
    assert all(a < b for a, b in zip(rewards, rewards[1:], strict=False))


@pytest.mark.parametrize("bad", [0.0, -2.0, math.inf, math.nan])
def test_speed_reward_refuses_impossible_speedups(bad: float) -> None:
    with pytest.raises(ValueError):
        speed_reward(bad)


def test_simplification_ratio() -> None:
    assert simplification_ratio(50, 40) == pytest.approx(0.2)
    assert simplification_ratio(50, 50) == 0.0
    assert simplification_ratio(40, 50) == 0.0  # more complex earns nothing, not a penalty
    assert simplification_ratio(0, 0) == 0.0
    assert simplification_ratio(80, 0) == 1.0


@pytest.mark.parametrize(
    ("ratio", "credit"),
    [(0.0, 0.0), (0.05, 0.0), (0.10, 0.0), (0.15, 0.25), (0.20, 0.5), (0.30, 1.0), (0.9, 1.0)],
)
def test_simplification_ramp(ratio: float, credit: float) -> None:
    assert simplification_credit(ratio) == pytest.approx(credit, abs=1e-12)


@pytest.mark.parametrize(
    ("speedup", "scs_input", "scs_rewrite", "expected"),
    [
        # R = tanh(1), no simplification
        (2.0, 50, 50, 100 * TANH_1),
        # neutral speed, r_C = 0.3: full credit, 100 * 0.4 * 1
        (1.0, 50, 35, 40.0),
        # neutral speed, r_C = 0.2: half credit
        (1.02, 50, 40, 20.0),
        # R = tanh(1), r_C = 0.2: 100 * (tanh 1 + 0.4 * (1 - tanh 1) * 0.5)
        (2.0, 50, 40, 100 * (TANH_1 + 0.2 * (1 - TANH_1))),
        # a slowdown partly offset by a full simplification:
        # 100 * (-tanh 1 + 0.4 * (1 - tanh 1))
        (0.5, 60, 30, 100 * (-TANH_1 + 0.4 * (1 - TANH_1))),
        # rewrite more complex: only the speed counts
        (0.5, 30, 60, -100 * TANH_1),
        # s = 4: (1.3862944 - 0.0487902) / 0.6443570 = 2.0757136; e^(-2 * 2.0757136) = 0.0157412,
        # tanh = (1 - 0.0157412) / (1 + 0.0157412) = 0.9690044
        (4.0, 10, 10, 96.90044),
    ],
)
def test_cgoq_by_hand(
    speedup: float, scs_input: float, scs_rewrite: float, expected: float
) -> None:
    assert cgoq(speedup, scs_input, scs_rewrite, True) == pytest.approx(expected, abs=1e-5)


def test_cgoq_against_an_independent_numpy_formula() -> None:
    rng = np.random.default_rng(7)
    for _ in range(200):
        s = float(np.exp(rng.normal(0, 1.5)))
        c_b, c_r = (float(x) for x in rng.uniform(0, 100, 2))
        delta, lam, s_ref = 0.05, 0.4, 2.0
        z = np.log(s)
        r = np.sign(z) * np.tanh(np.maximum(np.abs(z) - np.log1p(delta), 0) / np.log(s_ref / 1.05))
        r_c = max(0.0, (c_b - c_r) / c_b)
        k = np.clip((r_c - 0.1) / 0.2, 0, 1)
        assert cgoq(s, c_b, c_r, True) == pytest.approx(100 * (r + lam * (1 - abs(r)) * k))


def test_gate_failure_has_no_score() -> None:
    assert cgoq(10.0, 50, 10, False) is None
    assert CgoqCase(None, 50, 10, consistent=False).score() is None
    with pytest.raises(ValueError, match="speedup"):
        CgoqCase(None, 50, 10, consistent=True).score()


def test_params_are_frozen_and_checked() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        DEFAULT_PARAMS.lam = 0.5  # type: ignore[misc]
    with pytest.raises(ValueError, match="s_ref"):
        CgoqParams(s_ref=1.04)
    with pytest.raises(ValueError, match="theta"):
        CgoqParams(theta=0.3, c=0.3)
    with pytest.raises(ValueError, match="lambda"):
        CgoqParams(lam=1.5)


def test_grid_has_81_distinct_configurations_including_the_default() -> None:
    grid = list(sensitivity_grid())
    assert len(grid) == len(set(grid)) == 81
    assert DEFAULT_PARAMS in grid
    assert {p.delta for p in grid} == set(SENSITIVITY_DELTAS) == {0.025, 0.05, 0.075}
    assert {p.lam for p in grid} == set(SENSITIVITY_LAMBDAS) == {0.2, 0.4, 0.6}
    assert {p.s_ref for p in grid} == set(SENSITIVITY_S_REFS) == {1.5, 2.0, 3.0}
    assert {(p.theta, p.c) for p in grid} == set(SENSITIVITY_RAMPS)
    assert set(SENSITIVITY_RAMPS) == {(0.05, 0.25), (0.10, 0.30), (0.15, 0.40)}


CASES = [
    CgoqCase(2.0, 50, 50, True),
    CgoqCase(1.0, 50, 35, True),
    CgoqCase(0.8, 40, 38, True),
    CgoqCase(5.0, 70, 40, True),
    CgoqCase(None, 60, 20, False),
]


def test_sensitivity_recomputed_config_by_config() -> None:
    result = sensitivity(CASES)
    assert len(result.per_config) == 81
    brute = []
    for params in sensitivity_grid():
        values = [
            cgoq(c.speedup, c.scs_input, c.scs_rewrite, True, params)
            for c in CASES
            if c.consistent and c.speedup is not None
        ]
        brute.append(statistics.fmean(v for v in values if v is not None))
    assert [v for _, v in result.per_config] == pytest.approx(brute)
    assert result.minimum == pytest.approx(min(brute))
    assert result.maximum == pytest.approx(max(brute))
    assert result.median == pytest.approx(float(np.median(brute)))
    assert result.at_default == pytest.approx(mean_of_scored([c.score() for c in CASES]))
    assert result.minimum < result.median < result.maximum


def test_sensitivity_takes_any_aggregate_and_shows_it_gated_cases() -> None:
    seen: list[list[float | None]] = []

    def failures_count_zero(values: list[float | None]) -> float:
        seen.append(list(values))
        return statistics.fmean(0.0 if v is None else v for v in values)

    result = sensitivity(CASES, failures_count_zero)
    assert len(seen) == 81 and all(len(v) == len(CASES) and v[-1] is None for v in seen)
    assert result.at_default == pytest.approx(
        statistics.fmean([*(c.score() or 0.0 for c in CASES[:-1]), 0.0])
    )
    # a rewrite that is neither faster nor simpler scores 0 under every configuration
    flat = sensitivity([CgoqCase(1.0, 30, 30, True)])
    assert flat.minimum == flat.maximum == flat.median == 0.0


def test_mean_of_scored_needs_one_scored_case() -> None:
    with pytest.raises(ValueError, match="gate"):
        mean_of_scored([None, None])


def test_geometric_mean_speedup() -> None:
    assert geometric_mean_speedup([2.0, 8.0]) == (pytest.approx(4.0), 2)
    assert geometric_mean_speedup([2.0, None, 0.5]) == (pytest.approx(1.0), 2)
    assert geometric_mean_speedup([]) == (None, 0)
    assert geometric_mean_speedup([None]) == (None, 0)
    rng = np.random.default_rng(3)
    speedups = np.exp(rng.normal(0, 1, 300))
    value, support = geometric_mean_speedup(float(s) for s in speedups)
    assert support == 300
    assert value == pytest.approx(float(scipy_stats.gmean(speedups)))
    with pytest.raises(ValueError):
        geometric_mean_speedup([1.0, 0.0])
