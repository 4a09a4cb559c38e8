"""``manage.py create_reviewer``: a reviewer who can log in to the Inbox and decide candidates."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.test import Client

from powercontext.core.models import ApiToken
from review.management.commands import create_reviewer

PASSWORD = "correct horse battery staple"


def password_file(tmp_path: Path, text: str = PASSWORD + "\n") -> str:
    path = tmp_path / "password"
    path.write_text(text, encoding="utf-8")
    return str(path)


def logs_in(username: str, password: str) -> Client:
    """Log in through the real form (the path a person takes, with the log-in throttle)."""
    client = Client()
    response = client.post("/accounts/login/", {"username": username, "password": password})
    assert response.status_code == 302, response.content[:300]
    assert response["Location"] == "/review/"
    return client


@pytest.mark.django_db
def test_a_new_reviewer_logs_in_and_may_review(tmp_path: Path) -> None:
    out = io.StringIO()

    call_command("create_reviewer", "alice", "--password-file", password_file(tmp_path), stdout=out)

    assert "created reviewer alice" in out.getvalue()
    user = get_user_model().objects.get(username="alice")
    assert user.has_perm("review.review_candidate")
    assert [g.name for g in user.groups.all()] == ["reviewers"]
    client = logs_in("alice", PASSWORD)
    assert client.get("/review/").status_code == 200


@pytest.mark.django_db
def test_an_existing_user_is_refused_without_update(tmp_path: Path) -> None:
    get_user_model().objects.create_user("bob", password="an-old-password-1")

    with pytest.raises(CommandError, match="exists; pass --update"):
        call_command("create_reviewer", "bob", "--password-file", password_file(tmp_path))

    user = get_user_model().objects.get(username="bob")
    assert user.check_password("an-old-password-1") and not user.has_perm("review.review_candidate")


@pytest.mark.django_db
def test_update_gives_a_token_only_reviewer_a_log_in_and_keeps_the_token(tmp_path: Path) -> None:
    call_command("create_api_token", "carol", "--reviewer", stdout=io.StringIO())
    carol = get_user_model().objects.get(username="carol")
    assert not carol.has_usable_password()

    call_command(
        "create_reviewer",
        "carol",
        "--update",
        "--password-file",
        password_file(tmp_path),
        stdout=io.StringIO(),
    )

    assert ApiToken.objects.filter(user__username="carol").count() == 1
    logs_in("carol", PASSWORD)


@pytest.mark.django_db
def test_the_password_may_come_from_the_environment(monkeypatch: Any) -> None:
    monkeypatch.setenv(create_reviewer.PASSWORD_ENV, PASSWORD)

    call_command("create_reviewer", "dave", stdout=io.StringIO())

    logs_in("dave", PASSWORD)


@pytest.mark.django_db
def test_the_password_is_prompted_twice_in_a_terminal(monkeypatch: Any) -> None:
    monkeypatch.delenv(create_reviewer.PASSWORD_ENV, raising=False)
    monkeypatch.setattr(create_reviewer, "stdin_is_terminal", lambda: True)
    answers = iter([PASSWORD, PASSWORD, PASSWORD, "something else entirely"])
    monkeypatch.setattr(create_reviewer.getpass, "getpass", lambda prompt: next(answers))

    call_command("create_reviewer", "erin", stdout=io.StringIO())
    logs_in("erin", PASSWORD)

    with pytest.raises(CommandError, match="passwords differ"):
        call_command("create_reviewer", "frank", stdout=io.StringIO())
    assert not get_user_model().objects.filter(username="frank").exists()


@pytest.mark.django_db
def test_without_a_terminal_or_a_password_source_nothing_is_created(monkeypatch: Any) -> None:
    monkeypatch.delenv(create_reviewer.PASSWORD_ENV, raising=False)
    monkeypatch.setattr(create_reviewer, "stdin_is_terminal", lambda: False)

    with pytest.raises(CommandError, match="no password"):
        call_command("create_reviewer", "grace")

    assert not get_user_model().objects.filter(username="grace").exists()


@pytest.mark.django_db
def test_a_password_the_validators_refuse_creates_nothing(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="too short"):
        call_command("create_reviewer", "heidi", "--password-file", password_file(tmp_path, "short\n"))

    assert not get_user_model().objects.filter(username="heidi").exists()
