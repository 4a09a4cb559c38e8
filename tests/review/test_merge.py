"""The three-way field merge used by rebase (review.merge): pure, no database."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from review.merge import merge_fields

BASE = {"title": "T", "lesson": "L", "tags": ["a"]}


def test_unchanged_everywhere_is_the_base() -> None:
    result = merge_fields(BASE, dict(BASE), dict(BASE))
    assert result.clean and result.merged == BASE and result.from_theirs == ()


def test_field_changed_only_in_theirs_takes_theirs() -> None:
    theirs = {**BASE, "lesson": "L. Added sentence."}
    result = merge_fields(BASE, theirs, {**BASE, "title": "T2"})
    assert result.clean
    assert result.merged == {"title": "T2", "lesson": "L. Added sentence.", "tags": ["a"]}
    assert result.from_theirs == ("lesson",)


def test_field_changed_only_in_ours_takes_ours() -> None:
    result = merge_fields(BASE, dict(BASE), {**BASE, "tags": ["a", "b"]})
    assert result.clean and result.merged["tags"] == ["a", "b"] and result.from_theirs == ()


def test_same_change_on_both_sides_is_clean() -> None:
    both = {**BASE, "lesson": "same"}
    result = merge_fields(BASE, both, dict(both))
    assert result.clean and result.merged == both and result.from_theirs == ()


def test_different_changes_to_one_field_conflict_and_name_it() -> None:
    result = merge_fields(
        BASE, {**BASE, "lesson": "theirs", "title": "X"}, {**BASE, "lesson": "ours", "tags": []}
    )
    assert not result.clean
    assert result.conflicts == ("lesson",)


def test_conflicts_are_sorted_and_all_named() -> None:
    result = merge_fields(
        BASE, {"title": "1", "lesson": "1", "tags": ["1"]}, {"title": "2", "lesson": "2", "tags": ["2"]}
    )
    assert result.conflicts == ("lesson", "tags", "title")


def test_field_removed_on_one_side_is_removed_and_added_on_one_side_is_added() -> None:
    theirs = {"title": "T", "tags": ["a"], "new": 1}  # lesson removed, new added
    result = merge_fields(BASE, theirs, dict(BASE))
    assert result.clean and result.merged == {"title": "T", "tags": ["a"], "new": 1}


def test_removed_on_one_side_and_changed_on_the_other_conflicts() -> None:
    result = merge_fields(BASE, {"title": "T", "tags": ["a"]}, {**BASE, "lesson": "changed"})
    assert result.conflicts == ("lesson",)


def test_none_is_a_value_distinct_from_missing() -> None:
    result = merge_fields({"a": None}, {}, {"a": None})
    assert result.clean and result.merged == {}
    result = merge_fields({}, {"a": None}, {"a": 1})
    assert result.conflicts == ("a",)


values = st.one_of(st.none(), st.integers(0, 3), st.text(max_size=3), st.lists(st.integers(0, 2), max_size=2))
ABSENT = object()
records = st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), values, max_size=4)


@settings(deadline=None)
@given(records, records, records)
def test_merge_properties(base: dict, theirs: dict, ours: dict) -> None:
    result = merge_fields(base, theirs, ours)
    keys = set(base) | set(theirs) | set(ours)
    for name in keys:
        b, t, o = (base.get(name, ABSENT), theirs.get(name, ABSENT), ours.get(name, ABSENT))
        changed_t, changed_o = t != b, o != b
        if name in result.conflicts:
            assert changed_t and changed_o and t != o
            continue
        expected = o if changed_o else t
        if expected is ABSENT:
            assert name not in result.merged
        else:
            assert result.merged[name] == expected
        # A change already approved in theirs is never dropped unless ours made a change too.
        if changed_t and not changed_o:
            assert name in result.from_theirs
    assert set(result.merged) <= keys


@settings(deadline=None)
@given(records, records)
def test_merge_is_identity_when_one_side_is_the_base(base: dict, other: dict) -> None:
    assert merge_fields(base, base, other).merged == other
    assert merge_fields(base, other, base).merged == other
    assert merge_fields(base, other, base).clean and merge_fields(base, base, other).clean
