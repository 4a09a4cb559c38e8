"""remember / list / get / revise / retire / changes over the wire: revisions, exact citations,
no-ops, conflicts and not-found answers."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.helpers import (
    CHANGE_KEYS,
    assert_entry_shape,
    assert_error,
    changes,
    get_entry,
    head_of,
    list_entries,
    make_memory,
    memory_ref,
    ok,
    retire,
    revise,
    row_counts,
)

SCOPE = "lifecycle"


def with_revision(citation: dict[str, Any], revision: int) -> dict[str, Any]:
    return {**citation, "memory_ref": memory_ref(revision)}


def entries_of(api: Any, scope_id: str = SCOPE, **extra: Any) -> list[dict[str, Any]]:
    return ok(list_entries(api, scope_id, **extra))["entries"]


def texts_of(api: Any, scope_id: str = SCOPE, **extra: Any) -> list[str]:
    return [e["text"] for e in entries_of(api, scope_id, **extra)]


def change_lists(api: Any, scope_id: str = SCOPE) -> list[dict[str, Any]]:
    return ok(changes(api, scope_id, since_revision=0))["revisions"]


# --- remember -------------------------------------------------------------------------------------


def test_remember_creates_a_new_entry_in_a_new_revision_each_time(api: Any) -> None:
    first = api.remember(SCOPE, "the build uses make", kind="fact", reason="seen in CI")
    second = api.remember(SCOPE, "deploys happen on friday")

    assert first["memory"] == memory_ref(1)
    assert second["memory"] == memory_ref(2)
    entry = first["entry"]
    assert_entry_shape(entry)
    assert entry["citation"]["memory_ref"] == memory_ref(1)
    assert entry["citation"]["entry_id"].startswith("mem_ent_")
    assert entry["citation"]["entry_version_id"].startswith("mem_ver_")
    assert entry["version"] == 1
    assert entry["kind"] == "fact"
    assert entry["text"] == "the build uses make"
    assert entry["state"] == "active"
    assert entry["source_refs"] == [] and entry["artifact_refs"] == []
    assert second["entry"]["citation"]["entry_id"] != entry["citation"]["entry_id"]
    assert second["entry"]["citation"]["entry_version_id"] != entry["citation"]["entry_version_id"]
    assert set(first) == {"memory", "entry"}


def test_remember_stores_nfc_stripped_text_and_kind(api: Any) -> None:
    entry = api.remember(SCOPE, "  cafe\u0301 notes\n", kind=" fac\u0327ade ")["entry"]

    assert entry["text"] == "caf\u00e9 notes"
    assert entry["kind"] == "fa\u00e7ade"
    assert get_entry(api, SCOPE, entry["citation"]).json()["text"] == "caf\u00e9 notes"


def test_remember_records_the_normalized_reason_and_blank_reason_as_null(api: Any) -> None:
    api.remember(SCOPE, "one", reason="  because cafe\u0301 ")
    api.remember(SCOPE, "two", reason="   ")
    api.remember(SCOPE, "three")

    reasons = [revision["changes"][0]["reason"] for revision in change_lists(api)]
    assert reasons == ["because caf\u00e9", None, None]


def test_remembering_the_same_kind_and_text_again_is_a_no_op(api: Any) -> None:
    api.remember(SCOPE, "keep it once")
    api.remember(SCOPE, "something else")
    before = row_counts()

    again = api.remember(SCOPE, "keep it once")

    assert again == {"memory": memory_ref(2), "entry": None}
    assert row_counts() == before
    assert len(change_lists(api)) == 2


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        pytest.param("  keep it once \n", "note", id="padded_text"),
        pytest.param("keep it once", " note ", id="padded_kind"),
    ],
)
def test_duplicate_detection_compares_normalized_values(api: Any, text: str, kind: str) -> None:
    api.remember(SCOPE, "keep it once", kind="note")

    assert api.remember(SCOPE, text, kind=kind) == {"memory": memory_ref(1), "entry": None}


def test_duplicate_detection_compares_nfc_forms(api: Any) -> None:
    api.remember(SCOPE, "caf\u00e9", kind="r\u00e9sum\u00e9")

    again = api.remember(SCOPE, "cafe\u0301", kind="re\u0301sume\u0301")

    assert again == {"memory": memory_ref(1), "entry": None}


def test_the_same_text_with_another_kind_is_a_new_entry(api: Any) -> None:
    api.remember(SCOPE, "shared words", kind="fact")

    other = api.remember(SCOPE, "shared words", kind="preference")

    assert other["entry"] is not None and other["memory"] == memory_ref(2)
    assert texts_of(api) == ["shared words", "shared words"]


def test_remember_is_case_sensitive_about_duplicates(api: Any) -> None:
    api.remember(SCOPE, "Use tabs")

    assert api.remember(SCOPE, "use tabs")["entry"] is not None


def test_remembering_the_text_of_a_retired_entry_adds_a_new_entry(api: Any) -> None:
    (entry,) = make_memory(api, SCOPE, "forget me")
    ok(retire(api, SCOPE, entry["citation"]))

    again = api.remember(SCOPE, "forget me")

    assert again["entry"] is not None
    assert again["entry"]["citation"]["entry_id"] != entry["citation"]["entry_id"]
    assert again["memory"] == memory_ref(3)


def test_remembering_text_an_entry_was_revised_away_from_adds_a_new_entry(api: Any) -> None:
    (entry,) = make_memory(api, SCOPE, "old wording")
    ok(revise(api, SCOPE, entry["citation"], "new wording"))

    again = api.remember(SCOPE, "old wording")

    assert again["entry"] is not None
    assert sorted(texts_of(api)) == ["new wording", "old wording"]


def test_remember_with_the_current_head_as_expected_revision_succeeds(api: Any) -> None:
    make_memory(api, SCOPE, "one", "two")

    result = api.remember(SCOPE, "three", expected_revision=2)

    assert result["memory"] == memory_ref(3)


@pytest.mark.parametrize("expected", [1, 3, 99])
def test_remember_rejects_an_expected_revision_that_is_not_the_head(api: Any, expected: int) -> None:
    make_memory(api, SCOPE, "one", "two")
    before = row_counts()

    response = api.post(
        "/v1/memory/remember",
        {"scope_id": SCOPE, "kind": "note", "text": "three", "expected_revision": expected},
    )

    assert_error(response, 409, "revision_conflict")
    assert row_counts() == before
    assert head_of(api, SCOPE) == 2


def test_remember_with_an_expected_revision_conflicts_when_the_scope_has_no_memory(api: Any) -> None:
    before = row_counts()

    response = api.post(
        "/v1/memory/remember", {"scope_id": SCOPE, "kind": "note", "text": "first", "expected_revision": 1}
    )

    assert_error(response, 409, "revision_conflict")
    assert row_counts() == before  # not even an empty Memory head is left behind
    assert ok(list_entries(api, SCOPE)) == {"memory": None, "entries": []}
    assert api.remember(SCOPE, "first")["memory"] == memory_ref(1)


def test_a_stale_expected_revision_conflicts_even_for_a_duplicate(api: Any) -> None:
    make_memory(api, SCOPE, "one", "two")

    response = api.post(
        "/v1/memory/remember", {"scope_id": SCOPE, "kind": "note", "text": "one", "expected_revision": 1}
    )

    assert_error(response, 409, "revision_conflict")


# --- list -----------------------------------------------------------------------------------------


def test_list_without_memory_is_empty(api: Any) -> None:
    assert ok(list_entries(api, SCOPE)) == {"memory": None, "entries": []}
    assert ok(list_entries(api, SCOPE, include_inactive=True)) == {"memory": None, "entries": []}


def test_list_returns_the_head_entries_in_creation_order_citing_the_head(api: Any) -> None:
    make_memory(api, SCOPE, "zeta", "alpha", "mu")

    body = ok(list_entries(api, SCOPE))

    assert body["memory"] == memory_ref(3)
    assert [e["text"] for e in body["entries"]] == ["zeta", "alpha", "mu"]
    for entry in body["entries"]:
        assert_entry_shape(entry)
        assert entry["citation"]["memory_ref"] == memory_ref(3)
        assert entry["state"] == "active"


def test_a_revised_entry_keeps_its_place_in_the_list(api: Any) -> None:
    first, _, _ = make_memory(api, SCOPE, "first", "second", "third")
    ok(revise(api, SCOPE, with_revision(first["citation"], 3), "first, revised"))

    assert texts_of(api) == ["first, revised", "second", "third"]


def test_list_hides_retired_entries_unless_asked_for_them(api: Any) -> None:
    first, second, _ = make_memory(api, SCOPE, "first", "second", "third")
    ok(retire(api, SCOPE, with_revision(second["citation"], 3)))

    assert texts_of(api) == ["first", "third"]
    assert texts_of(api, include_inactive=False) == ["first", "third"]
    audit = entries_of(api, include_inactive=True)
    assert [(e["text"], e["state"]) for e in audit] == [
        ("first", "active"),
        ("second", "inactive"),
        ("third", "active"),
    ]
    retired = audit[1]
    assert retired["citation"]["entry_version_id"] == second["citation"]["entry_version_id"]
    assert retired["citation"]["memory_ref"] == memory_ref(4)


def test_list_after_every_entry_is_retired_names_the_head_and_no_entries(api: Any) -> None:
    (entry,) = make_memory(api, SCOPE, "only")
    ok(retire(api, SCOPE, entry["citation"]))

    assert ok(list_entries(api, SCOPE)) == {"memory": memory_ref(2), "entries": []}


# --- get ------------------------------------------------------------------------------------------


def test_get_returns_the_exact_entry_it_cites(api: Any) -> None:
    (entry,) = make_memory(api, SCOPE, "exact entry")

    assert ok(get_entry(api, SCOPE, entry["citation"])) == entry


def test_every_old_citation_still_resolves_after_revise_and_retire(api: Any) -> None:
    (v1,) = make_memory(api, SCOPE, "version one")  # revision 1
    api.remember(SCOPE, "bystander")  # revision 2
    v2 = ok(revise(api, SCOPE, with_revision(v1["citation"], 2), "version two", kind="fact"))[
        "entry"
    ]  # revision 3
    retired = ok(retire(api, SCOPE, v2["citation"]))["entry"]  # revision 4
    api.remember(SCOPE, "later")  # revision 5

    # Each citation gives back its exact version, in the state it had in the cited revision.
    got = ok(get_entry(api, SCOPE, v1["citation"]))
    assert (got["text"], got["kind"], got["version"], got["state"]) == ("version one", "note", 1, "active")
    assert got["citation"] == v1["citation"]

    at_two = ok(get_entry(api, SCOPE, with_revision(v1["citation"], 2)))
    assert (at_two["text"], at_two["state"], at_two["citation"]["memory_ref"]) == (
        "version one",
        "active",
        memory_ref(2),
    )

    got = ok(get_entry(api, SCOPE, v2["citation"]))
    assert (got["text"], got["kind"], got["version"], got["state"]) == ("version two", "fact", 2, "active")
    assert got["citation"] == v2["citation"]

    got = ok(get_entry(api, SCOPE, retired["citation"]))
    assert (got["text"], got["version"], got["state"]) == ("version two", 2, "inactive")
    assert got["citation"]["memory_ref"] == memory_ref(4)

    at_head = ok(get_entry(api, SCOPE, with_revision(retired["citation"], 5)))
    assert (at_head["state"], at_head["citation"]["memory_ref"]) == ("inactive", memory_ref(5))


def test_get_of_a_version_outside_the_cited_revision_is_not_found(api: Any) -> None:
    (v1,) = make_memory(api, SCOPE, "version one")
    v2 = ok(revise(api, SCOPE, v1["citation"], "version two"))["entry"]  # revision 2
    later = api.remember(SCOPE, "later")["entry"]  # revision 3

    cases = [
        with_revision(v1["citation"], 2),  # v1 was replaced in revision 2
        with_revision(v1["citation"], 3),
        with_revision(v2["citation"], 1),  # v2 did not exist yet
        with_revision(later["citation"], 2),  # the entry did not exist yet
    ]
    for citation in cases:
        assert_error(get_entry(api, SCOPE, citation), 404, "memory_not_found")


@pytest.mark.parametrize(
    "change",
    [
        pytest.param({"memory_ref": memory_ref(3)}, id="revision_beyond_head"),
        pytest.param({"memory_ref": memory_ref(10**12)}, id="revision_far_beyond_head"),
        pytest.param(
            {"memory_ref": {"family": "experience", "artifact_id": "memory", "revision": 1}},
            id="wrong_family",
        ),
        pytest.param(
            {"memory_ref": {"family": "Memory", "artifact_id": "memory", "revision": 1}}, id="family_case"
        ),
        pytest.param(
            {"memory_ref": {"family": "memory", "artifact_id": "other", "revision": 1}},
            id="wrong_artifact_id",
        ),
        pytest.param({"entry_id": "mem_ent_unknown"}, id="unknown_entry_id"),
        pytest.param({"entry_version_id": "mem_ver_unknown"}, id="unknown_entry_version_id"),
    ],
)
def test_get_of_a_citation_that_does_not_exist_is_not_found(api: Any, change: dict[str, Any]) -> None:
    first, _ = make_memory(api, SCOPE, "first", "second")

    assert_error(get_entry(api, SCOPE, {**first["citation"], **change}), 404, "memory_not_found")


def test_get_with_the_entry_id_of_one_entry_and_the_version_of_another_is_not_found(api: Any) -> None:
    first, second = make_memory(api, SCOPE, "first", "second")
    mixed = {**second["citation"], "entry_id": first["citation"]["entry_id"]}

    assert_error(get_entry(api, SCOPE, mixed), 404, "memory_not_found")


def test_get_in_a_scope_without_memory_is_not_found(api: Any) -> None:
    (entry,) = make_memory(api, "elsewhere", "first")

    assert_error(get_entry(api, SCOPE, entry["citation"]), 404, "memory_not_found")


# --- revise ---------------------------------------------------------------------------------------


def test_revise_creates_a_new_version_of_the_same_entry_in_a_new_revision(api: Any) -> None:
    (entry,) = make_memory(api, SCOPE, "before")

    result = ok(revise(api, SCOPE, entry["citation"], "  after\n", kind="fact", reason=" tidy "))

    assert result["memory"] == memory_ref(2)
    revised = result["entry"]
    assert_entry_shape(revised)
    assert revised["citation"]["memory_ref"] == memory_ref(2)
    assert revised["citation"]["entry_id"] == entry["citation"]["entry_id"]
    assert revised["citation"]["entry_version_id"] != entry["citation"]["entry_version_id"]
    assert revised["citation"]["entry_version_id"].startswith("mem_ver_")
    assert (revised["version"], revised["kind"], revised["text"], revised["state"]) == (
        2,
        "fact",
        "after",
        "active",
    )
    assert entries_of(api) == [revised]
    last = ok(changes(api, SCOPE))["revisions"]
    assert last == [
        {
            "memory_ref": memory_ref(2),
            "changes": [
                {
                    "op": "revise",
                    "entry_id": entry["citation"]["entry_id"],
                    "from_entry_version_id": entry["citation"]["entry_version_id"],
                    "to_entry_version_id": revised["citation"]["entry_version_id"],
                    "reason": "tidy",
                }
            ],
        }
    ]


def test_revising_twice_counts_versions_up(api: Any) -> None:
    (entry,) = make_memory(api, SCOPE, "v1")
    v2 = ok(revise(api, SCOPE, entry["citation"], "v2"))["entry"]
    v3 = ok(revise(api, SCOPE, v2["citation"], "v3"))["entry"]

    assert [v2["version"], v3["version"]] == [2, 3]
    assert v3["citation"]["memory_ref"] == memory_ref(3)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        pytest.param("same words", "note", id="identical"),
        pytest.param("  same words\n", " note ", id="identical_after_strip"),
    ],
)
def test_revise_with_identical_content_is_a_no_op(api: Any, text: str, kind: str) -> None:
    (entry,) = make_memory(api, SCOPE, "same words")
    before = row_counts()

    result = ok(revise(api, SCOPE, entry["citation"], text, kind=kind))

    assert result == {"memory": memory_ref(1), "entry": entry}
    assert row_counts() == before


def test_revise_with_text_equal_after_nfc_is_a_no_op(api: Any) -> None:
    (entry,) = make_memory(api, SCOPE, "caf\u00e9")

    result = ok(revise(api, SCOPE, entry["citation"], "cafe\u0301"))

    assert result == {"memory": memory_ref(1), "entry": entry}


def test_revise_with_only_a_new_kind_is_a_real_revision(api: Any) -> None:
    (entry,) = make_memory(api, SCOPE, "same words", kind="note")

    result = ok(revise(api, SCOPE, entry["citation"], "same words", kind="fact"))

    assert result["memory"] == memory_ref(2)
    assert (result["entry"]["kind"], result["entry"]["version"]) == ("fact", 2)


@pytest.mark.parametrize("cited", [1, 3, 4, 10**9])
def test_revise_rejects_a_citation_of_any_revision_but_the_head(api: Any, cited: int) -> None:
    first, _ = make_memory(api, SCOPE, "first", "second")
    before = row_counts()

    response = revise(api, SCOPE, with_revision(first["citation"], cited), "changed")

    assert_error(response, 409, "revision_conflict")
    assert row_counts() == before


def test_revise_in_a_scope_without_memory_is_not_found(api: Any) -> None:
    (entry,) = make_memory(api, "elsewhere", "first")
    before = row_counts()

    assert_error(revise(api, SCOPE, entry["citation"], "changed"), 404, "memory_not_found")
    assert row_counts() == before


def test_revise_of_a_version_that_is_no_longer_in_the_head_is_not_found(api: Any) -> None:
    (entry,) = make_memory(api, SCOPE, "v1")
    ok(revise(api, SCOPE, entry["citation"], "v2"))
    stale_version_at_head = with_revision(entry["citation"], 2)
    before = row_counts()

    assert_error(revise(api, SCOPE, stale_version_at_head, "v3"), 404, "memory_not_found")
    assert row_counts() == before


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(
            {"memory_ref": {"family": "skill", "artifact_id": "memory", "revision": 1}}, id="wrong_family"
        ),
        pytest.param(
            {"memory_ref": {"family": "memory", "artifact_id": "notes", "revision": 1}},
            id="wrong_artifact_id",
        ),
        pytest.param({"entry_id": "mem_ent_unknown"}, id="unknown_entry_id"),
        pytest.param({"entry_version_id": "mem_ver_unknown"}, id="unknown_entry_version_id"),
    ],
)
@pytest.mark.parametrize("operation", ["revise", "retire"])
def test_revise_and_retire_of_an_unknown_citation_are_not_found(
    api: Any, change: dict[str, Any], operation: str
) -> None:
    (entry,) = make_memory(api, SCOPE, "first")
    citation = {**entry["citation"], **change}
    before = row_counts()

    response = revise(api, SCOPE, citation, "x") if operation == "revise" else retire(api, SCOPE, citation)

    assert_error(response, 404, "memory_not_found")
    assert row_counts() == before


def test_revise_of_a_retired_entry_is_rejected_as_inactive(api: Any) -> None:
    (entry,) = make_memory(api, SCOPE, "first")
    retired = ok(retire(api, SCOPE, entry["citation"]))["entry"]
    before = row_counts()

    assert_error(revise(api, SCOPE, retired["citation"], "back again"), 409, "memory_entry_inactive")
    assert row_counts() == before
    # Even identical content: an inactive entry is never revised.
    assert_error(revise(api, SCOPE, retired["citation"], "first"), 409, "memory_entry_inactive")


def test_revise_and_retire_with_a_mixed_entry_and_version_pair_are_not_found(api: Any) -> None:
    first, second = make_memory(api, SCOPE, "first", "second")
    mixed = {**second["citation"], "entry_id": first["citation"]["entry_id"]}

    assert_error(revise(api, SCOPE, mixed, "changed"), 404, "memory_not_found")
    assert_error(retire(api, SCOPE, mixed), 404, "memory_not_found")
    assert texts_of(api) == ["first", "second"]


# --- retire ---------------------------------------------------------------------------------------


def test_retire_keeps_the_version_and_marks_it_inactive_in_a_new_revision(api: Any) -> None:
    (entry,) = make_memory(api, SCOPE, "retire me")

    result = ok(retire(api, SCOPE, entry["citation"], reason=" obsolete "))

    assert result["memory"] == memory_ref(2)
    retired = result["entry"]
    assert_entry_shape(retired)
    assert retired["citation"] == with_revision(entry["citation"], 2)
    assert (retired["version"], retired["text"], retired["state"]) == (1, "retire me", "inactive")
    assert ok(changes(api, SCOPE))["revisions"] == [
        {
            "memory_ref": memory_ref(2),
            "changes": [
                {
                    "op": "deactivate",
                    "entry_id": entry["citation"]["entry_id"],
                    "from_entry_version_id": entry["citation"]["entry_version_id"],
                    "to_entry_version_id": None,
                    "reason": "obsolete",
                }
            ],
        }
    ]


def test_retiring_a_retired_entry_is_a_no_op(api: Any) -> None:
    (entry,) = make_memory(api, SCOPE, "retire me")
    retired = ok(retire(api, SCOPE, entry["citation"]))["entry"]
    before = row_counts()

    again = ok(retire(api, SCOPE, retired["citation"]))

    assert again == {"memory": memory_ref(2), "entry": retired}
    assert row_counts() == before


@pytest.mark.parametrize("cited", [1, 3])
def test_retire_rejects_a_citation_of_any_revision_but_the_head(api: Any, cited: int) -> None:
    first, _ = make_memory(api, SCOPE, "first", "second")
    before = row_counts()

    assert_error(retire(api, SCOPE, with_revision(first["citation"], cited)), 409, "revision_conflict")
    assert row_counts() == before


def test_retire_in_a_scope_without_memory_is_not_found(api: Any) -> None:
    (entry,) = make_memory(api, "elsewhere", "first")

    assert_error(retire(api, SCOPE, entry["citation"]), 404, "memory_not_found")


def test_retire_of_a_version_that_is_no_longer_in_the_head_is_not_found(api: Any) -> None:
    (entry,) = make_memory(api, SCOPE, "v1")
    ok(revise(api, SCOPE, entry["citation"], "v2"))

    assert_error(retire(api, SCOPE, with_revision(entry["citation"], 2)), 404, "memory_not_found")
    assert texts_of(api) == ["v2"]


def test_the_conflict_and_not_found_bodies_use_the_error_envelope(api: Any) -> None:
    (entry,) = make_memory(api, SCOPE, "first")
    ok(revise(api, SCOPE, entry["citation"], "second"))

    for response in (
        revise(api, SCOPE, entry["citation"], "third"),
        retire(api, SCOPE, entry["citation"]),
    ):
        details = assert_error(response, 409, "revision_conflict")
        assert b"first" not in response.content and b"second" not in response.content
        assert details is None or isinstance(details, dict)


# --- changes --------------------------------------------------------------------------------------


def _history(api: Any) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """Revision 1 add, 2 add, 3 revise (first), 4 deactivate (second)."""
    first, second = make_memory(api, SCOPE, "first", "second")
    revised = ok(revise(api, SCOPE, with_revision(first["citation"], 2), "first, revised"))["entry"]
    ok(retire(api, SCOPE, with_revision(second["citation"], 3), reason="gone"))
    return first, second, revised


def test_changes_without_memory_are_empty(api: Any) -> None:
    assert ok(changes(api, SCOPE)) == {"memory": None, "revisions": []}
    assert ok(changes(api, SCOPE, since_revision=0)) == {"memory": None, "revisions": []}
    assert ok(changes(api, SCOPE, since_revision=None)) == {"memory": None, "revisions": []}


def test_changes_since_zero_is_the_full_history_in_order(api: Any) -> None:
    first, second, revised = _history(api)

    body = ok(changes(api, SCOPE, since_revision=0))

    assert body["memory"] == memory_ref(4)
    assert [r["memory_ref"] for r in body["revisions"]] == [memory_ref(n) for n in (1, 2, 3, 4)]
    flat = [r["changes"] for r in body["revisions"]]
    assert all(len(c) == 1 and set(c[0]) == CHANGE_KEYS for c in flat)
    assert [c[0]["op"] for c in flat] == ["add", "add", "revise", "deactivate"]
    add_first = flat[0][0]
    assert (add_first["entry_id"], add_first["from_entry_version_id"], add_first["to_entry_version_id"]) == (
        first["citation"]["entry_id"],
        None,
        first["citation"]["entry_version_id"],
    )
    assert flat[1][0]["to_entry_version_id"] == second["citation"]["entry_version_id"]
    assert flat[2][0]["from_entry_version_id"] == first["citation"]["entry_version_id"]
    assert flat[2][0]["to_entry_version_id"] == revised["citation"]["entry_version_id"]
    assert flat[3][0]["from_entry_version_id"] == second["citation"]["entry_version_id"]
    assert flat[3][0]["to_entry_version_id"] is None
    assert flat[3][0]["reason"] == "gone"


@pytest.mark.parametrize("since", [None, "omitted"])
def test_changes_without_a_lower_bound_are_the_head_revisions_own(api: Any, since: Any) -> None:
    _history(api)

    body = ok(changes(api, SCOPE) if since == "omitted" else changes(api, SCOPE, since_revision=since))

    assert body["memory"] == memory_ref(4)
    assert [r["memory_ref"] for r in body["revisions"]] == [memory_ref(4)]
    assert body["revisions"][0]["changes"][0]["op"] == "deactivate"


@pytest.mark.parametrize(("since", "expected"), [(1, [2, 3, 4]), (2, [3, 4]), (3, [4]), (4, [])])
def test_changes_since_a_revision_exclude_it(api: Any, since: int, expected: list[int]) -> None:
    _history(api)

    body = ok(changes(api, SCOPE, since_revision=since))

    assert body["memory"] == memory_ref(4)
    assert [r["memory_ref"]["revision"] for r in body["revisions"]] == expected


@pytest.mark.parametrize("since", [5, 6, 10**15])
def test_changes_since_a_revision_beyond_the_head_are_rejected(api: Any, since: int) -> None:
    _history(api)

    response = changes(api, SCOPE, since_revision=since)

    details = assert_error(response, 422, "invalid_request")
    assert details is not None and details["errors"][0]["loc"] == ["body", "since_revision"]


def test_no_op_writes_add_no_revisions(api: Any) -> None:
    (entry,) = make_memory(api, SCOPE, "stable")
    api.remember(SCOPE, "stable")
    ok(revise(api, SCOPE, entry["citation"], "stable"))
    retired = ok(retire(api, SCOPE, entry["citation"]))["entry"]
    ok(retire(api, SCOPE, retired["citation"]))

    assert [r["memory_ref"]["revision"] for r in change_lists(api)] == [1, 2]
    assert ok(changes(api, SCOPE, since_revision=2))["revisions"] == []
