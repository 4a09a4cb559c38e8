"""HTTP load helpers shared by the benchmarks that drive a live server (``bench_http``,
``bench_feedback``)."""

from __future__ import annotations

import threading
import time
from typing import Any

import httpx

from powercontext.evaluation.bench.common import SCOPE, run_clients


def timed_prepares(
    url: str, scope_id: str, queries: list[str], clients: int, seconds: float, max_bytes: int | None = None
) -> tuple[list[tuple[float, bool]], float]:
    """``clients`` concurrent clients (threads, one connection each) prepare back to back for
    ``seconds``: client ``n`` asks ``queries[n]``, ``queries[n + clients]``, ... of ``scope_id``.
    Each request's (milliseconds, answered 200) and the seconds the clients ran."""
    deadline = time.perf_counter() + seconds
    timings: list[list[tuple[float, bool]]] = [[] for _ in range(clients)]
    barrier = threading.Barrier(clients)

    def run(index: int) -> None:
        with httpx.Client(base_url=url, timeout=30) as client:
            barrier.wait()
            i = index
            while time.perf_counter() < deadline:
                body: dict[str, Any] = {"scope_id": scope_id, "query": queries[i % len(queries)]}
                if max_bytes is not None:
                    body["max_bytes"] = max_bytes
                start = time.perf_counter()
                response = client.post("/v1/context/prepare", json=body)
                timings[index].append(((time.perf_counter() - start) * 1000, response.status_code == 200))
                i += clients

    elapsed = run_clients(clients, run)
    return [timing for per_client in timings for timing in per_client], elapsed


def prepare_throughput(
    url: str, queries: list[str], clients: int, seconds: float, scope_id: str = SCOPE
) -> dict[str, Any]:
    """Prepares per second against ``url`` (``timed_prepares``); a status other than 200 counts
    as an error."""
    timings, elapsed = timed_prepares(url, scope_id, queries, clients, seconds)
    answered = sum(ok for _, ok in timings)
    return {
        "throughput_clients": clients,
        "throughput_requests": answered,
        "throughput_errors": len(timings) - answered,
        "throughput_rps": round(answered / elapsed, 1),
        "throughput_seconds": round(elapsed, 3),
    }


def mixed_throughput(
    url: str, queries: list[str], clients: int, seconds: float, scopes: dict[str, str]
) -> dict[str, Any]:
    """Prepares per second of each named scope under one shared load: ``clients`` clients (one
    connection each) for ``seconds``, every client asking the scopes in turn (client ``n``
    starting at scope ``n``, so the scopes are asked equally at every moment), the same query to
    each scope before moving on. The variants thus run on the same machine at the same time, and
    what the machine's other load does to one it does to the others. A scope's figure is what a
    closed loop of ``clients`` clients asking only it would reach (Little's law: clients / mean
    time of its requests); a status other than 200 counts as an error."""
    names = list(scopes)
    deadline = time.perf_counter() + seconds
    spent = [[0.0] * len(names) for _ in range(clients)]  # per client and scope: seconds
    counts = [[0] * len(names) for _ in range(clients)]
    errors = [0] * clients
    barrier = threading.Barrier(clients)

    def run(index: int) -> None:
        with httpx.Client(base_url=url, timeout=30) as client:
            barrier.wait()
            i, step = index, index
            while time.perf_counter() < deadline:
                which = step % len(names)
                body = {"scope_id": scopes[names[which]], "query": queries[i % len(queries)]}
                started = time.perf_counter()
                response = client.post("/v1/context/prepare", json=body)
                if response.status_code == 200:
                    spent[index][which] += time.perf_counter() - started
                    counts[index][which] += 1
                else:
                    errors[index] += 1
                step += 1
                if step % len(names) == index % len(names):  # every scope got this query
                    i += clients

    run_clients(clients, run)
    out: dict[str, Any] = {"clients": clients, "seconds": seconds, "errors": sum(errors)}
    for which, name in enumerate(names):
        requests = sum(row[which] for row in counts)
        total = sum(row[which] for row in spent)
        out[f"{name}_requests"] = requests
        out[f"{name}_rps"] = round(clients * requests / total, 1) if total else 0.0
    return out
