"""Probes that tell the truth, an operator detail view, and /metrics parsed by prometheus_client's
own text parser with no scope id, query, entry id or text in any label."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
import time_machine
from django.contrib.auth.models import User
from django.db import OperationalError, connection
from django.test import Client
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from context_api import operator
from powercontext import __version__
from powercontext.core import heartbeat
from powercontext.core.models import ServiceHeartbeat
from tests.conftest import Api
from tests.pipeline.helpers import capture

TOKEN = "operator-token-for-tests-0123456789"
SCOPE = "secret-scope-id-7f3a"
QUERY = "zebra xylophone quartet secretly"
TEXT = "a private memory text that must never be a label"


@pytest.fixture
def operator_token(settings: Any) -> str:
    settings.POWERCONTEXT_OPERATOR_TOKEN = TOKEN
    return TOKEN


def _detail(client: Client | None = None, token: str | None = TOKEN) -> Any:
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
    return (client or Client()).get("/health/detail", **headers)


# -- readiness ---------------------------------------------------------------------------------


@pytest.mark.django_db
def test_readiness_proves_a_write() -> None:
    response = Client().get("/health/ready")

    assert response.status_code == 200
    assert response.json()["checks"] == {"database": "ready", "migrations": "ready", "writes": "ready"}
    assert ServiceHeartbeat.objects.filter(name=heartbeat.READY_PROBE).exists()


@pytest.mark.django_db
def test_a_full_disk_makes_readiness_not_ready() -> None:
    def disk_full(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if sql.lstrip().upper().startswith(("INSERT", "UPDATE")):
            raise OperationalError("could not extend file: No space left on device")
        return execute(sql, params, many, context)

    with connection.execute_wrapper(disk_full):
        response = Client().get("/health/ready")

    assert response.status_code == 503
    assert int(response["Retry-After"]) > 0
    assert response.json() == {
        "status": "not_ready",
        "checks": {"database": "ready", "migrations": "ready", "writes": "failing"},
    }


def test_liveness_needs_no_database() -> None:
    assert Client().get("/health/live").json() == {"status": "ok"}


# -- the detail view ---------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_detail_view_needs_the_operator_token_or_staff(operator_token: str) -> None:
    assert _detail(token=None).status_code == 403
    assert _detail(token="wrong").status_code == 403
    assert _detail().status_code == 200
    staff = Client()
    staff.force_login(User.objects.create_user(username="ops", is_staff=True))
    assert _detail(staff, token=None).status_code == 200


@pytest.mark.django_db
def test_a_stopped_worker_shows_within_two_heartbeat_periods(operator_token: str, settings: Any) -> None:
    settings.POWERCONTEXT_WORKER_HEARTBEAT_SECONDS = 15
    settings.CELERY_TASK_ALWAYS_EAGER = False  # service mode, as the broker is configured
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"  # nobody listens: unreachable
    from powercontext.celery import app

    original = app.conf.broker_url
    app.conf.broker_url = settings.CELERY_BROKER_URL
    try:
        with time_machine.travel(timezone.now(), tick=False) as clock:
            heartbeat.beat("worker:celery@a")
            live = _detail().json()
            assert live["workers_alive"] == 1 and live["worker_last_seen_seconds"] == 0
            clock.shift(timedelta(seconds=2 * 15 + 1))  # one missed beat: still alive
            missed_one = _detail().json()
            clock.shift(timedelta(seconds=1))  # two periods (and the slack) without a beat
            stale = _detail().json()
    finally:
        app.conf.broker_url = original

    assert missed_one["workers_alive"] == 1 and "no_live_worker" not in missed_one["problems"]
    assert stale["workers_alive"] == 0 and stale["workers"] == {"celery@a": 32.0}
    assert stale["status"] == "degraded"
    assert set(stale["problems"]) == {"broker_unreachable", "no_live_worker"}


@pytest.mark.django_db
def test_the_detail_view_reports_backlog_and_a_rebuild_in_progress(api: Api, operator_token: str) -> None:
    api.remember(SCOPE, TEXT)  # no embedding model in this test: the entry waits for a vector

    with heartbeat.holding(heartbeat.REBUILD):
        during = _detail().json()
    after = _detail().json()

    assert during["embed_backlog"] == 1
    assert during["rebuild_in_progress"] is True and after["rebuild_in_progress"] is False
    assert during["broker"] == "not_configured"
    assert SCOPE not in str(during)


@pytest.fixture
def nothing_known() -> Any:
    """Each test starts without this process's last database reading."""
    operator.forget_last_known()
    yield
    operator.forget_last_known()


@pytest.mark.django_db
def test_the_detail_view_answers_with_the_last_known_values_while_the_database_is_down(
    api: Api, operator_token: str, nothing_known: None
) -> None:
    api.remember(SCOPE, TEXT)  # one entry waiting for a vector
    before = _detail().json()

    with connection.execute_wrapper(_down):
        response = _detail()

    assert before["database"] == "reachable" and before["database_values_age_seconds"] == 0
    assert response.status_code == 200
    during = response.json()
    assert during["database"] == "unreachable"
    assert during["status"] == "degraded" and during["problems"] == ["database_unreachable"]
    assert during["embed_backlog"] == 1 and during["database_values_age_seconds"] >= 0
    assert during["version"] == __version__


@pytest.mark.django_db
def test_the_detail_view_says_unreachable_when_it_never_read_the_database(
    operator_token: str, nothing_known: None
) -> None:
    with connection.execute_wrapper(_down):
        response = _detail()

    assert response.status_code == 200
    body = response.json()
    assert body["database"] == "unreachable" and body["database_values_age_seconds"] is None
    assert body["problems"] == ["database_unreachable"]


@pytest.mark.django_db
def test_the_detail_view_reports_the_release(operator_token: str) -> None:
    assert _detail().json()["version"] == __version__
    assert __version__.count(".") == 2 and all(part.isdigit() for part in __version__.split("."))


@pytest.mark.django_db
def test_a_database_blip_is_not_a_dead_worker(operator_token: str, settings: Any) -> None:
    settings.POWERCONTEXT_WORKER_HEARTBEAT_SECONDS = 15
    worker = heartbeat.WorkerHeartbeat("celery@blip")  # its steps, run here without the thread
    with time_machine.travel(timezone.now(), tick=False) as clock:
        worker.step()
        clock.shift(timedelta(seconds=15))
        with connection.execute_wrapper(_down), pytest.raises(OperationalError):
            worker.step()  # the period's beat falls into the blip
        retry_after = worker.interval
        clock.shift(timedelta(seconds=heartbeat.RETRY_SECONDS))
        worker.step()  # the prompt retry, the database back
        after = worker.interval
        clock.shift(timedelta(seconds=0.5))
        seen = heartbeat.seen(heartbeat.WORKER_PREFIX)["worker:celery@blip"]

        assert retry_after == heartbeat.RETRY_SECONDS and after == 15
        assert (timezone.now() - seen).total_seconds() == 0.5
        assert heartbeat.worker_alive(15 + 1, 15)  # the row at its oldest had the blip lasted a period


@pytest.mark.django_db
def test_the_waiting_session_count_is_not_capped(operator_token: str, settings: Any) -> None:
    settings.POWERCONTEXT_PIPELINE = {**settings.POWERCONTEXT_PIPELINE, "run_cap": 2}
    start = timezone.now()
    with time_machine.travel(start):
        for n in range(5):
            capture(SCOPE, f"source-{n}", f"remember: note {n}", session=f"session-{n}")
    with time_machine.travel(start + timedelta(hours=1)):
        body = _detail().json()
        metrics = _families(Client().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").content.decode())

    assert body["pipeline_eligible_sessions"] == 5
    assert body["pipeline_oldest_eligible_seconds"] == pytest.approx(3600, abs=1)
    eligible = [s for s in metrics["powercontext_pipeline_jobs"].samples if s.labels["state"] == "eligible"]
    assert [s.value for s in eligible] == [5]


# -- /metrics ----------------------------------------------------------------------------------


def _families(text: str) -> dict[str, Any]:
    return {family.name: family for family in text_string_to_metric_families(text)}


@pytest.mark.django_db
def test_metrics_are_refused_without_the_operator_token(settings: Any) -> None:
    settings.POWERCONTEXT_OPERATOR_TOKEN = ""
    assert Client().get("/metrics").status_code == 403
    settings.POWERCONTEXT_OPERATOR_TOKEN = TOKEN
    assert Client().get("/metrics", HTTP_AUTHORIZATION="Bearer nope").status_code == 403


@pytest.mark.django_db
def test_metrics_parse_and_carry_every_series_and_no_private_label(api: Api, operator_token: str) -> None:
    api.remember(SCOPE, TEXT)
    prepared = api.post("/v1/context/prepare", {"scope_id": SCOPE, "query": "private memory"})
    assert prepared.status_code == 200 and prepared.json()["status"] == "ready"
    assert api.post("/v1/context/prepare", {"scope_id": SCOPE, "query": QUERY}).status_code == 200
    with connection.execute_wrapper(_down):
        assert Client(raise_request_exception=False).get("/review/").status_code in (302, 503)
        assert Client().get("/health/ready").status_code == 503

    response = Client().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    text = response.content.decode()
    families = _families(text)
    for name in (
        "powercontext_http_requests",
        "powercontext_http_request_duration_seconds",
        "powercontext_http_unavailable",
        "powercontext_prepare",
        "powercontext_prepare_empty",
        "powercontext_prepare_items",
        "powercontext_prepare_content_bytes",
        "powercontext_embed_backlog",
        "powercontext_pipeline_jobs",
        "powercontext_pipeline_lag_seconds",
        "powercontext_queue_depth",
        "powercontext_worker_last_seen_seconds",
        "powercontext_workers_alive",
        "powercontext_rebuild_in_progress",
    ):
        assert name in families, name
    requests = {
        (s.labels["route"], s.labels["method"], s.labels["status"]): s.value
        for s in families["powercontext_http_requests"].samples
        if s.name.endswith("_total")
    }
    assert requests[("prepare_context", "POST", "200")] >= 2
    assert requests[("remember_memory", "POST", "200")] >= 1
    unavailable = {s.labels["cause"]: s.value for s in families["powercontext_http_unavailable"].samples}
    assert unavailable.get("not_ready", 0) >= 1
    histogram = [
        s for s in families["powercontext_http_request_duration_seconds"].samples if s.name.endswith("_count")
    ]
    assert any(s.labels["route"] == "prepare_context" and s.value >= 2 for s in histogram)
    items = {
        s.labels.get("le"): s.value
        for s in families["powercontext_prepare_items"].samples
        if "le" in s.labels
    }
    assert items["0.0"] >= 1 and items["1.0"] >= 2  # the QUERY prepare found nothing, the other one item
    assert families["powercontext_embed_backlog"].samples[0].value == 1
    assert {s.labels["state"] for s in families["powercontext_pipeline_jobs"].samples} >= {
        "running",
        "eligible",
    }

    # No label anywhere carries request data.
    for family in families.values():
        for sample in family.samples:
            for value in sample.labels.values():
                for private in (SCOPE, QUERY, TEXT, "private"):
                    assert private not in value, (sample.name, value)


def _down(*args: Any, **kwargs: Any) -> None:
    raise OperationalError("server closed the connection")


@pytest.mark.django_db
def test_metrics_answer_while_the_database_is_down(
    api: Api, operator_token: str, nothing_known: None
) -> None:
    api.remember(SCOPE, TEXT)
    assert Client().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 200

    with connection.execute_wrapper(_down):
        response = Client().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")

    assert response.status_code == 200
    families = _families(response.content.decode())
    assert families["powercontext_database_up"].samples[0].value == 0
    assert families["powercontext_embed_backlog"].samples[0].value == 1  # the last known value
    assert families["powercontext_state_age_seconds"].samples[0].value >= 0
    requests = [s for s in families["powercontext_http_requests"].samples if s.name.endswith("_total")]
    assert any(s.labels["route"] == "remember_memory" for s in requests)  # process-local figures


@pytest.mark.django_db
def test_metrics_without_any_reading_show_the_database_down_and_no_state(
    operator_token: str, nothing_known: None
) -> None:
    with connection.execute_wrapper(_down):
        response = Client().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")

    assert response.status_code == 200
    families = _families(response.content.decode())
    assert families["powercontext_database_up"].samples[0].value == 0
    assert "powercontext_embed_backlog" not in families
