"""A strict Content-Security-Policy on the browser pages (issue 20, informational finding)."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.test import Client

from tests.review.conftest import make_candidate

pytestmark = pytest.mark.django_db


def _policy(response: object) -> dict[str, str]:
    header = response["Content-Security-Policy"]  # type: ignore[index]
    return {part.split()[0]: part.strip() for part in header.split(";") if part.strip()}


@pytest.fixture
def staff(db: None) -> Client:
    user = User.objects.create_superuser("root", password="a-long-password-123")
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.parametrize("path", ["/review/", "/review/candidates/{pk}/", "/accounts/login/"])
def test_inbox_pages_run_only_the_nonced_inline_script(staff: Client, path: str) -> None:
    candidate = make_candidate()
    response = staff.get(path.format(pk=candidate.pk))
    html = response.content.decode()
    policy = _policy(response)

    nonce = re.search(r"'nonce-([^']+)'", policy["script-src"])
    assert nonce is not None
    assert policy["script-src"] == f"script-src 'nonce-{nonce.group(1)}'"
    assert "unsafe-inline" not in response["Content-Security-Policy"]
    assert (
        policy["default-src"] == "default-src 'none'"
        and policy["frame-ancestors"] == "frame-ancestors 'none'"
    )
    scripts = re.findall(r"<script([^>]*)>", html)
    assert all(f'nonce="{nonce.group(1)}"' in attrs or "src=" in attrs for attrs in scripts)
    assert scripts or path.startswith("/accounts/")
    assert all(f'nonce="{nonce.group(1)}"' in attrs for attrs in re.findall(r"<style([^>]*)>", html))
    assert not re.search(r"\sstyle=\"", html) and not re.search(r"\son[a-z]+=\"", html)


def test_each_response_gets_a_fresh_nonce(staff: Client) -> None:
    first, second = staff.get("/review/"), staff.get("/review/")

    assert _policy(first)["script-src"] != _policy(second)["script-src"]


def test_admin_and_docs_pages_have_a_policy_too(staff: Client) -> None:
    admin = _policy(staff.get("/admin/"))
    docs = _policy(Client().get("/v1/docs"))

    assert "'unsafe-inline'" not in admin["script-src"] and "'unsafe-eval'" not in admin["script-src"]
    assert docs["script-src"] == "script-src 'self'" and docs["default-src"] == "default-src 'none'"


@pytest.mark.parametrize("path", ["/health/live", "/v1/capabilities"])
def test_json_answers_carry_no_policy(path: str) -> None:
    assert "Content-Security-Policy" not in Client().get(path)
