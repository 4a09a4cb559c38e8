"""capture_content_source: 202 with a per-scope position, idempotent retries, conflicts."""

from __future__ import annotations

from typing import Any

import pytest

from powercontext.core.models import Source
from tests.api.helpers import assert_error, assert_invalid, capture, list_entries, ok, row_counts

SCOPE = "sources"


def accepted(response: Any) -> dict[str, Any]:
    return ok(response, 202)


def test_a_capture_is_accepted_with_the_source_reference_and_position(api: Any) -> None:
    body = accepted(capture(api, SCOPE, "session-1/turn-1", "the user asked about deploys"))

    assert body == {
        "status": "accepted",
        "source": {"name": "content", "source_id": "session-1/turn-1"},
        "position": 1,
    }


def test_positions_count_up_per_scope(api: Any) -> None:
    positions = [accepted(capture(api, SCOPE, f"src-{i}", f"content {i}"))["position"] for i in range(1, 6)]

    assert positions == [1, 2, 3, 4, 5]


def test_a_retry_with_the_same_content_and_metadata_returns_the_same_position(api: Any) -> None:
    first = accepted(capture(api, SCOPE, "a", "alpha", metadata={"turn": 1}))
    accepted(capture(api, SCOPE, "b", "beta"))
    before = row_counts()

    again = accepted(capture(api, SCOPE, "a", "alpha", metadata={"turn": 1}))

    assert again == first
    assert row_counts() == before


def test_metadata_key_order_does_not_change_the_identity(api: Any) -> None:
    first = accepted(capture(api, SCOPE, "a", "alpha", metadata={"x": 1, "y": {"p": True, "q": None}}))

    again = accepted(capture(api, SCOPE, "a", "alpha", metadata={"y": {"q": None, "p": True}, "x": 1}))

    assert again["position"] == first["position"]


def test_omitted_metadata_and_null_metadata_are_the_same(api: Any) -> None:
    first = accepted(capture(api, SCOPE, "a", "alpha"))

    assert accepted(capture(api, SCOPE, "a", "alpha", metadata=None))["position"] == first["position"]


@pytest.mark.parametrize(
    "retry",
    [
        pytest.param({"content": "alpha!"}, id="other_content"),
        pytest.param({"content": "alpha "}, id="content_with_trailing_space"),
        pytest.param({"content": "Alpha"}, id="content_case"),
        pytest.param({"metadata": {"turn": 2}}, id="other_metadata_value"),
        pytest.param({"metadata": {"turn": 1, "extra": True}}, id="more_metadata"),
        pytest.param({"metadata": None}, id="metadata_dropped"),
        pytest.param({"metadata": {"turn": "1"}}, id="metadata_value_type"),
    ],
)
def test_the_same_id_with_different_content_or_metadata_conflicts(api: Any, retry: dict[str, Any]) -> None:
    accepted(capture(api, SCOPE, "a", "alpha", metadata={"turn": 1}))
    before = row_counts()

    body = {"content": "alpha", "metadata": {"turn": 1}, **retry}
    response = capture(api, SCOPE, "a", body.pop("content"), **body)

    assert_error(response, 409, "source_conflict")
    assert row_counts() == before
    stored = Source.objects.get(scope_id=SCOPE, source_id="a")
    assert (stored.content, stored.metadata) == ("alpha", {"turn": 1})


def test_conflicts_and_retries_do_not_use_up_positions(api: Any) -> None:
    accepted(capture(api, SCOPE, "a", "alpha"))
    accepted(capture(api, SCOPE, "a", "alpha"))
    assert_error(capture(api, SCOPE, "a", "other"), 409, "source_conflict")
    assert_invalid(capture(api, SCOPE, "b", "   "))

    assert accepted(capture(api, SCOPE, "b", "beta"))["position"] == 2


def test_source_ids_are_exact_strings(api: Any) -> None:
    positions = [
        accepted(capture(api, SCOPE, source_id, "same content"))["position"]
        for source_id in ("id", "ID", "id ", " id", "i\u0301d")
    ]

    assert positions == [1, 2, 3, 4, 5]


def test_the_content_and_metadata_are_stored_verbatim(api: Any) -> None:
    content = "  leading and trailing space\n\tcafe\u0301 \U0001f680\n"
    metadata = {"nested": {"list": [1, 2.5, None, False, "\u4e2d"]}, "big": 10**20}

    response = capture(api, SCOPE, "verbatim", content, metadata=metadata)

    assert accepted(response)["source"]["source_id"] == "verbatim"
    stored = Source.objects.get(scope_id=SCOPE, source_id="verbatim")
    assert stored.content == content
    assert stored.metadata == metadata
    assert stored.position == 1


def test_a_capture_derives_no_memory(api: Any) -> None:
    accepted(capture(api, SCOPE, "a", "remember that deploys happen on friday"))

    assert ok(list_entries(api, SCOPE)) == {"memory": None, "entries": []}
    assert api.search(SCOPE, "deploys") == {"memory": None, "mode": None, "hits": []}


@pytest.mark.parametrize(
    ("field", "value"),
    [
        pytest.param("source_id", " ", id="space_source_id"),
        pytest.param("source_id", "\t\n", id="whitespace_source_id"),
        pytest.param("content", " ", id="space_content"),
        pytest.param("content", "\n\n\t  ", id="whitespace_content"),
        pytest.param("content", "", id="empty_content"),
        pytest.param("source_id", "", id="empty_source_id"),
    ],
)
def test_blank_source_id_or_content_is_rejected(api: Any, field: str, value: str) -> None:
    body = {"source_id": "a", "content": "alpha", field: value}
    before = row_counts()

    response = capture(api, SCOPE, body["source_id"], body["content"])

    errors = assert_invalid(response)
    assert ["body", field] in [e["loc"] for e in errors]
    assert row_counts() == before


def test_a_capture_at_the_content_limit_is_accepted_and_one_more_character_is_not(api: Any) -> None:
    accepted(capture(api, SCOPE, "max", "x" * 200_000))

    assert_invalid(capture(api, SCOPE, "over", "x" * 200_001))
    assert Source.objects.filter(scope_id=SCOPE).count() == 1


def test_a_retry_after_a_conflict_still_answers_the_original(api: Any) -> None:
    first = accepted(capture(api, SCOPE, "a", "alpha"))
    assert_error(capture(api, SCOPE, "a", "beta"), 409, "source_conflict")

    assert accepted(capture(api, SCOPE, "a", "alpha")) == first
