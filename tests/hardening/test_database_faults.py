"""PostgreSQL stopped under a running gunicorn (a throwaway cluster, real processes): every surface
answers 503 with Retry-After, one log line per refused request and no traceback; service resumes
by itself when the database is back."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.hardening.processes import child_env, run_manage
from tests.hardening.services import PostgresCluster, start_gunicorn, stop, wait_until

A_KEY = "a-database-fault-test-secret-key-" + "0123456789abcdef" * 3
REMEMBER = {"scope_id": "db-fault", "kind": "note", "text": "a note written around a database outage"}


@pytest.fixture
def stack(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    cluster = PostgresCluster()
    try:
        cluster.start()
        cluster.create_database("powercontext")
        env = child_env(
            tmp_path,
            DATABASE_URL=cluster.url("powercontext"),
            SECRET_KEY=A_KEY,
            POWERCONTEXT_EMBEDDINGS="false",
            POWERCONTEXT_DB_CONNECT_TIMEOUT="2",
            # Service mode requires tokens by default; this test is about the database, not auth.
            POWERCONTEXT_REQUIRE_TOKEN="false",
            **getattr(request, "param", {}),
        )
        for command in (("migrate", "--noinput", "-v0"), ("collectstatic", "--noinput", "-v0")):
            result = run_manage(*command, env=env)
            assert result.returncode == 0, result.stderr
        log_path = tmp_path / "gunicorn.log"
        with log_path.open("wb") as log:
            web, url = start_gunicorn(env, log, workers=2)
        try:
            yield {"cluster": cluster, "url": url, "log": log_path}
        finally:
            stop(web)
    finally:
        cluster.remove()


@pytest.mark.integration
def test_a_stopped_database_is_503_with_retry_after_everywhere_and_recovers(stack: dict[str, Any]) -> None:
    client = httpx.Client(base_url=stack["url"], timeout=60)
    assert client.post("/v1/memory/remember", json=REMEMBER).status_code == 200
    log: Path = stack["log"]
    before = log.read_text(errors="replace")

    stack["cluster"].stop()
    # A session cookie makes the Inbox and the admin read the database (the session, the user).
    browser = httpx.Client(base_url=stack["url"], timeout=60, cookies={"sessionid": "a" * 32})
    answers = [
        client.post("/v1/memory/remember", json=REMEMBER),
        browser.get("/review/"),
        browser.get("/admin/"),
        client.get("/health/ready"),
    ]

    for response in answers:
        assert response.status_code == 503, (response.request.url, response.status_code, response.text[:200])
        assert int(response.headers["Retry-After"]) > 0
    assert answers[0].json()["error"]["code"] == "runtime_not_ready"
    for page in answers[1:3]:
        assert page.headers["content-type"].startswith("text/html")
        assert "<h1>Temporarily unavailable</h1>" in page.text
    assert client.get("/health/live").status_code == 200  # the process itself is fine

    written = log.read_text(errors="replace")[len(before) :]
    assert "Traceback" not in written
    # One warning per refused request of the API, the Inbox and the admin; readiness says
    # why in its body.
    # (Background threads, which serve no request, may log their own failed step once.)
    request_lines = [line for line in written.splitlines() if " [-] " not in line]
    assert len(request_lines) == 3, written
    assert all("database unavailable error_class=OperationalError" in line for line in request_lines)

    stack["cluster"].start()
    wait_until(lambda: client.get("/health/ready").status_code == 200, 60, "readiness to recover")
    assert client.post("/v1/memory/remember", json=REMEMBER).status_code == 200


@pytest.mark.integration
@pytest.mark.parametrize("stack", [{"POWERCONTEXT_DB_CONN_MAX_AGE": "0"}], indirect=True)
def test_a_hung_database_fails_requests_within_the_connect_timeout(stack: dict[str, Any]) -> None:
    client = httpx.Client(base_url=stack["url"], timeout=60)
    assert client.post("/v1/memory/remember", json=REMEMBER).status_code == 200

    stack["cluster"].freeze()  # every PostgreSQL process stopped, sockets open: nothing answers
    try:
        timings = []
        for path in ("/v1/memory/remember", "/health/ready"):
            started = time.monotonic()
            response = client.post(path, json=REMEMBER) if path.startswith("/v1") else client.get(path)
            timings.append(time.monotonic() - started)
            assert response.status_code == 503, (path, response.text[:200])
            assert int(response.headers["Retry-After"]) > 0
    finally:
        stack["cluster"].thaw()

    print(f"hung database: remember, readiness answered 503 after {[round(t, 2) for t in timings]} s")
    # POWERCONTEXT_DB_CONNECT_TIMEOUT=2: a request fails after about that, never hangs.
    assert max(timings) < 2 + 1.5, timings
    wait_until(lambda: client.get("/health/ready").status_code == 200, 60, "readiness to recover")


@pytest.mark.integration
def test_a_hung_database_with_the_defaults_gives_fast_503s_and_loses_nothing(stack: dict[str, Any]) -> None:
    """The default settings (persistent connections, health checks): every PostgreSQL process
    stopped (SIGSTOP) while the workers hold open connections to it."""
    client = httpx.Client(base_url=stack["url"], timeout=60)
    acknowledged = []
    for i in range(4):  # both workers hold a connection to the server that is about to hang
        text = f"a note acknowledged before the hang {i}"
        assert client.post("/v1/memory/remember", json={**REMEMBER, "text": text}).status_code == 200
        acknowledged.append(text)
    search = {"scope_id": REMEMBER["scope_id"], "query": "note"}

    stack["cluster"].freeze()
    try:
        timings: dict[str, list[float]] = {"write": [], "read": [], "ready": [], "live": []}
        for _ in range(3):
            for kind, send in (
                ("write", lambda: client.post("/v1/memory/remember", json=REMEMBER)),
                ("read", lambda: client.post("/v1/memory/search", json=search)),
                ("ready", lambda: client.get("/health/ready")),
            ):
                started = time.monotonic()
                response = send()
                timings[kind].append(time.monotonic() - started)
                assert response.status_code == 503, (kind, response.text[:200])
                assert int(response.headers["Retry-After"]) > 0
            started = time.monotonic()
            assert client.get("/health/live").status_code == 200
            timings["live"].append(time.monotonic() - started)
    finally:
        stack["cluster"].thaw()

    print("hung database, seconds to answer:", {k: [round(t, 3) for t in v] for k, v in timings.items()})
    assert max(timings["write"] + timings["read"]) <= 3.0, timings
    assert max(timings["ready"]) <= 2.0 + 1.0, timings  # POWERCONTEXT_READY_TIMEOUT_MS=2000 and a margin
    assert max(timings["live"]) <= 0.05, timings
    log = stack["log"].read_text(errors="replace")
    assert "database did not answer within" in log and "Traceback" not in log

    wait_until(lambda: client.get("/health/ready").status_code == 200, 60, "readiness to recover")
    assert client.post("/v1/memory/remember", json={**REMEMBER, "text": "after the hang"}).status_code == 200
    listed = client.post("/v1/memory/entries/list", json={"scope_id": REMEMBER["scope_id"]})
    assert listed.status_code == 200, listed.text[:200]
    texts = {entry["text"] for entry in listed.json()["entries"]}
    assert {*acknowledged, "after the hang"} <= texts  # nothing acknowledged was lost
