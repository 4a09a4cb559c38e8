"""The answer watchdog (powercontext/core/db_faults.py) with several request threads waiting at
once, as in gunicorn's threaded workers: each wait that outlives its limit has its own socket
shut down, and only that one. Sockets stand in for database connections."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from powercontext.core import db_faults
from tests.hardening.services import standalone_postgresql


@pytest.fixture
def pairs() -> Iterator[list[tuple[socket.socket, socket.socket]]]:
    made: list[tuple[socket.socket, socket.socket]] = []
    yield made
    for ours, server in made:
        ours.close()
        server.close()


def test_concurrent_waits_are_cut_each_on_its_own_socket(
    pairs: list[tuple[socket.socket, socket.socket]],
) -> None:
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


def test_a_wait_disarmed_in_time_leaves_its_socket_alone(
    pairs: list[tuple[socket.socket, socket.socket]],
) -> None:
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


def _cut_one_wait(pairs: list[tuple[socket.socket, socket.socket]]) -> None:
    """A wait on a socket that never answers, cut by the watchdog."""
    pairs.append(socket.socketpair())
    hung, _ = pairs[-1]
    with db_faults.bounded(hung.fileno, 0.05) as cut:
        assert hung.recv(64) == b""
    assert cut.fired


def test_a_cut_marks_its_request_and_the_enclosing_ones_only(
    pairs: list[tuple[socket.socket, socket.socket]],
) -> None:
    assert not db_faults.answer_already_missed()  # outside any request: never
    with db_faults.answer_limit(5.0):
        assert not db_faults.answer_already_missed()
        with db_faults.answer_limit(1.0):  # the readiness probe's own limit inside the request's
            _cut_one_wait(pairs)
            assert db_faults.answer_already_missed()
        assert db_faults.answer_already_missed()
    assert not db_faults.answer_already_missed()
    with db_faults.answer_limit(5.0):  # the next request starts afresh
        assert not db_faults.answer_already_missed()


def test_after_a_cut_the_request_does_not_connect_again(
    pairs: list[tuple[socket.socket, socket.socket]],
) -> None:
    from django.db import OperationalError

    # An address nothing answers on (TEST-NET-1): connecting would spend the whole connect timeout.
    wrapper = standalone_postgresql(
        "answer-watchdog-test", name="nowhere", user="", host="192.0.2.1", port="", connect_timeout=30
    )
    with db_faults.answer_limit(5.0):
        _cut_one_wait(pairs)
        with pytest.raises(OperationalError, match="did not answer earlier in this request"):
            wrapper.connect()
    assert wrapper.connection is None
