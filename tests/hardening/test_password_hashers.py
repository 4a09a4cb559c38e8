"""Issue 22, speed: passwords are hashed with Argon2 (Django's hasher over argon2-cffi, at Django's
own parameters), and a PBKDF2 hash written before the switch still logs in and is rewritten as
Argon2 by that log-in. These tests use the real hashers (no fast test hasher)."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth.hashers import Argon2PasswordHasher, identify_hasher, make_password
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

PASSWORD = "an-old-reviewer-password-42"
LOGIN = "/accounts/login/"

pytestmark = pytest.mark.django_db


def _log_in(username: str, password: str) -> Client:
    client = Client(REMOTE_ADDR="192.0.2.30")
    client.post(LOGIN, {"username": username, "password": password})
    return client


def _logged_in(client: Client) -> bool:
    return client.get("/review/").status_code == 200


def test_argon2_comes_first_and_pbkdf2_still_verifies() -> None:
    assert settings.PASSWORD_HASHERS[0] == "django.contrib.auth.hashers.Argon2PasswordHasher"
    assert "django.contrib.auth.hashers.PBKDF2PasswordHasher" in settings.PASSWORD_HASHERS[1:]
    hasher = identify_hasher(User.objects.create_user("new-reviewer", password=PASSWORD).password)
    assert hasher.algorithm == "argon2"
    # Django's parameters, not weakened here (2 passes over 100 MiB, 8 lanes).
    assert isinstance(hasher, Argon2PasswordHasher)
    assert (hasher.time_cost, hasher.memory_cost, hasher.parallelism) == (2, 102400, 8)
    assert hasher.decode(User.objects.get(username="new-reviewer").password)["variety"] == "argon2id"


def test_an_old_pbkdf2_hash_logs_in_and_is_rewritten_as_argon2() -> None:
    old = make_password(PASSWORD, hasher="pbkdf2_sha256")
    user = User.objects.create(username="old-reviewer", password=old)
    assert identify_hasher(user.password).algorithm == "pbkdf2_sha256"

    assert _logged_in(_log_in("old-reviewer", PASSWORD))
    user.refresh_from_db()
    assert identify_hasher(user.password).algorithm == "argon2"
    assert user.password != old
    assert user.check_password(PASSWORD)
    # The rewritten hash logs in as well.
    assert _logged_in(_log_in("old-reviewer", PASSWORD))


def test_a_wrong_password_leaves_the_old_hash_alone() -> None:
    old = make_password(PASSWORD, hasher="pbkdf2_sha256")
    User.objects.create(username="old-reviewer", password=old)
    assert not _logged_in(_log_in("old-reviewer", PASSWORD + "-wrong"))
    assert User.objects.get(username="old-reviewer").password == old


def test_bench_login_reports_each_variant_and_removes_its_user(tmp_path: Path) -> None:
    out = StringIO()
    results = tmp_path / "login.json"
    call_command("bench_login", "--logins", "1", "--json", str(results), stdout=out)
    assert not User.objects.filter(username="bench-login").exists()
    report = json.loads(results.read_text())
    assert set(report["variants"]) == {"pbkdf2", "argon2", "upgrade"}
    for row in report["variants"].values():
        assert 0 < row["p50_ms"] <= row["p95_ms"] <= row["max_ms"]
    assert "argon2 / pbkdf2 p50" in out.getvalue()


def test_bench_login_refuses_an_existing_user() -> None:
    User.objects.create_user("bench-login")
    with pytest.raises(CommandError, match="exists"):
        call_command("bench_login", "--logins", "1", stdout=StringIO())
