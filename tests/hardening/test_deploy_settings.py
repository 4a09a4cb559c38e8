"""HTTPS deployment settings come from the environment; the documented production values pass
``manage.py check --deploy --fail-level WARNING``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from tests.hardening.processes import ROOT, child_env, run_manage, run_python

PRODUCTION_ENV = ROOT / "docs" / "production.env"
A_KEY = "a-deploy-test-secret-key-" + "0123456789abcdef" * 3
DEPLOY_SETTINGS = (
    "SESSION_COOKIE_SECURE",
    "CSRF_COOKIE_SECURE",
    "SECURE_SSL_REDIRECT",
    "SECURE_PROXY_SSL_HEADER",
    "SECURE_HSTS_SECONDS",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS",
    "SECURE_HSTS_PRELOAD",
)
PRINT_DEPLOY_SETTINGS = (
    "import json, django; django.setup(); from django.conf import settings; "
    f"print(json.dumps({{name: getattr(settings, name) for name in {DEPLOY_SETTINGS!r}}}))"
)


def production_env() -> dict[str, str]:
    values: dict[str, str] = {}
    for line in PRODUCTION_ENV.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            name, _, value = line.partition("=")
            values[name] = value
    return values


def deploy_settings(tmp_path: Path, **variables: str) -> dict[str, Any]:
    result = run_python(PRINT_DEPLOY_SETTINGS, child_env(tmp_path, **variables))
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_the_documented_production_environment_passes_check_deploy(tmp_path: Path) -> None:
    env = child_env(tmp_path, SECRET_KEY=A_KEY, **production_env())

    result = run_manage("check", "--deploy", "--fail-level", "WARNING", env=env)

    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


def test_the_database_checks_print_no_warning(tmp_path: Path) -> None:
    # ``migrate`` runs them: any warning would print on every start of ``make run``.
    result = run_manage("check", "--database", "default", "--fail-level", "WARNING", env=child_env(tmp_path))

    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


PRINT_SQLITE_PRAGMAS = (
    "import json, django; django.setup(); from django.db import connection; "
    "cursor = connection.cursor(); "
    "print(json.dumps([cursor.execute(f'PRAGMA {name}').fetchone()[0] "
    "for name in ('cache_size', 'mmap_size', 'journal_mode')]))"
)


def test_each_sqlite_connection_gets_a_small_page_cache_and_a_mapped_window(tmp_path: Path) -> None:
    # The page cache is per connection, so per serving thread; the mapped window is shared.
    def pragmas(**variables: str) -> list[Any]:
        result = run_python(PRINT_SQLITE_PRAGMAS, child_env(tmp_path, **variables))
        assert result.returncode == 0, result.stderr
        return list(json.loads(result.stdout))

    assert pragmas() == [-8 * 1024, 256 * 1024 * 1024, "wal"]  # KiB (negative), bytes
    assert pragmas(POWERCONTEXT_SQLITE_CACHE_MB="32", POWERCONTEXT_SQLITE_MMAP_MB="0") == [
        -32 * 1024,
        0,
        "wal",
    ]


def test_the_embedded_default_is_plain_http(tmp_path: Path) -> None:
    # `make run` serves http://127.0.0.1:8000: secure-only cookies would break its login.
    assert deploy_settings(tmp_path) == {
        "SESSION_COOKIE_SECURE": False,
        "CSRF_COOKIE_SECURE": False,
        "SECURE_SSL_REDIRECT": False,
        "SECURE_PROXY_SSL_HEADER": None,
        "SECURE_HSTS_SECONDS": 0,
        "SECURE_HSTS_INCLUDE_SUBDOMAINS": False,
        "SECURE_HSTS_PRELOAD": False,
    }


def test_each_deploy_setting_comes_from_its_environment_variable(tmp_path: Path) -> None:
    env = {name: value for name, value in production_env().items() if name in DEPLOY_SETTINGS}
    env["SECURE_HSTS_SECONDS"] = "600"

    assert deploy_settings(tmp_path, **env) == {
        "SESSION_COOKIE_SECURE": True,
        "CSRF_COOKIE_SECURE": True,
        "SECURE_SSL_REDIRECT": True,
        "SECURE_PROXY_SSL_HEADER": ["HTTP_X_FORWARDED_PROTO", "https"],
        "SECURE_HSTS_SECONDS": 600,
        "SECURE_HSTS_INCLUDE_SUBDOMAINS": True,
        "SECURE_HSTS_PRELOAD": True,
    }


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("X-Forwarded-Proto,https", ["HTTP_X_FORWARDED_PROTO", "https"]),
        ("HTTP_X_FORWARDED_PROTO,https", ["HTTP_X_FORWARDED_PROTO", "https"]),
        (" x-forwarded-ssl , on ", ["HTTP_X_FORWARDED_SSL", "on"]),
    ],
)
def test_the_proxy_ssl_header_accepts_header_or_meta_names(
    tmp_path: Path, value: str, expected: list[str]
) -> None:
    assert deploy_settings(tmp_path, SECURE_PROXY_SSL_HEADER=value)["SECURE_PROXY_SSL_HEADER"] == expected


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("SECURE_PROXY_SSL_HEADER", "X-Forwarded-Proto"),
        ("SECURE_PROXY_SSL_HEADER", "X-Forwarded-Proto,"),
        ("SECURE_PROXY_SSL_HEADER", "Bad Header,https"),
        ("SECURE_HSTS_SECONDS", "a year"),
        ("SECURE_HSTS_SECONDS", "-1"),
        ("SECURE_SSL_REDIRECT", "maybe"),
        ("SESSION_COOKIE_SECURE", "2"),
    ],
)
def test_a_malformed_deploy_variable_refuses_to_start(tmp_path: Path, name: str, value: str) -> None:
    result = run_python(PRINT_DEPLOY_SETTINGS, child_env(tmp_path, **{name: value}))

    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and name in result.stderr


@pytest.fixture
def https_behind_a_proxy(settings: Any) -> None:
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.SECURE_HSTS_SECONDS = 31536000
    settings.SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    settings.SECURE_HSTS_PRELOAD = True


@pytest.mark.django_db
@pytest.mark.usefixtures("https_behind_a_proxy")
def test_plain_http_is_redirected_to_https_except_health_probes() -> None:
    client = Client()

    redirected = client.get("/review/")
    assert redirected.status_code == 301
    assert redirected["Location"] == "https://testserver/review/"
    # Load balancers and orchestrators probe app servers directly over plain HTTP.
    assert client.get("/health/live").status_code == 200
    assert client.get("/health/ready").status_code == 200


@pytest.mark.django_db
@pytest.mark.usefixtures("https_behind_a_proxy")
def test_https_through_the_proxy_gets_hsts() -> None:
    response = Client().get("/health/live", HTTP_X_FORWARDED_PROTO="https")

    assert response.status_code == 200
    assert response["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains; preload"
