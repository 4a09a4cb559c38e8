"""The answer watchdog (powercontext/core/db_faults.py) with several request threads waiting at
once, as in gunicorn's threaded workers: each wait that outlives its limit has its own socket
shut down, and only that one. Sockets stand in for database connections."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from powercontext.core import db_faults


@pytest.fixture
def pairs() -> Iterator[list[tuple[socket.socket, socket.socket]]]:
    made: list[tuple[socket.socket, socket.socket]] = []
    yield made
    for ours, server in made:
        ours.close()
        server.close()


def test_concurrent_waits_are_cut_each_on_its_own_socket(pairs: list[tuple[socket.socket, socket.socket]]) -> None:
    hung_count, answered_count = 4, 4
    pairs.extend(socket.socketpair() for _ in range(hung_count + answered_count))
    hung, answered = pairs[:hung_count], pairs[hung_count:]
    waiting = threading.Barrier(hung_count + answered_count + 1)
    results: dict[int, tuple[bytes, bool]] = {}

    def wait(index: int, ours: socket.socket, limit: float) -> None:
        ours.settimeout(60)  # a safety net only: the watchdog ends the hung waits long before
        with db_faults.bounded(ours.fileno, limit) as cut:
            waiting.wait(timeout=30)
            received = ours.recv(64)
        results[index] = (received, cut.fired)

    # The hung waits have short, different limits; the answered ones a long limit.
    threads = [
        threading.Thread(target=wait, args=(i, ours, 0.2 + 0.05 * i)) for i, (ours, _) in enumerate(hung)
    ] + [
        threading.Thread(target=wait, args=(hung_count + i, ours, 60.0))
        for i, (ours, _) in enumerate(answered)
    ]
    for thread in threads:
        thread.start()
    waiting.wait(timeout=30)  # every thread is inside its bounded block
    for _, server in answered:
        server.sendall(b"answer")
    for thread in threads:
        thread.join(timeout=30)
        assert not thread.is_alive()

    for i in range(hung_count):
        assert results[i] == (b"", True)  # end of file: the watchdog shut this socket down
    for i in range(hung_count, hung_count + answered_count):
        assert results[i] == (b"answer", False)
    # The answered connections are untouched: they still carry data both ways.
    for ours, server in answered:
        ours.sendall(b"again")
        assert server.recv(64) == b"again"


def test_a_wait_disarmed_in_time_leaves_its_socket_alone(pairs: list[tuple[socket.socket, socket.socket]]) -> None:
    pairs.append(socket.socketpair())
    ours, server = pairs[0]
    server.sendall(b"quick")
    with db_faults.bounded(ours.fileno, 0.5) as cut:
        assert ours.recv(64) == b"quick"
    # A later, hung wait on another socket is cut at its own deadline; this one stays open.
    pairs.append(socket.socketpair())
    other, _ = pairs[1]
    with db_faults.bounded(other.fileno, 0.1) as later:
        assert other.recv(64) == b""
    assert not cut.fired and later.fired
    server.sendall(b"still open")
    assert ours.recv(64) == b"still open"
