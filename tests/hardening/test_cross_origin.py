"""Cross-origin writes: /v1 accepts only JSON bodies and refuses foreign browser origins.

A plain HTML form on any site can POST text/plain, urlencoded or multipart bodies to
127.0.0.1 without a CORS preflight; none of those may reach an operation.
"""

from __future__ import annotations

import json

import pytest
from django.test import Client, override_settings

from tests.api.helpers import assert_error, row_counts

REMEMBER = "/v1/memory/remember"
BODY = json.dumps({"scope_id": "s", "kind": "note", "text": "planted by a web page"})


def _post(client: Client, content_type: str | None, **headers: str):
    if content_type is None:
        # The test client always sets a type; build the request without one.
        return client.generic("POST", REMEMBER, BODY.encode(), CONTENT_TYPE="", **headers)
    return client.post(REMEMBER, data=BODY, content_type=content_type, **headers)


@pytest.mark.parametrize(
    "content_type",
    [
        "text/plain",
        "text/plain;charset=UTF-8",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=xyz",
        "application/jsonx",
        "application/json-patch+json",
        None,
    ],
)
def test_it_refuses_non_json_bodies_and_writes_nothing(db: None, content_type: str | None) -> None:
    before = row_counts()
    assert_error(_post(Client(), content_type), 415, "unsupported_media_type")
    assert row_counts() == before


@pytest.mark.parametrize(
    "content_type", ["application/json", "application/json; charset=utf-8", "Application/JSON"]
)
def test_it_accepts_json_with_parameters_in_any_case(db: None, content_type: str) -> None:
    response = _post(Client(), content_type)
    assert response.status_code == 200, response.content


def test_a_foreign_origin_is_refused_and_writes_nothing(db: None) -> None:
    before = row_counts()
    response = _post(Client(), "application/json", HTTP_ORIGIN="https://evil.example")
    assert_error(response, 403, "origin_forbidden")
    assert row_counts() == before


def test_the_null_origin_is_refused(db: None) -> None:
    assert_error(_post(Client(), "application/json", HTTP_ORIGIN="null"), 403, "origin_forbidden")


@override_settings(POWERCONTEXT_ALLOWED_ORIGINS=["http://localhost:3000"])
def test_an_allowed_origin_is_served(db: None) -> None:
    response = _post(Client(), "application/json", HTTP_ORIGIN="http://LOCALHOST:3000")
    assert response.status_code == 200, response.content
    assert_error(
        _post(Client(), "application/json", HTTP_ORIGIN="http://localhost:3001"), 403, "origin_forbidden"
    )


def test_a_cross_site_fetch_is_refused_and_writes_nothing(db: None) -> None:
    before = row_counts()
    response = _post(Client(), "application/json", HTTP_SEC_FETCH_SITE="cross-site")
    assert_error(response, 403, "origin_forbidden")
    assert row_counts() == before


@pytest.mark.parametrize("value", ["same-origin", "none"])
def test_same_origin_and_direct_fetches_are_served(db: None, value: str) -> None:
    response = _post(Client(), "application/json", HTTP_SEC_FETCH_SITE=value)
    assert response.status_code == 200, response.content


def test_reads_are_guarded_against_foreign_origins_too(db: None) -> None:
    response = Client().get("/v1/capabilities", HTTP_ORIGIN="https://evil.example")
    assert_error(response, 403, "origin_forbidden")


@pytest.mark.parametrize("path", ["/health/live", "/health/ready"])
def test_health_stays_open(db: None, path: str) -> None:
    response = Client().get(path, HTTP_ORIGIN="https://evil.example", HTTP_SEC_FETCH_SITE="cross-site")
    assert response.status_code == 200


def test_an_empty_body_without_a_type_is_an_invalid_request_not_a_write(db: None) -> None:
    before = row_counts()
    response = Client().generic("POST", REMEMBER, b"", CONTENT_TYPE="")
    assert_error(response, 422, "invalid_request")
    assert row_counts() == before
