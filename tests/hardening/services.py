"""Real service processes for fault tests: a private Redis, gunicorn and Celery, started by the test.

Every wait polls a condition against a deadline; nothing sleeps a fixed time.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import httpx

from tests.hardening.processes import ROOT

_tick = threading.Event()  # never set: wait(t) is a bounded pause between polls
REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"


def wait_until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    """Poll ``condition`` until it holds; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        _tick.wait(0.05)  # a polling interval, not a timing assumption


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class RedisServer:
    """A throwaway redis-server on its own port, without persistence, that a test can stop and
    start again on the same port (a broker restart)."""

    def __init__(self, directory: Path, port: int | None = None) -> None:
        self.port = port or free_port()
        self.directory = directory
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        with (self.directory / f"redis-{self.port}.log").open("ab") as log:
            self.process = subprocess.Popen(
                [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--save", ""]
                + ["--appendonly", "no", "--dir", str(self.directory)],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        wait_until(self.answers, 30, "redis-server to accept connections")

    def answers(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as conn:
                conn.sendall(b"PING\r\n")
                return conn.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)
        self.process = None


def start_gunicorn(
    env: dict[str, str], log: IO[bytes], workers: int = 2
) -> tuple[subprocess.Popen[bytes], str]:
    """gunicorn on a socket bound here (``fd://``): the port is known before it starts, and the
    first request waits in the backlog until a worker accepts it."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    # As gunicorn does for a socket it binds itself: the connections accepted inherit it. Without
    # it a kept-alive connection (threaded workers) waits ~40 ms per answer for the delayed ACK.
    listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    port = listener.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "powercontext.wsgi", "-w", str(workers)]
        + ["-b", f"fd://{listener.fileno()}", "--log-level", "warning", "--timeout", "120"],
        cwd=ROOT,
        env=env,
        pass_fds=[listener.fileno()],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    listener.close()
    return process, f"http://127.0.0.1:{port}"


class Clients:
    """The HTTP clients of one test against a live server, every one closed when the test ends
    (``close``, from the fixture's teardown). gunicorn's threaded workers keep connections alive:
    a client left open would hold its socket until garbage collection, whose ResourceWarning
    then fails whichever test runs at that moment."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self._open: list[httpx.Client] = []

    def open(self, **options: Any) -> httpx.Client:
        client = httpx.Client(base_url=self.base_url, **{"timeout": 60, **options})
        self._open.append(client)
        return client

    def close(self) -> None:
        while self._open:
            self._open.pop().close()


def start_celery(args: list[str], env: dict[str, str], log: IO[bytes]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "powercontext", *args],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)


def p99(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[max(0, -(-len(ordered) * 99 // 100) - 1)]


PG_BIN = Path("/usr/lib/postgresql/15/bin")


class PostgresCluster:
    """A throwaway PostgreSQL cluster owned by the ``postgres`` OS user (CI runs as root, and
    PostgreSQL refuses to run as root), on its own port under /tmp; never the shared one."""

    def __init__(self) -> None:
        import tempfile

        self.directory = Path(tempfile.mkdtemp(prefix="powercontext-pg-"))
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        shutil.chown(self.directory, user="postgres")
        self._as_postgres(
            [str(PG_BIN / "initdb"), "-D", str(self.directory / "data"), "-A", "trust", "-U", "postgres"]
        )

    @staticmethod
    def _as_postgres(command: list[str]) -> None:
        subprocess.run(
            ["runuser", "-u", "postgres", "--", *command], check=True, capture_output=True, timeout=120
        )

    def url(self, database: str) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def start(self) -> None:
        with (self.directory / "postgres.log").open("ab") as log:
            self.process = subprocess.Popen(
                [
                    "runuser",
                    "-u",
                    "postgres",
                    "--",
                    str(PG_BIN / "postgres"),
                    "-D",
                    str(self.directory / "data"),
                ]
                + ["-p", str(self.port), "-k", str(self.directory), "-c", "listen_addresses=127.0.0.1"]
                + ["-c", "fsync=off"],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        wait_until(self.answers, 60, "the throwaway PostgreSQL to accept connections")

    def answers(self) -> bool:
        probe = [str(PG_BIN / "pg_isready"), "-h", "127.0.0.1", "-p", str(self.port), "-t", "1"]
        return subprocess.run(probe, capture_output=True, timeout=30).returncode == 0

    def create_database(self, name: str) -> None:
        psql = [str(PG_BIN / "psql"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres"]
        subprocess.run([*psql, "-c", f"CREATE DATABASE {name}"], check=True, capture_output=True, timeout=60)

    def _processes(self) -> list[int]:
        postmaster = int((self.directory / "data" / "postmaster.pid").read_text().split()[0])
        children = subprocess.run(
            ["ps", "-o", "pid=", "--ppid", str(postmaster)], capture_output=True, text=True, timeout=30
        ).stdout.split()
        return [postmaster, *(int(pid) for pid in children)]

    def _signal_all(self, sig: int) -> None:
        for pid in self._processes():
            with contextlib.suppress(ProcessLookupError):  # a backend that ended since it was listed
                os.kill(pid, sig)

    def freeze(self) -> None:
        """Stop every process of the cluster (SIGSTOP): a hung server whose sockets stay open."""
        self._signal_all(signal.SIGSTOP)

    def thaw(self) -> None:
        self._signal_all(signal.SIGCONT)
        if self.process is not None:
            # runuser stops itself when its child stops (job control, as su does): wake it too.
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.process.pid, signal.SIGCONT)

    def stop(self, sig: int = signal.SIGINT) -> None:
        """A fast shutdown (SIGINT to the postmaster itself: runuser does not forward it):
        clients are disconnected at once. ``SIGQUIT``: an immediate shutdown."""
        if self.process is not None and self.process.poll() is None:
            pid_file = self.directory / "data" / "postmaster.pid"
            os.kill(int(pid_file.read_text().split()[0]), sig)
            self.process.wait(timeout=60)
        self.process = None

    def remove(self) -> None:
        if self.process is not None and self.process.poll() is None:
            with contextlib.suppress(OSError, ValueError, subprocess.SubprocessError):
                self.thaw()  # a frozen cluster would ignore the shutdown signal
        try:
            self.stop(signal.SIGQUIT)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(OSError, ValueError):
                self._signal_all(signal.SIGKILL)
            assert self.process is not None
            self.process.kill()
            self.process.wait(timeout=30)
            self.process = None
        shutil.rmtree(self.directory, ignore_errors=True)


def standalone_postgresql(
    alias: str, *, name: str, user: str, host: str, port: str, connect_timeout: int
) -> Any:
    """A connection wrapper of our PostgreSQL backend outside ``DATABASES`` (its own alias, no
    persistent connection, no health checks): what a fault test drives directly."""
    from powercontext.core.postgresql.base import DatabaseWrapper

    settings = {
        "NAME": name,
        "USER": user,
        "PASSWORD": "",
        "HOST": host,
        "PORT": port,
        "OPTIONS": {"connect_timeout": connect_timeout},
        "CONN_MAX_AGE": 0,
        "CONN_HEALTH_CHECKS": False,
        "AUTOCOMMIT": True,
        "ATOMIC_REQUESTS": False,
        "TIME_ZONE": None,
        "TEST": {},
    }
    return DatabaseWrapper(settings, alias=alias)
