"""Django's request and security loggers never print paths, rejected Hosts or Origins: only a
fixed reason, the route name and the status (and, for a crash, its class and stack frames)."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest

from powercontext.core.log_privacy import RequestRecordFilter
from tests.hardening.processes import child_env, run_python

BAD_HOST = "attacker-host.example"
BAD_ORIGIN = "https://evil-origin.example"
CANDIDATE_ID = "918273645"
SECRET_DETAIL = "secret-exception-detail-5550123"

# One process, the project's own LOGGING configuration, every kind of rejected request. The
# test client runs the whole middleware stack; only the crash needs a patched middleware.
SCRIPT = f"""
import django
django.setup()
from django.middleware.csrf import CsrfViewMiddleware
from django.test import Client

client = Client(enforce_csrf_checks=True, raise_request_exception=False)
paths = ["/review/candidates/{CANDIDATE_ID}/", "/v1/memory/entries/get", "/accounts/login/"]
for path in paths:
    assert client.get(path, HTTP_HOST="{BAD_HOST}").status_code == 400
    assert client.get(path + "?next=/review/candidates/{CANDIDATE_ID}/", HTTP_HOST="{BAD_HOST}:8000").status_code == 400
origin = {{"HTTP_ORIGIN": "{BAD_ORIGIN}"}}
assert client.post("/review/candidates/{CANDIDATE_ID}/approve/", {{}}, **origin).status_code == 403
assert client.post("/accounts/login/?next=/review/candidates/{CANDIDATE_ID}/", {{}}, **origin).status_code == 403
assert client.post("/admin/login/?next=/admin/review/candidate/{CANDIDATE_ID}/change/", {{}}).status_code == 403
referer = {{"HTTP_REFERER": "{BAD_ORIGIN}/page"}}
assert client.post("/accounts/login/", {{}}, secure=True, **referer).status_code == 403


def crash(*args, **kwargs):
    raise RuntimeError("{SECRET_DETAIL} /review/candidates/{CANDIDATE_ID}/")


CsrfViewMiddleware.process_view = crash
client = Client(raise_request_exception=False)  # a new handler picks up the patched middleware
assert client.get("/review/candidates/{CANDIDATE_ID}/history/").status_code == 500
print("done")
"""


@pytest.fixture(scope="module")
def log_output(tmp_path_factory: pytest.TempPathFactory) -> str:
    data_dir = tmp_path_factory.mktemp("log-privacy")
    result = run_python(SCRIPT, child_env(data_dir, LOG_LEVEL="DEBUG"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "done"
    return result.stderr


def test_no_log_line_holds_a_host_an_origin_a_path_or_an_id(log_output: str) -> None:
    for leaked in (BAD_HOST, "attacker", BAD_ORIGIN, "evil-origin", CANDIDATE_ID, "/review/", "/accounts/"):
        assert leaked not in log_output, leaked
    assert SECRET_DETAIL not in log_output


def test_a_disallowed_host_is_logged_as_a_fixed_reason(log_output: str) -> None:
    lines = [line for line in log_output.splitlines() if "django.security.DisallowedHost" in line]

    assert len(lines) == 6
    assert all(
        line.endswith("suspicious request kind=DisallowedHost route=unresolved status=400") for line in lines
    )


def test_csrf_failures_are_logged_with_the_route_and_a_fixed_reason(log_output: str) -> None:
    lines = [line for line in log_output.splitlines() if "django.security.csrf" in line]

    assert [line.split(" django.security.csrf ")[1] for line in lines] == [
        "csrf failure route=review:approve status=403 "
        "reason=Origin checking failed - [withheld] does not match any trusted origins.",
        "csrf failure route=login status=403 "
        "reason=Origin checking failed - [withheld] does not match any trusted origins.",
        "csrf failure route=admin:login status=403 reason=CSRF cookie not set.",
        "csrf failure route=login status=403 "
        "reason=Referer checking failed - [withheld] does not match any trusted origins.",
    ]


def test_a_crash_is_logged_with_its_route_class_and_frames_but_no_message(log_output: str) -> None:
    start = log_output.index("ERROR django.request ")
    end = log_output.index(" INFO powercontext.access ", start)
    crash = log_output[start:end].rsplit("\n", 1)[0]  # up to the next record's timestamp

    assert crash.splitlines()[0].endswith(
        "Internal Server Error route=review:history status=500 error_class=builtins.RuntimeError"
    )
    assert "Traceback (exception messages withheld):" in crash
    assert ", in crash" in crash  # the frames: where it failed
    assert crash.rstrip().endswith("builtins.RuntimeError")


def record(name: str, msg: str, *args: object, **extra: object) -> logging.LogRecord:
    made = logging.LogRecord(name, logging.WARNING, __file__, 1, msg, args, None)
    made.__dict__.update(extra)
    return made


@pytest.mark.parametrize(
    ("reason", "kept"),
    [
        ("CSRF token missing.", "CSRF token missing."),
        ("CSRF token from POST incorrect.", "CSRF token from POST incorrect."),
        ("CSRF cookie has incorrect length.", "CSRF cookie has incorrect length."),
        (
            "CSRF token from the 'X-Csrftoken' HTTP header has invalid characters.",
            "CSRF token from the 'X-Csrftoken' HTTP header has invalid characters.",
        ),
        ("Referer checking failed - no Referer.", "Referer checking failed - no Referer."),
        ("Something new in a later Django: attacker.example", "[unrecognized reason withheld]"),
    ],
)
def test_csrf_reasons_are_kept_only_when_they_carry_no_request_value(reason: str, kept: str) -> None:
    made = record("django.security.csrf", "Forbidden (%s): %s", reason, "/review/1/", status_code=403)

    assert RequestRecordFilter().filter(made) is True
    assert made.getMessage() == f"csrf failure route=unresolved status=403 reason={kept}"


def test_a_permission_denied_is_logged_by_route() -> None:
    made = record("django.request", "Forbidden (Permission denied): %s", "/admin/x/1/", status_code=403)

    RequestRecordFilter().filter(made)

    assert made.getMessage() == "Forbidden route=unresolved status=403"


def test_a_crash_record_loses_its_message_but_keeps_its_class() -> None:
    detail, scope_id = "untrusted " + "text", "scope-" + "id"  # values, not source code
    try:
        raise ValueError(detail) from KeyError(scope_id)
    except ValueError:
        made = record("django.request", "%s: %s", "Internal Server Error", "/x/1/", status_code=500)
        made.exc_info = sys.exc_info()

    RequestRecordFilter().filter(made)
    rendered = logging.Formatter().format(made)

    assert made.exc_info is None
    assert "untrusted text" not in rendered and "scope-id" not in rendered
    assert (
        rendered.splitlines()[0]
        == "Internal Server Error route=unresolved status=500 error_class=builtins.ValueError"
    )
    assert rendered.rstrip().endswith("builtins.ValueError (caused by builtins.KeyError)")


def test_other_records_pass_untouched(tmp_path: Path) -> None:
    made = record("powercontext.access", "request method=%s route=%s", "GET", "get_liveness")

    RequestRecordFilter().filter(made)

    assert made.getMessage() == "request method=GET route=get_liveness"
