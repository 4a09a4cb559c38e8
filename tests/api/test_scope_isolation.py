"""Scopes are exact, case-sensitive strings: nothing written in one is visible from another.

Every operation is checked from a scope that differs from the written one by case, by a
leading or trailing space, or entirely.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.helpers import (
    assert_error,
    capture,
    changes,
    get_entry,
    list_entries,
    make_memory,
    memory_ref,
    ok,
    retire,
    revise,
    row_counts,
)

SCOPE_A = "repo"
OTHER_SCOPES = [
    pytest.param("Repo", id="capitalized"),
    pytest.param("REPO", id="upper_case"),
    pytest.param("repo ", id="trailing_space"),
    pytest.param(" repo", id="leading_space"),
    pytest.param("repo\t", id="trailing_tab"),
    pytest.param("repo/", id="trailing_slash"),
    pytest.param("r\u00e9po", id="accented"),
    pytest.param("other", id="unrelated"),
]


@pytest.fixture
def written(api: Any) -> dict[str, Any]:
    """Scope A with history: two entries, one revised and one retired (head revision 4)."""
    first, second = make_memory(api, SCOPE_A, "alpha secret deployment key", "beta secret rotation")
    revised = ok(
        revise(api, SCOPE_A, {**first["citation"], "memory_ref": memory_ref(2)}, "alpha secret, revised")
    )
    retired = ok(retire(api, SCOPE_A, {**second["citation"], "memory_ref": memory_ref(3)}))
    ok(capture(api, SCOPE_A, "src-1", "captured in A"), 202)
    return {"first": first, "second": second, "revised": revised["entry"], "retired": retired["entry"]}


def citations_of(written: dict[str, Any]) -> list[dict[str, Any]]:
    return [written[key]["citation"] for key in ("first", "second", "revised", "retired")]


@pytest.mark.parametrize("scope_b", OTHER_SCOPES)
def test_scope_b_sees_no_memory_of_scope_a(api: Any, written: dict[str, Any], scope_b: str) -> None:
    assert ok(list_entries(api, scope_b)) == {"memory": None, "entries": []}
    assert ok(list_entries(api, scope_b, include_inactive=True)) == {"memory": None, "entries": []}
    assert api.search(scope_b, "alpha secret rotation") == {"memory": None, "mode": None, "hits": []}
    assert ok(changes(api, scope_b, since_revision=0)) == {"memory": None, "revisions": []}
    assert ok(changes(api, scope_b)) == {"memory": None, "revisions": []}


@pytest.mark.parametrize("scope_b", OTHER_SCOPES)
def test_citations_of_scope_a_are_not_found_in_scope_b(
    api: Any, written: dict[str, Any], scope_b: str
) -> None:
    before = row_counts()

    for citation in citations_of(written):
        assert_error(get_entry(api, scope_b, citation), 404, "memory_not_found")
        assert_error(revise(api, scope_b, citation, "hijacked"), 404, "memory_not_found")
        assert_error(retire(api, scope_b, citation), 404, "memory_not_found")

    assert row_counts() == before


@pytest.mark.parametrize("scope_b", OTHER_SCOPES)
def test_citations_of_scope_a_are_not_found_in_a_scope_b_at_the_same_revision(
    api: Any, written: dict[str, Any], scope_b: str
) -> None:
    # Scope B reaches the same head revision number, so only the entry itself can tell them apart.
    make_memory(api, scope_b, "b one", "b two", "b three", "b four")
    head = {"memory_ref": memory_ref(4)}
    before = row_counts()

    for citation in citations_of(written):
        assert_error(get_entry(api, scope_b, {**citation, **head}), 404, "memory_not_found")
        assert_error(revise(api, scope_b, {**citation, **head}, "hijacked"), 404, "memory_not_found")
        assert_error(retire(api, scope_b, {**citation, **head}), 404, "memory_not_found")

    assert row_counts() == before
    assert [e["text"] for e in ok(list_entries(api, scope_b))["entries"]] == [
        "b one",
        "b two",
        "b three",
        "b four",
    ]


@pytest.mark.parametrize("scope_b", OTHER_SCOPES)
def test_scope_b_has_its_own_memory_history_and_search(
    api: Any, written: dict[str, Any], scope_b: str
) -> None:
    same_text = api.remember(scope_b, "alpha secret deployment key")
    api.remember(scope_b, "gamma only in b")

    # The same text is a new entry in B (no cross-scope duplicate), in B's first revision.
    assert same_text["memory"] == memory_ref(1) and same_text["entry"] is not None
    body = api.search(scope_b, "alpha secret rotation revised gamma")
    assert body["memory"] == memory_ref(2)
    assert sorted(h["text"] for h in body["hits"]) == ["alpha secret deployment key", "gamma only in b"]
    assert all(h["citation"]["memory_ref"] == memory_ref(2) for h in body["hits"])
    assert [
        r["memory_ref"]["revision"] for r in ok(changes(api, scope_b, since_revision=0))["revisions"]
    ] == [1, 2]
    # A is unchanged by all of this.
    assert ok(list_entries(api, SCOPE_A))["memory"] == memory_ref(4)
    assert [h["text"] for h in api.search(SCOPE_A, "gamma")["hits"]] == []


@pytest.mark.parametrize("scope_b", OTHER_SCOPES)
def test_expected_revision_is_checked_against_the_scopes_own_head(
    api: Any, written: dict[str, Any], scope_b: str
) -> None:
    response = api.post(
        "/v1/memory/remember", {"scope_id": scope_b, "kind": "note", "text": "x", "expected_revision": 4}
    )

    assert_error(response, 409, "revision_conflict")
    assert api.remember(SCOPE_A, "x", expected_revision=4)["memory"] == memory_ref(5)


@pytest.mark.parametrize("scope_b", OTHER_SCOPES)
def test_capture_positions_and_identities_are_per_scope(
    api: Any, written: dict[str, Any], scope_b: str
) -> None:
    # The same source id with different content is no conflict across scopes.
    first_b = ok(capture(api, scope_b, "src-1", "captured in B"), 202)
    second_b = ok(capture(api, scope_b, "src-2", "more in B"), 202)
    second_a = ok(capture(api, SCOPE_A, "src-2", "more in A"), 202)

    assert first_b["position"] == 1
    assert second_b["position"] == 2
    assert second_a["position"] == 2
    # Each scope still answers its own retry with its own position.
    assert ok(capture(api, SCOPE_A, "src-1", "captured in A"), 202)["position"] == 1
    assert ok(capture(api, scope_b, "src-1", "captured in B"), 202)["position"] == 1
    assert_error(capture(api, scope_b, "src-1", "captured in A"), 409, "source_conflict")


def test_search_in_one_scope_never_returns_another_scopes_hits_even_with_many_scopes(api: Any) -> None:
    for index in range(6):
        make_memory(api, f"team-{index}", f"shared keyword from team {index}")

    for index in range(6):
        hits = api.search(f"team-{index}", "shared keyword team")["hits"]
        assert [h["text"] for h in hits] == [f"shared keyword from team {index}"]
