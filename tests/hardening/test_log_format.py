"""Logs: the client's request id on the access line (and every line of the request), LOG_FORMAT=json,
and the privacy filter on Celery's task-failure lines."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any

import pytest
from django.db import IntegrityError
from django.test import Client

from powercontext.core.log_format import JsonFormatter, RequestIdFilter
from powercontext.core.log_privacy import RequestRecordFilter
from tests.hardening.processes import child_env, run_python

SECRET = "Key (scope_id)=(git:github.com/acme/secret) already exists; host db.internal"


@pytest.mark.django_db
def test_the_access_line_carries_the_request_id_the_client_sees(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="powercontext.access"):
        response = Client().get("/health/live")

    request_id = response["X-PowerContext-Request-ID"]
    access = [r for r in caplog.records if r.name == "powercontext.access"]
    assert len(access) == 1
    assert f"request_id={request_id} " in access[0].getMessage()


class _Stamped(logging.Handler):
    """A handler with the request-id filter, as the console handler has: ids seen at emit time."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.addFilter(RequestIdFilter())
        self.ids: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.ids.append(record.request_id)  # type: ignore[attr-defined]


@pytest.mark.django_db
def test_every_line_logged_while_serving_a_request_carries_its_id() -> None:
    handler = _Stamped()
    logger = logging.getLogger("powercontext")
    logger.addHandler(handler)
    previous = logger.level
    logger.setLevel(logging.INFO)
    try:
        response = Client().post(
            "/v1/context/prepare",
            {"scope_id": "s", "query": "anything"},
            content_type="application/json",
        )
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous)

    assert response.status_code == 200
    assert len(handler.ids) >= 2  # the prepare line and the access line at least
    assert set(handler.ids) == {response["X-PowerContext-Request-ID"]}


def test_a_celery_task_failure_keeps_task_and_class_but_no_message_or_arguments() -> None:
    try:
        raise IntegrityError(f"duplicate key value violates unique constraint: {SECRET}")
    except IntegrityError:
        exc_info = sys.exc_info()
    record = logging.LogRecord(
        "celery.app.trace",
        logging.ERROR,
        __file__,
        1,
        "Task %(name)s[%(id)s] %(description)s: %(exc)s",
        None,
        exc_info,
    )
    record.args = {
        "name": "powercontext.rebuild_search_index",
        "id": "0d6c",
        "description": "raised unexpected",
        "exc": repr(exc_info[1]),
        "args": "('git:github.com/acme/secret',)",
        "kwargs": "{}",
    }

    assert RequestRecordFilter().filter(record)
    line = logging.Formatter("%(message)s").format(record)

    assert "task failed name=powercontext.rebuild_search_index id=0d6c" in line
    assert "error_class=django.db.utils.IntegrityError" in line
    assert "Traceback (exception messages withheld)" in line
    assert "secret" not in line and "db.internal" not in line


def test_the_json_formatter_writes_one_object_per_line() -> None:
    record = logging.LogRecord("powercontext.x", logging.WARNING, __file__, 1, "hello %s", ("there",), None)
    RequestIdFilter().filter(record)

    entry = json.loads(JsonFormatter().format(record))

    assert entry["message"] == "hello there" and entry["level"] == "WARNING"
    assert entry["logger"] == "powercontext.x" and entry["request_id"] == "-"


def test_log_format_json_is_what_the_process_writes(tmp_path: Path) -> None:
    code = (
        "import django; django.setup(); import logging; "
        "logging.getLogger('powercontext.check').warning('json %s', 'works')"
    )
    result = run_python(code, child_env(tmp_path, LOG_FORMAT="json"))

    assert result.returncode == 0, result.stderr
    entry = json.loads(result.stderr.strip().splitlines()[-1])
    assert entry["message"] == "json works" and entry["logger"] == "powercontext.check"


def test_an_unknown_log_format_is_refused(tmp_path: Path) -> None:
    result = run_python("import django; django.setup()", child_env(tmp_path, LOG_FORMAT="xml"))
    assert result.returncode != 0 and "LOG_FORMAT must be plain or json" in result.stderr


@pytest.mark.django_db
def test_djangos_own_line_for_a_failed_answer_carries_the_request_id(
    settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from context_api import operator

    def broken() -> None:
        raise RuntimeError("a bug")

    settings.POWERCONTEXT_OPERATOR_TOKEN = "operator-token-for-tests-0123456789"
    monkeypatch.setattr(operator, "snapshot", broken)
    handler = _Stamped()
    django_request = logging.getLogger("django.request")
    django_request.addHandler(handler)
    try:
        response = Client().get(
            "/health/detail", HTTP_AUTHORIZATION="Bearer operator-token-for-tests-0123456789"
        )
    finally:
        django_request.removeHandler(handler)

    assert response.status_code == 500
    assert handler.ids == [response["X-PowerContext-Request-ID"]]  # Django's "Internal Server Error"


@pytest.mark.django_db
def test_a_line_after_the_request_is_done_carries_no_request_id() -> None:
    Client().get("/health/live")
    handler = _Stamped()
    logger = logging.getLogger("powercontext.test-after")
    logger.addHandler(handler)
    try:
        logger.warning("after the request")
    finally:
        logger.removeHandler(handler)

    assert handler.ids == ["-"]
