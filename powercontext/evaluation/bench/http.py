"""HTTP load helpers shared by the benchmarks that drive a live server (``bench_http``,
``bench_feedback``)."""

from __future__ import annotations

import threading
import time
from typing import Any

import httpx

from powercontext.evaluation.bench.common import SCOPE, run_clients


def prepare_throughput(
    url: str, queries: list[str], clients: int, seconds: float, scope_id: str = SCOPE
) -> dict[str, Any]:
    """Prepares per second against ``url`` with ``clients`` concurrent clients (threads, one
    connection each) for ``seconds``: client ``n`` asks ``queries[n]``, ``queries[n + clients]``,
    ... of ``scope_id``, back to back; a status other than 200 counts as an error."""
    deadline = time.perf_counter() + seconds
    counts = [0] * clients
    errors = [0] * clients
    barrier = threading.Barrier(clients)

    def run(index: int) -> None:
        with httpx.Client(base_url=url, timeout=30) as client:
            barrier.wait()
            i = index
            while time.perf_counter() < deadline:
                response = client.post(
                    "/v1/context/prepare", json={"scope_id": scope_id, "query": queries[i % len(queries)]}
                )
                if response.status_code == 200:
                    counts[index] += 1
                else:
                    errors[index] += 1
                i += clients

    elapsed = run_clients(clients, run)
    return {
        "throughput_clients": clients,
        "throughput_requests": sum(counts),
        "throughput_errors": sum(errors),
        "throughput_rps": round(sum(counts) / elapsed, 1),
        "throughput_seconds": round(elapsed, 3),
    }
