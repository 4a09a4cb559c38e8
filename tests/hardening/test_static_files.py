"""Static files (the admin's CSS) are served by the app itself: WhiteNoise over the collected,
compressed, content-hashed files. Checked against a real gunicorn, as deployed."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
from collections.abc import Iterator

import httpx
import pytest

from tests.hardening.processes import ROOT, child_env, run_manage

A_KEY = "a-static-files-test-secret-key-" + "0123456789abcdef" * 3
HASHED_BASE_CSS = re.compile(r'href="(/static/admin/css/base\.[0-9a-f]{12}\.css)"')


@pytest.fixture(scope="module")
def gunicorn_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """gunicorn serving the embedded default from a fresh data directory, after collectstatic.

    The listening socket is bound here and handed to gunicorn (``fd://``), so the port is
    known and free, and the first request simply waits in the backlog until a worker accepts.
    """
    data_dir = tmp_path_factory.mktemp("gunicorn-data")
    env = child_env(data_dir, SECRET_KEY=A_KEY)
    for command in (("migrate", "--noinput", "-v0"), ("collectstatic", "--noinput", "-v0")):
        result = run_manage(*command, env=env)
        assert result.returncode == 0, result.stderr

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    port = listener.getsockname()[1]
    log_path = data_dir / "gunicorn.log"
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "powercontext.wsgi", "-w", "1"]
            + ["-b", f"fd://{listener.fileno()}", "--log-level", "warning"],
            cwd=ROOT,
            env=env,
            pass_fds=[listener.fileno()],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    listener.close()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert "Traceback" not in log_path.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def admin_css_url(gunicorn_url: str) -> str:
    login = httpx.get(f"{gunicorn_url}/admin/login/", timeout=60)
    assert login.status_code == 200, login.text
    match = HASHED_BASE_CSS.search(login.text)
    assert match, "the admin should link its CSS under a content-hashed name"
    return match.group(1)


def test_the_admin_css_is_served_with_a_hashed_name(gunicorn_url: str, admin_css_url: str) -> None:
    response = httpx.get(gunicorn_url + admin_css_url, timeout=60)

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/css")
    assert "max-age=315360000" in response.headers["cache-control"]  # hashed: cached forever
    assert b"body" in response.content


def test_the_admin_css_is_served_compressed(gunicorn_url: str, admin_css_url: str) -> None:
    response = httpx.get(gunicorn_url + admin_css_url, headers={"Accept-Encoding": "gzip"}, timeout=60)

    assert response.status_code == 200
    assert response.headers["content-encoding"] == "gzip"
    assert response.headers["content-type"].startswith("text/css")


def test_the_admin_css_is_served_under_its_plain_name_too(gunicorn_url: str) -> None:
    response = httpx.get(f"{gunicorn_url}/static/admin/css/base.css", timeout=60)

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/css")


def test_an_unknown_static_file_is_a_404(gunicorn_url: str) -> None:
    assert httpx.get(f"{gunicorn_url}/static/admin/css/nope.css", timeout=60).status_code == 404
