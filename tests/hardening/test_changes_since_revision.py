"""list_memory_changes answers a nonexistent positive since_revision the same way for every scope
(the contract: "Positive nonexistent revisions are errors")."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.helpers import assert_error

CHANGES = "/v1/memory/changes"


def _changes(api: Any, scope_id: str, since: int | None) -> Any:
    return api.post(CHANGES, {"scope_id": scope_id, "since_revision": since})


@pytest.mark.parametrize("scope_has_memory", [False, True])
@pytest.mark.parametrize("beyond", [1, 2, 10**15])
def test_a_revision_beyond_the_head_is_422_with_or_without_memory(
    api: Any, scope_has_memory: bool, beyond: int
) -> None:
    head = 0
    if scope_has_memory:
        api.remember("s", "one fact")
        head = 1
    details = assert_error(_changes(api, "s", head + beyond), 422, "invalid_request")
    assert details is not None
    assert details["errors"][0]["loc"] == ["body", "since_revision"]
    assert details["errors"][0]["type"] == "revision_unknown"


@pytest.mark.parametrize("since", [0, None])
def test_zero_and_null_are_fine_without_memory(api: Any, since: int | None) -> None:
    response = _changes(api, "s", since)
    assert response.status_code == 200
    assert response.json() == {"memory": None, "revisions": []}
