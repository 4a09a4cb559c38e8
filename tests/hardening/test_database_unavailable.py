"""The database unavailable: every surface answers 503 with Retry-After (the API its envelope, the
Inbox and the admin a page in their look), with one log line per refused request and no
traceback; and the PostgreSQL connection carries the default timeouts."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import OperationalError, connection
from django.test import Client

from powercontext.core.log_privacy import RequestRecordFilter
from tests.api.helpers import assert_error
from tests.hardening.processes import child_env, run_python
from tests.hardening.test_error_pages import assert_html_page

SECRET_DETAIL = "db.internal.example:5432 password authentication"


def _database_down(*args: Any, **kwargs: Any) -> None:
    """A ``connection.execute_wrapper``: every query fails as a lost server does."""
    raise OperationalError(f"connection failed: {SECRET_DETAIL}")


class _Console(logging.Handler):
    """What the console handler would print: the records that pass the privacy filter."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.addFilter(RequestRecordFilter())
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@pytest.fixture
def console() -> Iterator[_Console]:
    handler = _Console()
    loggers = [logging.getLogger(), logging.getLogger("django.request"), logging.getLogger("django.security")]
    for logger in loggers:
        logger.addHandler(handler)
    yield handler
    for logger in loggers:
        logger.removeHandler(handler)


@pytest.fixture
def superuser(db: None) -> User:
    return User.objects.create_user(username="root-of-all", is_staff=True, is_superuser=True)


def _assert_retry_after(response: Any) -> None:
    assert int(response["Retry-After"]) > 0


@pytest.mark.django_db
def test_the_api_answers_503_with_retry_after(console: _Console) -> None:
    with connection.execute_wrapper(_database_down):
        response = Client(raise_request_exception=False).post(
            "/v1/memory/remember",
            {"scope_id": "s", "kind": "note", "text": "a note"},
            content_type="application/json",
        )

    assert_error(response, 503, "runtime_not_ready")
    _assert_retry_after(response)
    assert console.lines == ["database unavailable error_class=OperationalError"]


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/review/", "/admin/", "/admin/powercontext/memoryentry/"])
def test_the_inbox_and_the_admin_answer_a_503_page_with_retry_after(
    superuser: User, console: _Console, path: str
) -> None:
    client = Client(raise_request_exception=False)
    client.force_login(superuser)

    with connection.execute_wrapper(_database_down):
        response = client.get(path)

    html = assert_html_page(response, 503, "Temporarily unavailable")
    _assert_retry_after(response)
    assert SECRET_DETAIL not in html
    # One line per refused request: no traceback, no second record from django.request.
    assert console.lines == ["database unavailable error_class=OperationalError"]


@pytest.mark.django_db
def test_readiness_is_503_with_retry_after_while_the_database_is_down() -> None:
    with connection.execute_wrapper(_database_down):
        response = Client().get("/health/ready")

    assert response.status_code == 503
    _assert_retry_after(response)
    assert response.json()["status"] == "not_ready"


def test_postgresql_connections_get_connect_and_statement_timeouts(tmp_path: Any) -> None:
    code = (
        "import django; django.setup(); from django.conf import settings; "
        "print(settings.DATABASES['default']['ENGINE'], settings.DATABASES['default']['OPTIONS'])"
    )
    url = "postgres://u:p@127.0.0.1:1/db"
    default = run_python(code, child_env(tmp_path, DATABASE_URL=url, SECRET_KEY="k" * 50))
    assert default.returncode == 0, default.stderr
    assert default.stdout.startswith("powercontext.core.postgresql ")  # bounded waits on a hung server
    assert "'connect_timeout': 2" in default.stdout
    assert "-c statement_timeout=60000 -c lock_timeout=2000" in default.stdout

    tuned = run_python(
        code,
        child_env(
            tmp_path,
            DATABASE_URL=url,
            SECRET_KEY="k" * 50,
            POWERCONTEXT_DB_CONNECT_TIMEOUT="3",
            POWERCONTEXT_DB_STATEMENT_TIMEOUT_MS="1500",
            POWERCONTEXT_DB_LOCK_TIMEOUT_MS="700",
        ),
    )
    assert "'connect_timeout': 3" in tuned.stdout and "statement_timeout=1500" in tuned.stdout
    assert "lock_timeout=700" in tuned.stdout

    off = run_python(
        code,
        child_env(tmp_path, DATABASE_URL=url, SECRET_KEY="k" * 50, POWERCONTEXT_DB_STATEMENT_TIMEOUT_MS="0"),
    )
    assert "statement_timeout" not in off.stdout and "lock_timeout=2000" in off.stdout


def test_postgresql_statements_are_bound_on_the_server_and_prepared_unless_turned_off(tmp_path: Any) -> None:
    code = (
        "import django; django.setup(); from django.conf import settings; "
        "db = settings.DATABASES['default']; options = db['OPTIONS']; "
        "print(options.get('server_side_binding'), options.get('prepare_threshold'), "
        "db.get('DISABLE_SERVER_SIDE_CURSORS'))"
    )
    url = "postgres://u:p@127.0.0.1:1/db"
    default = run_python(code, child_env(tmp_path, DATABASE_URL=url, SECRET_KEY="k" * 50))
    assert default.returncode == 0, default.stderr
    assert default.stdout.split() == ["True", "5", "False"]
    off = run_python(
        code,
        child_env(
            tmp_path, DATABASE_URL=url, SECRET_KEY="k" * 50, POWERCONTEXT_DB_PREPARED_STATEMENTS="false"
        ),
    )
    # A pooler in transaction mode: no cursors held across transactions either.
    assert off.stdout.split() == ["None", "None", "True"]
    wrong = run_python(
        code,
        child_env(
            tmp_path, DATABASE_URL=url, SECRET_KEY="k" * 50, POWERCONTEXT_DB_PREPARED_STATEMENTS="maybe"
        ),
    )
    assert wrong.returncode != 0 and "POWERCONTEXT_DB_PREPARED_STATEMENTS" in wrong.stderr
    sqlite = run_python(code, child_env(tmp_path, DATABASE_URL=f"sqlite:///{tmp_path / 'x.sqlite3'}"))
    assert sqlite.stdout.split() == ["None", "None", "False"]


@pytest.mark.postgres_only
@pytest.mark.django_db
def test_a_statement_over_the_timeout_fails_instead_of_hanging() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SHOW statement_timeout")
        assert cursor.fetchone()[0] == "1min"
        cursor.execute("SET LOCAL statement_timeout = 200")
        with pytest.raises(OperationalError):
            cursor.execute("SELECT pg_sleep(5)")
