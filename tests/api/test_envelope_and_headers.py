"""The request id on every response, the one error envelope, health, capabilities and bearer tokens."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import OperationalError
from django.utils import timezone

from powercontext.core.models import ApiToken
from powercontext.core.tokens import token_digest
from powercontext.memory import selectors as memory_selectors
from tests.api.helpers import (
    assert_error,
    assert_invalid,
    assert_request_id,
    capture,
    get_entry,
    make_memory,
    memory_ref,
    ok,
    revise,
    row_counts,
)

SCOPE = "envelope"
TOKEN = "pct_valid-test-token-0123456789"

POST_OPERATIONS = [
    ("/v1/sources/content", {"scope_id": SCOPE, "source_id": "s", "content": "c"}, 202),
    ("/v1/memory/remember", {"scope_id": SCOPE, "kind": "note", "text": "t"}, 200),
    ("/v1/memory/search", {"scope_id": SCOPE, "query": "t"}, 200),
    ("/v1/memory/entries/list", {"scope_id": SCOPE}, 200),
    ("/v1/memory/changes", {"scope_id": SCOPE}, 200),
]
CITED_PATHS = ["/v1/memory/entries/get", "/v1/memory/entries/revise", "/v1/memory/entries/retire"]
ALL_POST_PATHS = [path for path, _, _ in POST_OPERATIONS] + CITED_PATHS
GET_PATHS = ["/health/live", "/health/ready", "/v1/capabilities"]


def make_token(*, active: bool = True, revoked: bool = False, token: str = TOKEN) -> str:
    user = get_user_model().objects.create_user(
        username=f"agent-{token[-6:]}-{active}-{revoked}", is_active=active
    )
    ApiToken.objects.create(
        user=user,
        digest=token_digest(token),
        prefix=token[:8],
        revoked_at=timezone.now() if revoked else None,
    )
    return token


def post_with(api: Any, path: str, body: Any, authorization: str | None) -> Any:
    headers = {"HTTP_AUTHORIZATION": authorization} if authorization is not None else {}
    return api.client.post(path, data=body, content_type="application/json", **headers)


def get_with(api: Any, path: str, authorization: str | None) -> Any:
    headers = {"HTTP_AUTHORIZATION": authorization} if authorization is not None else {}
    return api.client.get(path, **headers)


def assert_unauthorized(response: Any) -> None:
    assert_error(response, 401, "unauthorized")
    assert response["WWW-Authenticate"] == "Bearer"


# --- request id -----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", GET_PATHS)
def test_every_get_operation_carries_a_request_id(api: Any, path: str) -> None:
    response = api.get(path)

    assert response.status_code == 200
    assert_request_id(response)


@pytest.mark.parametrize(("path", "body", "status"), POST_OPERATIONS)
def test_every_post_success_carries_a_request_id(
    api: Any, path: str, body: dict[str, Any], status: int
) -> None:
    ok(api.post(path, body), status)


def test_cited_successes_carry_a_request_id(api: Any) -> None:
    (entry,) = make_memory(api, SCOPE, "cited")

    ok(get_entry(api, SCOPE, entry["citation"]))
    revised = ok(revise(api, SCOPE, entry["citation"], "cited again"))["entry"]
    ok(api.post("/v1/memory/entries/retire", {"scope_id": SCOPE, "citation": revised["citation"]}))


def test_request_ids_differ_between_requests(api: Any) -> None:
    ids = {assert_request_id(api.get("/health/live")) for _ in range(20)}

    assert len(ids) == 20


def test_a_request_id_sent_by_the_client_is_not_echoed(api: Any) -> None:
    response = api.client.get("/health/live", HTTP_X_POWERCONTEXT_REQUEST_ID="client-chosen")

    assert assert_request_id(response) != "client-chosen"


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", "/nope"),
        ("post", "/v1/nope"),
        ("get", "/v1/memory/search/"),
        ("post", "/v1/memory/remember/"),
        ("get", "/v1/"),
        ("get", "/"),
        ("post", "/v1/memory"),
        ("post", "/v1/memory/forget"),
        ("post", "/V1/memory/search"),
    ],
)
def test_an_unknown_path_is_a_json_404_envelope(api: Any, method: str, path: str) -> None:
    response = getattr(api.client, method)(path)

    assert_error(response, 404, "not_found")


@pytest.mark.parametrize("path", ALL_POST_PATHS)
@pytest.mark.parametrize("method", ["get", "put", "patch", "delete"])
def test_a_wrong_method_on_a_post_operation_is_a_405_envelope(api: Any, path: str, method: str) -> None:
    before = row_counts()

    response = getattr(api.client, method)(path)

    assert_error(response, 405, "method_not_allowed")
    assert row_counts() == before


@pytest.mark.parametrize("path", GET_PATHS)
@pytest.mark.parametrize("method", ["post", "put", "delete"])
def test_a_wrong_method_on_a_get_operation_is_a_405_envelope(api: Any, path: str, method: str) -> None:
    response = getattr(api.client, method)(path, data="{}", content_type="application/json")

    assert_error(response, 405, "method_not_allowed")


def test_not_found_and_conflict_answers_carry_a_request_id_and_the_envelope(api: Any) -> None:
    (entry,) = make_memory(api, SCOPE, "first")
    ok(revise(api, SCOPE, entry["citation"], "second"))

    assert_error(get_entry(api, "other", entry["citation"]), 404, "memory_not_found")
    assert_error(revise(api, SCOPE, entry["citation"], "third"), 409, "revision_conflict")
    ok(capture(api, SCOPE, "src", "one"), 202)
    assert_error(capture(api, SCOPE, "src", "two"), 409, "source_conflict")


def test_an_unexpected_failure_is_a_500_envelope_without_internals(
    api: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def explode(**kwargs: Any) -> Any:
        raise RuntimeError("secret internal detail /etc/passwd")

    monkeypatch.setattr(memory_selectors, "memory_list_entries", explode)

    response = api.post("/v1/memory/entries/list", {"scope_id": SCOPE})

    assert_error(response, 500, "internal_error")
    assert b"secret internal detail" not in response.content
    assert b"RuntimeError" not in response.content


def test_an_unreachable_database_is_a_503_envelope(api: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    def unreachable(**kwargs: Any) -> Any:
        raise OperationalError("could not connect to server at 10.0.0.1")

    monkeypatch.setattr(memory_selectors, "memory_head_revision", unreachable)

    response = api.post("/v1/memory/changes", {"scope_id": SCOPE})

    assert_error(response, 503, "runtime_not_ready")
    assert b"10.0.0.1" not in response.content


# --- envelope shape for 422 -----------------------------------------------------------------------


def test_a_422_lists_each_error_with_loc_msg_and_type(api: Any) -> None:
    response = api.post("/v1/memory/remember", {"scope_id": SCOPE, "kind": 5, "text": "t", "nope": 1})

    errors = assert_invalid(response)
    assert {tuple(e["loc"]) for e in errors} == {("body", "kind"), ("body", "nope")}


def test_a_422_for_a_nested_field_locates_it_by_path(api: Any) -> None:
    citation = {
        "memory_ref": {"family": "memory", "artifact_id": "memory", "revision": 0},
        "entry_id": "e",
        "entry_version_id": "v",
    }

    errors = assert_invalid(get_entry(api, SCOPE, citation))

    assert [e["loc"] for e in errors] == [["body", "citation", "memory_ref", "revision"]]


def test_a_422_for_an_unparsable_body_locates_the_body(api: Any) -> None:
    errors = assert_invalid(api.post("/v1/memory/search", raw="{not json"))

    assert [e["loc"] for e in errors] == [["body"]]


def test_a_capability_error_has_the_envelope_and_its_capability(api: Any) -> None:
    details = assert_error(
        api.post("/v1/memory/search", {"scope_id": SCOPE, "query": "x", "mode": "vector"}),
        422,
        "capability_not_supported",
    )

    assert details is not None and "capability" in details


# --- health and capabilities ----------------------------------------------------------------------


def test_liveness_is_ok(api: Any) -> None:
    assert ok(api.get("/health/live")) == {"status": "ok"}


def test_readiness_reports_ready_with_string_checks(api: Any) -> None:
    body = ok(api.get("/health/ready"))

    assert set(body) == {"status", "checks"}
    assert body["status"] == "ready"
    assert isinstance(body["checks"], dict) and body["checks"]
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in body["checks"].items())


def test_capabilities_describe_exactly_this_server(api: Any) -> None:
    body = ok(api.get("/v1/capabilities"))

    families = body.pop("artifact_families")
    assert body == {
        "source_types": ["content"],
        # The default generator (rules) extracts Memory and proposes Experience candidates.
        "memory_extraction": True,
        "experience_generation": True,
        "managed_skill_generation": False,
        "external_skill_registry": False,
        "handoff_generation": False,
        "search_modes": ["auto", "fts"],
        "context_versions": ["powercontext.prepared-context.v1"],
    }
    assert "memory" in families
    assert all(isinstance(f, str) for f in families)
    assert "handoff" not in families  # handoff_generation is false and no handoff operation exists


def test_capabilities_say_when_the_pipeline_is_off(api: Any, settings: Any) -> None:
    settings.POWERCONTEXT_GENERATOR = "off"

    body = ok(api.get("/v1/capabilities"))

    assert body["memory_extraction"] is False and body["experience_generation"] is False


def test_responses_are_json(api: Any) -> None:
    for response in (
        api.get("/health/live"),
        api.get("/v1/capabilities"),
        api.post("/v1/memory/search", {"scope_id": SCOPE, "query": "x"}),
    ):
        assert response["Content-Type"].startswith("application/json")


# --- bearer tokens --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "authorization",
    [
        pytest.param("Bearer nope", id="unknown_token"),
        pytest.param("Bearer ", id="empty_token"),
        pytest.param("Bearer", id="scheme_only"),
        pytest.param("Basic dXNlcjpwYXNz", id="basic_scheme"),
        pytest.param(TOKEN, id="no_scheme"),
        pytest.param(f"Token {TOKEN}", id="other_scheme"),
    ],
)
def test_an_invalid_authorization_is_401_even_when_tokens_are_optional(api: Any, authorization: str) -> None:
    make_token()
    before = row_counts()

    assert_unauthorized(get_with(api, "/v1/capabilities", authorization))
    for path, body, _ in POST_OPERATIONS:
        assert_unauthorized(post_with(api, path, body, authorization))
    assert row_counts() == before


def test_a_revoked_token_or_an_inactive_user_is_401(api: Any) -> None:
    revoked = make_token(token="pct_revoked-token-000000000000", revoked=True)
    inactive = make_token(token="pct_inactive-user-token-0000000", active=False)

    for token in (revoked, inactive):
        assert_unauthorized(get_with(api, "/v1/capabilities", f"Bearer {token}"))
        assert_unauthorized(
            post_with(api, "/v1/memory/search", {"scope_id": SCOPE, "query": "x"}, f"Bearer {token}")
        )


def test_no_token_is_fine_when_tokens_are_optional(api: Any) -> None:
    ok(get_with(api, "/v1/capabilities", None))
    ok(post_with(api, "/v1/memory/search", {"scope_id": SCOPE, "query": "x"}, None))


@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER"])
def test_a_valid_token_is_accepted(api: Any, scheme: str) -> None:
    make_token()

    ok(get_with(api, "/v1/capabilities", f"{scheme} {TOKEN}"))
    ok(post_with(api, "/v1/memory/search", {"scope_id": SCOPE, "query": "x"}, f"{scheme} {TOKEN}"))


def test_a_required_token_that_is_missing_is_401(api: Any, settings: Any) -> None:
    settings.POWERCONTEXT_REQUIRE_TOKEN = True
    before = row_counts()

    assert_unauthorized(get_with(api, "/v1/capabilities", None))
    for path in ALL_POST_PATHS:
        assert_unauthorized(post_with(api, path, {"scope_id": SCOPE}, None))
    assert row_counts() == before


def test_a_required_token_that_is_present_and_valid_is_accepted(api: Any, settings: Any) -> None:
    settings.POWERCONTEXT_REQUIRE_TOKEN = True
    make_token()
    auth = f"Bearer {TOKEN}"

    ok(get_with(api, "/v1/capabilities", auth))
    remembered = ok(
        post_with(api, "/v1/memory/remember", {"scope_id": SCOPE, "kind": "note", "text": "with token"}, auth)
    )
    assert remembered["memory"] == memory_ref(1)
    found = ok(post_with(api, "/v1/memory/search", {"scope_id": SCOPE, "query": "token"}, auth))
    assert [h["text"] for h in found["hits"]] == ["with token"]
    ok(
        post_with(api, "/v1/sources/content", {"scope_id": SCOPE, "source_id": "s", "content": "c"}, auth),
        202,
    )


def test_a_required_token_that_is_wrong_is_401(api: Any, settings: Any) -> None:
    settings.POWERCONTEXT_REQUIRE_TOKEN = True
    make_token()

    assert_unauthorized(get_with(api, "/v1/capabilities", "Bearer nope"))


def test_authentication_is_checked_before_the_body(api: Any) -> None:
    assert_unauthorized(post_with(api, "/v1/memory/search", "{not json", "Bearer nope"))


def test_a_401_writes_nothing(api: Any, settings: Any) -> None:
    settings.POWERCONTEXT_REQUIRE_TOKEN = True
    before = row_counts()

    assert_unauthorized(
        post_with(api, "/v1/memory/remember", {"scope_id": SCOPE, "kind": "n", "text": "t"}, None)
    )
    assert_unauthorized(
        post_with(api, "/v1/sources/content", {"scope_id": SCOPE, "source_id": "s", "content": "c"}, None)
    )
    assert row_counts() == before


@pytest.mark.parametrize("path", ["/health/live", "/health/ready"])
@pytest.mark.parametrize("require", [False, True])
def test_health_endpoints_are_public_whatever_the_token(
    api: Any, settings: Any, path: str, require: bool
) -> None:
    settings.POWERCONTEXT_REQUIRE_TOKEN = require

    for authorization in (None, "Bearer nope", "Basic x"):
        ok(get_with(api, path, authorization))
