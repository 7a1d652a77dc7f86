"""ComparePolicy: defaults, validation, and how options reach compare()."""

from __future__ import annotations

import dataclasses

import pytest

from polysql import Result, compare
from polysql.core.errors import ComparisonError
from polysql.normalizers.policy import DEFAULT_POLICY, ComparePolicy, option_names


def test_unknown_option_names_the_valid_ones() -> None:
    with pytest.raises(ComparisonError) as excinfo:
        compare(Result(["a"], [(1,)]), Result(["a"], [(1,)]), numeric_tolerence=False)
    message = str(excinfo.value)
    assert "numeric_tolerence" in message
    for name in ("numeric_tolerance", "bool_as_int", "temporal_text", "trim_trailing_spaces"):
        assert name in message


@pytest.mark.parametrize("bad", [{"rel_tol": -1.0}, {"abs_tol": float("nan")}, {"rel_tol": 1.5},
                                 {"bool_as_int": "yes"}, {"unresolved_order_keys": "random"}])
def test_invalid_option_values_are_rejected(bad: dict[str, object]) -> None:
    with pytest.raises(ComparisonError) as excinfo:
        ComparePolicy(**bad)  # type: ignore[arg-type]
    assert next(iter(bad)) in str(excinfo.value)


def test_policy_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        DEFAULT_POLICY.rel_tol = 0.1  # type: ignore[misc]


def test_policy_object_and_keyword_options_combine() -> None:
    gold, pred = Result(["a"], [(1 / 3,)]), Result(["a"], [(0.334,)])
    loose = ComparePolicy(rel_tol=1e-2)
    assert compare(gold, pred, policy=loose).match
    assert not compare(gold, pred, policy=loose, numeric_tolerance=False).match


def test_option_names_cover_every_field() -> None:
    assert option_names() == [f.name for f in dataclasses.fields(ComparePolicy)]


def test_significant_digits_keep_buckets_within_tolerance() -> None:
    assert ComparePolicy(rel_tol=1e-5).significant_digits == 6
    assert ComparePolicy(rel_tol=1e-2).significant_digits == 3
    assert ComparePolicy(rel_tol=0.0).significant_digits == 17


def test_header_case_switch() -> None:
    gold = Result(["a", "b"], [(1, 2)])
    pred = Result(["B", "A"], [(2, 1)])
    assert compare(gold, pred).details["alignment"] == "name"
    strict = compare(gold, pred, case_insensitive_headers=False, align_by_value=False)
    assert strict.details["alignment"] == "position"
    assert not strict.match


def test_align_by_name_switch() -> None:
    gold = Result(["a", "b"], [(1, 2)])
    pred = Result(["b", "a"], [(2, 1)])
    assert compare(gold, pred).match
    assert not compare(gold, pred, align_by_name=False, align_by_value=False).match


def test_equal_widths_in_another_order_under_other_names_align_by_value() -> None:
    gold = Result(["Name", "Milliseconds"], [("C.O.D.", 199836), ("Breaking The Rules", 263288)])
    pred = Result(["ms", "track_name"], [(263288, "Breaking The Rules"), (199836, "C.O.D.")])
    verdict = compare(gold, pred)
    assert verdict.match, verdict.reason
    assert verdict.details["alignment"] == "value"
    assert verdict.details["column_map"] == [1, 0]
    # the columns must still form the same rows
    shuffled = Result(["ms", "track_name"], [(199836, "Breaking The Rules"), (263288, "C.O.D.")])
    assert not compare(gold, shuffled).match
    assert not compare(gold, pred, align_by_value=False).match


def test_repeated_headers_keep_their_positions() -> None:
    """Employee and manager both named FirstName: only the order says which is which."""
    gold = Result(["FirstName", "FirstName"], [("Jane", "Andrew"), ("Nancy", "Andrew")])
    swapped = Result(["FirstName", "FirstName"], [("Andrew", "Jane"), ("Andrew", "Nancy")])
    assert not compare(gold, swapped).match
    assert compare(gold, gold).match


def test_value_alignment_takes_the_leftmost_of_identical_columns() -> None:
    gold = Result(["n"], [(1,), (2,)])
    pred = Result(["x", "y", "z"], [("a", 1, 1), ("b", 2, 2)])
    verdict = compare(gold, pred)
    assert verdict.match
    assert verdict.details["alignment"] == "value"
    assert verdict.details["column_map"] == [1]
    assert verdict.details["ignored_pred_columns"] == ["x", "z"]
