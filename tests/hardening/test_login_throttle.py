"""Log-in attempts at /accounts/login/ and /admin/login/ are throttled per username and per client
IP (django-axes, database handler): after the limit, even the right password is refused with a
clear page until the cool-off window has passed."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine
from django.conf import settings as django_settings
from django.contrib.auth.models import User
from django.test import Client

PASSWORD = "the-right-password-0123"
INBOX_LOGIN = "/accounts/login/"
ADMIN_LOGIN = "/admin/login/"
IP = "192.0.2.10"
OTHER_IP = "198.51.100.20"


@pytest.fixture(autouse=True)
def _fast_password_hasher(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def limit() -> int:
    return int(django_settings.AXES_FAILURE_LIMIT)


@pytest.fixture
def cooloff() -> timedelta:
    cooloff: timedelta = django_settings.AXES_COOLOFF_TIME
    return cooloff


@pytest.fixture
def clock() -> Iterator[time_machine.Traveller]:
    with time_machine.travel(datetime(2030, 1, 1, 12, 0, tzinfo=UTC), tick=False) as traveller:
        yield traveller


@pytest.fixture
def alice(db: None) -> User:
    return User.objects.create_user(username="alice", password=PASSWORD)


@pytest.fixture
def bob(db: None) -> User:
    return User.objects.create_user(username="bob", password=PASSWORD)


def attempt(username: str, password: str, *, ip: str = IP, path: str = INBOX_LOGIN, **headers: str) -> Any:
    return Client(REMOTE_ADDR=ip, **headers).post(path, {"username": username, "password": password})


def assert_logged_in(response: Any) -> None:
    assert response.status_code == 302, response.content[:500]
    assert "_auth_user_id" in response.wsgi_request.session


def assert_wrong_password(response: Any) -> None:
    assert response.status_code == 200
    assert b"Please enter a correct username and password" in response.content


def assert_refused(response: Any, cooloff: timedelta) -> None:
    assert response.status_code == 429
    assert response["Content-Type"].startswith("text/html")
    assert response["Retry-After"] == str(int(cooloff.total_seconds()))
    html = response.content.decode()
    assert "<h1>Too many failed log-ins</h1>" in html
    assert 'class="topbar"' in html  # the Inbox's look (templates/base.html)
    assert "_auth_user_id" not in response.wsgi_request.session


def test_the_defaults_are_five_failures_and_fifteen_minutes(limit: int, cooloff: timedelta) -> None:
    assert (limit, cooloff) == (5, timedelta(minutes=15))


@pytest.mark.django_db
def test_after_the_limit_even_the_right_password_is_refused_until_the_window_ends(
    alice: User, clock: time_machine.Traveller, limit: int, cooloff: timedelta
) -> None:
    for _ in range(limit - 1):
        assert_wrong_password(attempt("alice", "wrong"))
    assert_refused(attempt("alice", "wrong"), cooloff)  # the limit-th failure locks

    assert_refused(attempt("alice", PASSWORD), cooloff)
    clock.shift(cooloff - timedelta(seconds=1))
    # Refused attempts do not extend the window: it runs from the failure that locked.
    assert_refused(attempt("alice", PASSWORD), cooloff)
    clock.shift(timedelta(seconds=2))
    assert_logged_in(attempt("alice", PASSWORD))


@pytest.mark.django_db
def test_failures_below_the_limit_do_not_stop_the_right_password(
    alice: User, clock: time_machine.Traveller, limit: int
) -> None:
    for _ in range(limit - 1):
        assert_wrong_password(attempt("alice", "wrong"))

    assert_logged_in(attempt("alice", PASSWORD))


@pytest.mark.django_db
def test_failures_age_out_of_the_window(
    alice: User, clock: time_machine.Traveller, limit: int, cooloff: timedelta
) -> None:
    for _ in range(limit - 1):
        assert_wrong_password(attempt("alice", "wrong"))
    clock.shift(cooloff + timedelta(seconds=1))

    for _ in range(limit - 1):
        assert_wrong_password(attempt("alice", "wrong"))
    assert_logged_in(attempt("alice", PASSWORD))


@pytest.mark.django_db
def test_one_address_guessing_many_usernames_is_locked_out(
    alice: User, clock: time_machine.Traveller, limit: int, cooloff: timedelta
) -> None:
    for i in range(limit - 1):
        assert_wrong_password(attempt(f"nobody-{i}", "wrong"))
    assert_refused(attempt("nobody-last", "wrong"), cooloff)

    assert_refused(attempt("alice", PASSWORD), cooloff)
    assert_logged_in(attempt("alice", PASSWORD, ip=OTHER_IP))


@pytest.mark.django_db
def test_one_username_guessed_from_many_addresses_is_locked_out(
    alice: User, bob: User, clock: time_machine.Traveller, limit: int, cooloff: timedelta
) -> None:
    for i in range(limit - 1):
        assert_wrong_password(attempt("alice", "wrong", ip=f"203.0.113.{i + 1}"))
    assert_refused(attempt("alice", "wrong", ip="203.0.113.99"), cooloff)

    assert_refused(attempt("alice", PASSWORD, ip=OTHER_IP), cooloff)
    assert_logged_in(attempt("bob", PASSWORD, ip=OTHER_IP))


@pytest.mark.django_db
def test_the_admin_login_is_throttled_too(
    clock: time_machine.Traveller, limit: int, cooloff: timedelta
) -> None:
    User.objects.create_user(username="operator", password=PASSWORD, is_staff=True)
    for _ in range(limit - 1):
        response = attempt("operator", "wrong", path=ADMIN_LOGIN)
        assert response.status_code == 200 and b"errornote" in response.content

    assert_refused(attempt("operator", "wrong", path=ADMIN_LOGIN), cooloff)
    assert_refused(attempt("operator", PASSWORD, path=ADMIN_LOGIN), cooloff)
    assert_refused(attempt("operator", PASSWORD), cooloff)  # one counter for both forms


@pytest.mark.django_db
def test_behind_a_trusted_proxy_the_forwarded_client_address_counts(
    alice: User, clock: time_machine.Traveller, limit: int, cooloff: timedelta, settings: Any
) -> None:
    settings.POWERCONTEXT_TRUSTED_PROXY_COUNT = 1
    proxy = "10.0.0.1"

    for i in range(limit):
        # The client cannot pick its address: the proxy appends the real one last.
        forwarded = f"198.51.100.{i}, {IP}"
        attempt(f"nobody-{i}", "wrong", ip=proxy, HTTP_X_FORWARDED_FOR=forwarded)

    assert_refused(attempt("alice", PASSWORD, ip=proxy, HTTP_X_FORWARDED_FOR=IP), cooloff)
    assert_logged_in(attempt("alice", PASSWORD, ip=proxy, HTTP_X_FORWARDED_FOR=OTHER_IP))


@pytest.mark.django_db
def test_without_a_trusted_proxy_a_forwarded_header_is_ignored(
    alice: User, clock: time_machine.Traveller, limit: int, cooloff: timedelta
) -> None:
    for i in range(limit):
        attempt(f"nobody-{i}", "wrong", HTTP_X_FORWARDED_FOR=f"198.51.100.{i}")

    assert_refused(attempt("alice", PASSWORD, HTTP_X_FORWARDED_FOR=OTHER_IP), cooloff)


@pytest.mark.django_db
def test_a_refusal_is_logged_without_username_or_address(
    alice: User, clock: time_machine.Traveller, limit: int, caplog: pytest.LogCaptureFixture
) -> None:
    for _ in range(limit):
        attempt("alice", "wrong")
    caplog.clear()

    attempt("alice", PASSWORD)

    refusals = [r for r in caplog.records if r.name == "powercontext.security"]
    assert [r.getMessage() for r in refusals] == ["login refused: too many failures route=login status=429"]
    for record in caplog.records:
        rendered = record.getMessage() + repr(record.args)
        assert "alice" not in rendered and IP not in rendered
