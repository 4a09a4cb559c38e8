"""A real gunicorn serving the pytest-django test database, and the official MCP SDK client.

The server runs in a subprocess for the whole session, against the test database on either
vendor; tests that use it are ``transaction=True`` so both processes see committed rows and the
tables are flushed after each test.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import anyio
import httpx
import httpx2
import pytest
from django.db import connection
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

ROOT = Path(__file__).resolve().parents[2]
T = TypeVar("T")


def database_url() -> str:
    s = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{s['NAME']}"
    return (
        f"postgres://{s['USER']}:{s['PASSWORD']}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"
    )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def gunicorn_url(django_db_setup: None, django_db_blocker: Any, tmp_path_factory: Any) -> Iterator[str]:
    with django_db_blocker.unblock():
        url = database_url()
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k not in {"CELERY_BROKER_URL", "CELERY_RESULT_BACKEND"}}
    env.update(
        {
            "DATABASE_URL": url,
            "LOG_LEVEL": "WARNING",
            "POWERCONTEXT_REQUIRE_TOKEN": "false",
            # As in-process tests (tests/conftest.py): the embedding model only where asked for.
            "POWERCONTEXT_EMBEDDINGS": "false",
        },
    )
    env.pop("POWERCONTEXT_ALLOWED_ORIGINS", None)
    log_path = tmp_path_factory.mktemp("gunicorn") / "gunicorn.log"
    log = log_path.open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "powercontext.wsgi", "-b", f"127.0.0.1:{port}", "-w", "2"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    try:
        while True:
            try:
                if httpx.get(f"{base}/health/ready", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"gunicorn did not become ready:\n{log_path.read_text()}")
            try:
                # Waiting on the process (not sleeping): returns early if the server died.
                process.wait(timeout=0.1)
                raise RuntimeError(f"gunicorn exited:\n{log_path.read_text()}")
            except subprocess.TimeoutExpired:
                pass
        yield base
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


def run_mcp(base: str, body: Callable[[ClientSession], Awaitable[T]], *, token: str | None = None) -> T:
    """Connect the official SDK client to ``base``/mcp, initialize, run ``body``, close."""

    async def main() -> T:
        headers = {"Authorization": f"Bearer {token}"} if token else None
        async with (
            httpx2.AsyncClient(headers=headers, timeout=60) as http,
            streamable_http_client(f"{base}/mcp", http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            return await body(session)

    return anyio.run(main)
