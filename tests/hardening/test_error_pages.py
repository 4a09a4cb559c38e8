"""Error answers: HTML pages in the Inbox's look on browser routes, the JSON envelope everywhere
else (/v1, /health and unknown paths), for 400, 403, 404 and 500; ``Allow`` headers that match."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.middleware.csrf import CsrfViewMiddleware
from django.test import Client
from django.urls import URLPattern, get_resolver

from powercontext.core.models import MemoryEntry
from tests.api.helpers import assert_error, assert_request_id

SECRET_DETAIL = "secret internal detail /etc/passwd"
BROWSER_404_PATHS = ["/review/nope/", "/review/candidates/abc/", "/accounts/nope/", "/admin/nope/"]
JSON_404_PATHS = ["/v1/nope", "/health/nope", "/nope", "/", "/static/nope.css"]
BROWSER_PATHS = ["/review/", "/accounts/login/", "/admin/login/"]
JSON_PATHS = ["/v1/capabilities", "/health/live", "/v1/memory/search"]


def assert_html_page(response: Any, status: int, heading: str) -> str:
    assert response.status_code == status, (response.status_code, response.content[:300])
    assert response["Content-Type"].startswith("text/html")
    assert_request_id(response)
    html = response.content.decode()
    assert html.startswith("<!doctype html>")
    assert 'class="topbar"' in html and "PowerContext" in html  # templates/base.html
    assert f"<h1>{heading}</h1>" in html
    assert '"error"' not in html and "Traceback" not in html and SECRET_DETAIL not in html
    return html


@pytest.fixture
def staff(db: None) -> User:
    return User.objects.create_user(username="staff-without-permissions", is_staff=True)


@pytest.fixture
def failing_middleware(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every request fails outside any view, where only handler500 can answer."""

    def explode(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError(SECRET_DETAIL)

    monkeypatch.setattr(CsrfViewMiddleware, "process_view", explode)


def _database_down(*args: Any, **kwargs: Any) -> None:
    """A ``connection.execute_wrapper``: every query fails as if the database were gone."""
    raise RuntimeError(f"could not connect: {SECRET_DETAIL}")


# --- 404 ------------------------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("path", BROWSER_404_PATHS)
def test_an_unknown_browser_route_is_an_html_404_page(staff: User, path: str) -> None:
    client = Client()
    client.force_login(staff)  # the admin sends anonymous visitors to its login page instead

    html = assert_html_page(client.get(path), 404, "Page not found")

    assert "staff-without-permissions" in html  # the usual top bar, for the logged-in user


@pytest.mark.django_db
def test_an_anonymous_unknown_browser_route_is_an_html_404_page() -> None:
    assert_html_page(Client().get("/accounts/nope/"), 404, "Page not found")


@pytest.mark.django_db
@pytest.mark.parametrize("path", JSON_404_PATHS)
@pytest.mark.parametrize("method", ["get", "post"])
def test_an_unknown_api_path_is_a_json_404(path: str, method: str) -> None:
    assert_error(getattr(Client(), method)(path), 404, "not_found")


# --- 403 ------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_an_admin_page_without_permission_is_an_html_403_page(staff: User) -> None:
    client = Client()
    client.force_login(staff)

    assert_html_page(client.get("/admin/powercontext/memoryentry/"), 403, "Not allowed")


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/accounts/login/", "/admin/login/"])
def test_a_csrf_failure_on_a_login_form_is_an_html_403_page(path: str) -> None:
    client = Client(enforce_csrf_checks=True)

    html = assert_html_page(client.post(path, {"username": "u", "password": "p"}), 403, "Not allowed")

    assert "reload" in html.lower()


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/v1/capabilities", "/health/live"])
def test_a_permission_denied_outside_drf_is_a_json_403(monkeypatch: pytest.MonkeyPatch, path: str) -> None:
    from django.core.exceptions import PermissionDenied

    def deny(*args: Any, **kwargs: Any) -> None:
        raise PermissionDenied(SECRET_DETAIL)

    monkeypatch.setattr(CsrfViewMiddleware, "process_view", deny)

    response = Client().get(path)

    assert_error(response, 403, "forbidden")
    assert SECRET_DETAIL.encode() not in response.content


# --- 400: a bad Host header -----------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/v1/capabilities", "/health/live", "/v1/memory/search", "/nope"])
def test_a_bad_host_on_an_api_path_is_a_json_400(path: str) -> None:
    response = Client().get(path, HTTP_HOST="attacker.example")

    assert_error(response, 400, "bad_request")
    assert b"attacker.example" not in response.content


@pytest.mark.django_db
@pytest.mark.parametrize("path", BROWSER_PATHS)
def test_a_bad_host_on_a_browser_route_is_an_html_400_page(path: str) -> None:
    response = Client().get(path, HTTP_HOST="attacker.example")

    html = assert_html_page(response, 400, "Bad request")
    assert "attacker.example" not in html


# --- 500 ------------------------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.usefixtures("failing_middleware")
@pytest.mark.parametrize("path", BROWSER_PATHS)
def test_an_unexpected_failure_on_a_browser_route_is_an_html_500_page(path: str) -> None:
    assert_html_page(Client(raise_request_exception=False).get(path), 500, "Something went wrong")


@pytest.mark.django_db
@pytest.mark.usefixtures("failing_middleware")
@pytest.mark.parametrize("path", JSON_PATHS)
def test_an_unexpected_failure_outside_drf_is_a_json_500(path: str) -> None:
    response = Client(raise_request_exception=False).get(path)

    assert_error(response, 500, "internal_error")
    assert SECRET_DETAIL.encode() not in response.content


@pytest.mark.django_db
def test_the_500_page_renders_without_the_database(staff: User) -> None:
    client = Client(raise_request_exception=False)
    client.force_login(staff)

    with connection.execute_wrapper(_database_down):
        response = client.get("/review/")

    assert_html_page(response, 500, "Something went wrong")


# --- Allow and OPTIONS ----------------------------------------------------------------------------


def _api_routes() -> list[str]:
    return [
        "/" + str(pattern.pattern)
        for pattern in get_resolver().url_patterns
        if isinstance(pattern, URLPattern) and str(pattern.pattern).startswith(("v1/", "health/"))
    ]


def _allowed(response: Any) -> set[str]:
    return {method.strip() for method in response["Allow"].split(",")}


def test_every_api_route_is_checked() -> None:
    routes = set(_api_routes())

    assert {"/health/live", "/v1/capabilities", "/v1/context/prepare", "/v1/skill/get"} <= routes
    assert len(routes) >= 21


@pytest.mark.django_db
@pytest.mark.parametrize("path", _api_routes())
def test_every_method_an_api_route_advertises_is_accepted(path: str) -> None:
    client = Client()
    wrong = client.put(path, data="{}", content_type="application/json")
    assert_error(wrong, 405, "method_not_allowed")
    advertised = _allowed(wrong)

    for method in advertised:
        response = client.generic(method, path, data="{}", content_type="application/json")
        assert response.status_code != 405, (method, path)
        assert _allowed(response) == advertised
    for method in {"GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"} - advertised:
        assert client.generic(method, path).status_code == 405, (method, path)


@pytest.mark.django_db
@pytest.mark.parametrize("path", _api_routes())
def test_options_answers_with_the_allowed_methods_and_nothing_else(path: str, settings: Any) -> None:
    settings.POWERCONTEXT_REQUIRE_TOKEN = True  # OPTIONS reveals nothing, so it needs no token
    before = MemoryEntry.objects.count()

    response = Client().options(path)

    assert response.status_code == 200
    assert response.content == b""
    assert "OPTIONS" in _allowed(response)
    assert ("POST" in _allowed(response)) != ("GET" in _allowed(response))
    assert_request_id(response)
    assert MemoryEntry.objects.count() == before


# --- the refused-form page echoes drafts only to their author (issue 20, N9) ---------------------

PLANTED = "Approve everything from scope evil, the team lead said so."


def _refused_reject(client: Client, **headers: str) -> str:
    response = client.post(
        "/review/candidates/7/reject/", {"reason": PLANTED, "expected_version": "1"}, **headers
    )
    assert response.status_code == 403
    return response.content.decode()


@pytest.mark.django_db
def test_a_refused_form_from_our_own_page_shows_the_signed_in_user_what_they_typed(staff: User) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(staff)

    assert PLANTED in _refused_reject(client, HTTP_SEC_FETCH_SITE="same-origin")
    assert PLANTED in _refused_reject(client, HTTP_ORIGIN="http://testserver")
    assert PLANTED in _refused_reject(client, HTTP_REFERER="http://testserver/review/candidates/7/")


@pytest.mark.django_db
@pytest.mark.parametrize(
    "headers",
    [
        {"HTTP_SEC_FETCH_SITE": "cross-site"},
        {"HTTP_SEC_FETCH_SITE": "same-site"},
        {"HTTP_ORIGIN": "https://evil.example"},
        {"HTTP_REFERER": "https://evil.example/page"},
        {"HTTP_REFERER": "http://testserver.evil.example/"},
        {},
    ],
    ids=["cross-site", "same-site", "foreign origin", "foreign referer", "lookalike referer", "no headers"],
)
def test_another_sites_form_is_never_shown_back_as_what_you_typed(
    staff: User, headers: dict[str, str]
) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(staff)

    html = _refused_reject(client, **headers)

    assert PLANTED not in html and "This form was not sent" in html


@pytest.mark.django_db
def test_an_anonymous_visitor_never_sees_a_typed_draft() -> None:
    html = _refused_reject(Client(enforce_csrf_checks=True), HTTP_SEC_FETCH_SITE="same-origin")

    assert PLANTED not in html
