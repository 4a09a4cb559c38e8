"""Measured (issue 22, "Must show"): the Inbox log-in in Debian's Chromium, before (PBKDF2 first,
Django's former default) and after (Argon2 first, the configured hashers), in one run, the two
taking turns. Prints p50 and p95 of the time from pressing "Log in" to the queue being shown:

    POWERCONTEXT_TEST_CHROMIUM=/usr/bin/chromium DATABASE_URL=postgres://... \\
      .venv/bin/python -m pytest tests/review/test_inbox_login_bench_browser.py -q -s

The figures are printed, not asserted (this machine is shared); what is asserted is the
behaviour they rest on: every log-in succeeds, each account keeps the hash of its variant, and a
PBKDF2 hash is upgraded to Argon2 by its first log-in under the configured hashers.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.contrib.auth.models import User

from tests.review.conftest import PASSWORD, make_user
from tests.review.test_inbox_browser import chromium

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ROUNDS = 8
CONFIGURED = list(django_settings.PASSWORD_HASHERS)  # Argon2 first (powercontext/settings)
BEFORE = ["django.contrib.auth.hashers.PBKDF2PasswordHasher", *CONFIGURED]


def _log_in_ms(browser: Any, base_url: str, username: str) -> tuple[float, float]:
    """(ms until the log-in POST is answered, ms until the queue is shown), from the click."""
    from playwright.sync_api import expect

    context = browser.new_context(base_url=base_url)
    try:
        page = context.new_page()
        page.goto("/accounts/login/?next=/review/")
        page.get_by_label("Username").fill(username)
        page.get_by_label("Password").fill(PASSWORD)
        started = time.perf_counter()
        with page.expect_response(
            lambda r: r.request.method == "POST" and "/accounts/login/" in r.url
        ) as answer:
            page.get_by_role("button", name="Log in").click()
        assert answer.value.status == 302
        posted = time.perf_counter()
        expect(page.get_by_role("heading", name="Pending candidates")).to_be_visible()
        return (posted - started) * 1000, (time.perf_counter() - started) * 1000
    finally:
        context.close()


def _user_with_hash(username: str, hashers: list[str], settings: Any) -> User:
    settings.PASSWORD_HASHERS = hashers
    return make_user(username, reviewer=True)


def test_log_in_before_and_after_argon2(settings: Any, live_server: Any) -> None:
    before_user = _user_with_hash("before", BEFORE, settings)
    after_user = _user_with_hash("after", CONFIGURED, settings)
    upgraded = _user_with_hash("upgraded", BEFORE, settings)
    timings: dict[str, list[tuple[float, float]]] = {"before": [], "after": []}
    with chromium() as browser:
        for _ in range(ROUNDS):
            settings.PASSWORD_HASHERS = BEFORE
            timings["before"].append(_log_in_ms(browser, live_server.url, "before"))
            settings.PASSWORD_HASHERS = CONFIGURED
            timings["after"].append(_log_in_ms(browser, live_server.url, "after"))
        first_after_switch = _log_in_ms(browser, live_server.url, "upgraded")

    for name, pairs in timings.items():
        for part, values in (("log-in POST", [p for p, _ in pairs]), ("to the queue", [q for _, q in pairs])):
            ordered = sorted(values)
            p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
            median = statistics.median(values)
            print(f"\n{name}, {part}: p50 {median:.0f} ms, p95 {p95:.0f} ms over {len(values)}")
    print(f"first log-in of a PBKDF2 account under Argon2 (upgrade): {first_after_switch[0]:.0f} ms")

    for user, algorithm in ((before_user, "pbkdf2_sha256"), (after_user, "argon2"), (upgraded, "argon2")):
        user.refresh_from_db()
        assert user.password.startswith(algorithm + "$"), (user.username, user.password.split("$")[0])
    assert all(len(values) == ROUNDS for values in timings.values())
