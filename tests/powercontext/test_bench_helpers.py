"""The benchmark's interleaving, comparison and load helpers (a fake clock, no timing; the
load helper against a local stand-in server)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from powercontext.evaluation.bench.common import Texts, compare, interleaved, run_clients
from powercontext.evaluation.bench.http import mixed_throughput


class FakeClock:
    """Advances only when a call says how long it took."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_interleaved_rotates_which_variant_goes_first_and_passes_the_run_index() -> None:
    clock = FakeClock()
    order: list[tuple[str, int]] = []

    def call(name: str, cost: float) -> Callable[[int], None]:
        def run(i: int) -> None:
            order.append((name, i))
            clock.now += cost

        return run

    timings = interleaved({"a": call("a", 0.002), "b": call("b", 0.001), "c": call("c", 0.003)}, 4, clock)

    assert order == [
        ("a", 0), ("b", 0), ("c", 0),
        ("b", 1), ("c", 1), ("a", 1),
        ("c", 2), ("a", 2), ("b", 2),
        ("a", 3), ("b", 3), ("c", 3),
    ]  # fmt: skip
    assert [round(ms, 6) for ms in timings["a"]] == [2.0] * 4
    assert [round(ms, 6) for ms in timings["b"]] == [1.0] * 4
    assert [round(ms, 6) for ms in timings["c"]] == [3.0] * 4


def test_compare_reports_both_variants_and_the_p50_ratio() -> None:
    timings = {
        "hybrid": [13.0, 11.0, 12.0, 40.0, 12.5],
        "fts": [10.0, 9.0, 10.0, 11.0, 30.0],
    }

    result = compare(timings, "hybrid", "fts")

    assert result == {
        "hybrid_p50_ms": 12.5,
        "hybrid_p95_ms": 40.0,
        "fts_p50_ms": 10.0,
        "fts_p95_ms": 30.0,
        "hybrid_vs_fts_p50": 1.25,
        "samples": 5,
    }


def test_compare_has_no_ratio_when_the_denominator_takes_no_time() -> None:
    result = compare({"x": [1.0, 2.0], "y": [0.0, 0.0]}, "x", "y")

    assert result["x_vs_y_p50"] is None
    assert result["x_p50_ms"] == 1.5


def test_run_clients_runs_every_client_index_at_the_same_time() -> None:
    # The barrier opens only when all three runs wait at it together: run one after another,
    # the first would time out.
    together = threading.Barrier(3, timeout=30)
    seen: list[int] = []

    def run(index: int) -> None:
        together.wait()
        seen.append(index)

    elapsed = run_clients(3, run)
    assert sorted(seen) == [0, 1, 2]
    assert elapsed >= 0


def test_mixed_throughput_asks_every_scope_the_same_queries_in_turn() -> None:
    """A local stand-in server records what each client connection asked; every client asks the
    scopes in turn, each query of all of them before the next, and a failing scope counts as an
    error, never as a request."""
    asked: list[tuple[int, str, str]] = []  # (client port, scope, query)
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with lock:
                asked.append((self.client_address[1], body["scope_id"], body["query"]))
            status = 500 if body["scope_id"] == "broken" else 200
            self.send_response(status)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    serving = threading.Thread(target=server.serve_forever)
    serving.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        queries = [f"query {n}" for n in range(50)]
        scopes = {"a": "scope-a", "b": "scope-b", "c": "broken"}
        result = mixed_throughput(url, queries, clients=3, seconds=0.3, scopes=scopes)
    finally:
        server.shutdown()
        serving.join()
        server.server_close()

    per_client: dict[int, list[tuple[str, str]]] = {}
    for port, scope, query in asked:
        per_client.setdefault(port, []).append((scope, query))
    assert len(per_client) == 3
    starts = set()
    for calls in per_client.values():
        starts.add(calls[0][0])
        for first, second in zip(calls, calls[1:], strict=False):
            names = ["scope-a", "scope-b", "broken"]
            assert names.index(second[0]) == (names.index(first[0]) + 1) % 3  # in turn
        turns = [calls[n : n + 3] for n in range(0, len(calls) - len(calls) % 3, 3)]
        asked_per_turn = [{query for _, query in turn} for turn in turns]
        assert all(len(queries_of_turn) == 1 for queries_of_turn in asked_per_turn)  # one query a turn
        numbers = [int(next(iter(q)).split()[1]) for q in asked_per_turn]
        assert all(b == (a + 3) % 50 or b == a + 3 for a, b in zip(numbers, numbers[1:], strict=False))
    assert starts == {"scope-a", "scope-b", "broken"}  # client n starts at scope n
    assert result["c_requests"] == 0 and result["c_rps"] == 0.0
    assert result["errors"] == sum(1 for _, scope, _ in asked if scope == "broken")
    assert result["a_requests"] + result["b_requests"] + result["errors"] == len(asked)
    assert result["a_rps"] > 0 and result["b_rps"] > 0


def test_texts_are_taken_in_turn_and_numbered_when_they_start_again() -> None:
    texts = Texts(["Ann: hello", "Bob: hi"])
    assert [texts.note() for _ in range(5)] == [
        "Ann: hello",
        "Bob: hi",
        "Ann: hello (2)",
        "Bob: hi (2)",
        "Ann: hello (3)",
    ]
    with pytest.raises(ValueError):
        Texts([])
